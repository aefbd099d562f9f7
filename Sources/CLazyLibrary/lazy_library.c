#define _GNU_SOURCE  // asprintf
#include "lazy_library.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_mutex_t opening = PTHREAD_MUTEX_INITIALIZER;

const char *narrator_lazy_open(narrator_lazy_library *library, const char *(*bind)(void *handle)) {
    if (__atomic_load_n(&library->handle, __ATOMIC_ACQUIRE)) return NULL;
    pthread_mutex_lock(&opening);
    if (!library->handle && !library->failure) {
        char *line = NULL;
        void *handle = dlopen(library->soname, RTLD_LAZY | RTLD_LOCAL);
        if (!handle) {
            const char *reason = dlerror();
            if (asprintf(&line, "%s could not be loaded (Debian package %s): %s", library->soname,
                         library->package, reason ? reason : "dlopen failed") < 0)
                line = NULL;
        } else {
            const char *missing = bind(handle);
            if (!missing) {
                __atomic_store_n(&library->handle, handle, __ATOMIC_RELEASE);
            } else if (asprintf(&line, "%s has no %s (an incompatible version of %s?)", library->soname, missing,
                                library->package) < 0) {
                line = NULL;
            }
        }
        if (!library->handle) library->failure = line ? line : "a library could not be loaded";
    }
    const char *failure = library->failure;
    pthread_mutex_unlock(&opening);
    return failure;
}

void *narrator_lazy_lookup(void *handle, const char *symbol) { return dlsym(handle, symbol); }

void narrator_lazy_unbound(const char *symbol) {
    fprintf(stderr, "narrator: internal error: %s called before its library was loaded\n", symbol);
    abort();
}
