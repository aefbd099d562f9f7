#define _GNU_SOURCE
#include "thread_placement.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>

int narrator_thread_place(const char *name, int cpu, int idle) {
    if (idle) {
        struct sched_param parameters = {.sched_priority = 0};
        if (sched_setscheduler(0, SCHED_IDLE, &parameters) != 0) return errno;
    }
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) return errno;
    char shortName[16];
    strncpy(shortName, name, sizeof shortName - 1);
    shortName[sizeof shortName - 1] = 0;
    return pthread_setname_np(pthread_self(), shortName);
}

int narrator_allowed_cpus(int *cpus, int capacity) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0) return -errno;
    int count = 0;
    for (int cpu = 0; cpu < CPU_SETSIZE && count < capacity; cpu++) {
        if (CPU_ISSET(cpu, &set)) cpus[count++] = cpu;
    }
    return count;
}

int narrator_thread_id(void) { return (int)gettid(); }

void narrator_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
    __asm__ volatile("yield");
#endif
}
