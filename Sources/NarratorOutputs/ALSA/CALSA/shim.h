#include <alsa/asoundlib.h>
#include <time.h>

// alsa-lib prints its own diagnostics to stderr; Narrator reports every failure itself, in
// one line. The handler is variadic, which Swift cannot define, hence this C helper.
static void narrator_alsa_quiet_handler(const char *file, int line, const char *function, int err,
                                        const char *fmt, ...) {
    (void)file; (void)line; (void)function; (void)err; (void)fmt;
}

static inline void narrator_alsa_silence_errors(void) {
    snd_lib_error_set_handler(narrator_alsa_quiet_handler);
}
