#ifndef NARRATOR_LAZY_LIBRARY_H
#define NARRATOR_LAZY_LIBRARY_H

// A C library Narrator loads with dlopen when a command first needs it, not at process start
// (docs/benchmarks.md, Process start): librsvg (plot PNG), libespeak-ng (synth, align) and
// libpulse (`--output pulse`) bring some 70 shared libraries between them, which every command
// paid for before `main` ran.
//
// The library's headers come from /usr/include (a system-library target without pkgConfig, or,
// for librsvg, the loader's own rsvg_api.h): a pkg-config module would make SwiftPM link its
// libraries. Each function the Swift code calls is a stub with the header's own
// prototype (scripts/make-lazy-stubs.py writes them) that calls through a pointer. The module's
// open function (`narrator_pulse_open`...) loads the library and sets every pointer at once; the
// module calls it in its one error-mapping place before anything else and turns the message
// into its own error. A stub called before that stops the process (a programming error).

#include <stddef.h>

typedef struct narrator_lazy_library {
    /// The run-time name, with its SONAME version (what the library's runtime package ships).
    const char *soname;
    /// The Debian package that provides it, named in the error.
    const char *package;
    void *handle;
    const char *failure;
} narrator_lazy_library;

/// Opens the library and binds its symbols, once (thread-safe). Returns NULL when it is loaded,
/// else one line naming the library, its package and the reason; the same line on every call.
/// `bind` returns NULL, or the name of a symbol the library lacks.
const char *narrator_lazy_open(narrator_lazy_library *library, const char *(*bind)(void *handle));

/// Resolves `symbol` in `handle` (dlsym).
void *narrator_lazy_lookup(void *handle, const char *symbol);

/// Stops the process: `symbol`'s stub ran before its library was opened.
_Noreturn void narrator_lazy_unbound(const char *symbol);

// The stubs are hidden: the binary's own calls reach them, but a library loaded later that
// calls the same function (libespeak-ng's libpcaudio calls libpulse; librsvg calls cairo)
// binds to the real one, not to a stub whose library may not be open.
#define NARRATOR_LAZY(ret, name, params, args)                                                \
    static ret(*narrator_bound_##name) params;                                               \
    __attribute__((visibility("hidden"))) ret name params {                                                                        \
        if (!narrator_bound_##name) narrator_lazy_unbound(#name);                            \
        return narrator_bound_##name args;                                                   \
    }

#define NARRATOR_LAZY_VOID(name, params, args)                                                \
    static void(*narrator_bound_##name) params;                                              \
    __attribute__((visibility("hidden"))) void name params {                                                                       \
        if (!narrator_bound_##name) narrator_lazy_unbound(#name);                            \
        narrator_bound_##name args;                                                          \
    }

#define NARRATOR_BIND(handle, name)                                                           \
    if (!(*(void **)&narrator_bound_##name = narrator_lazy_lookup(handle, #name))) return #name;

#endif
