#include <pulse/pulseaudio.h>
#include <pulse/thread-mainloop.h>
#include <sys/timerfd.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

// The mainloop API is a table of function pointers; these call through it from Swift.

static inline pa_io_event *narrator_pulse_io_new(pa_mainloop_api *api, int fd, pa_io_event_cb_t callback, void *userdata) {
    return api->io_new(api, fd, PA_IO_EVENT_INPUT, callback, userdata);
}

static inline void narrator_pulse_io_free(pa_mainloop_api *api, pa_io_event *event) {
    api->io_free(event);
}

// A periodic CLOCK_MONOTONIC timer as a file descriptor: the mainloop's own timers are polled
// with millisecond timeouts (rounded up), a timerfd wakes its poll to the microsecond.

static inline int narrator_pulse_timer_new(void) {
    return timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
}

/// Arms `fd` to fire every `interval_ns` from now (0: disarms it).
static inline int narrator_pulse_timer_arm(int fd, long interval_ns) {
    struct itimerspec spec = {
        .it_interval = {.tv_sec = interval_ns / 1000000000L, .tv_nsec = interval_ns % 1000000000L},
        .it_value = {.tv_sec = interval_ns / 1000000000L, .tv_nsec = interval_ns % 1000000000L},
    };
    return timerfd_settime(fd, 0, &spec, NULL);
}

/// Reads how many times the timer fired since the last read (0 when none).
static inline uint64_t narrator_pulse_timer_read(int fd) {
    uint64_t expirations = 0;
    if (read(fd, &expirations, sizeof expirations) != (ssize_t)sizeof expirations) return 0;
    return expirations;
}
