// libsndfile decodes MP3 with libmpg123, which prints "Note:", "Warning:" and "error:" lines on
// stderr for files it reads with complaints (a LAME tag announcing more than a cut file holds,
// bytes of another kind between frames) unless its handle has the MPG123_QUIET flag, and
// libsndfile neither sets that flag nor gives a way to reach its handle (mpeg_decode.c:
// mpg123_new, then only MPG123_ADD_FLAGS/MPG123_REMOVE_FLAGS of other flags).
//
// So the executable, and only the executable (a library must not change how another library
// behaves for the whole process), defines mpg123_new itself: the dynamic linker binds
// libsndfile's call to the executable's definition first (the linker exports it because
// libsndfile, a library in the link, refers to it), which calls libmpg123's own (the next
// definition in load order, RTLD_NEXT) and adds MPG123_QUIET to the new handle. Narrator
// reports every failure itself, in one line; nothing of stderr is redirected, so other
// threads' lines still reach it. Without libmpg123 behind it (never in practice: libsndfile
// needs it to load), mpg123_new returns NULL with MPG123_ERR, as libmpg123 does on failure.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdatomic.h>

#include "quiet_mpg123.h"

// From mpg123.h (API version 46, libmpg123 1.31; stable since 1.0): the parameter that adds
// flags, the quiet flag, the generic error code.
enum { narrator_MPG123_ADD_FLAGS = 2, narrator_MPG123_QUIET = 0x20, narrator_MPG123_ERR = -1 };

typedef struct mpg123_handle_struct mpg123_handle;
typedef mpg123_handle *(*new_function)(const char *, int *);
typedef int (*param2_function)(mpg123_handle *, int, long, double);

static atomic_int state = 0;

mpg123_handle *mpg123_new(const char *decoder, int *error) {
    new_function real_new = (new_function)dlsym(RTLD_NEXT, "mpg123_new");
    if (real_new == NULL) {
        atomic_store(&state, -1);
        if (error != NULL) *error = narrator_MPG123_ERR;
        return NULL;
    }
    mpg123_handle *handle = real_new(decoder, error);
    if (handle == NULL) return NULL;
    // libmpg123 1.31 has mpg123_param2 (what libsndfile calls); older ones only mpg123_param,
    // of the same signature.
    param2_function param = (param2_function)dlsym(RTLD_NEXT, "mpg123_param2");
    if (param == NULL) param = (param2_function)dlsym(RTLD_NEXT, "mpg123_param");
    if (param != NULL && param(handle, narrator_MPG123_ADD_FLAGS, narrator_MPG123_QUIET, 0.0) == 0) {
        atomic_store(&state, 1);
    }
    return handle;
}

int narrator_quiet_mpg123_state(void) { return atomic_load(&state); }
