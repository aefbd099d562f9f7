#define _GNU_SOURCE
#include "thread_placement.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>

int narrator_thread_place(const char *name, int cpu, int idle) {
    char shortName[16];
    strncpy(shortName, name, sizeof shortName - 1);
    shortName[sizeof shortName - 1] = 0;
    int named = pthread_setname_np(pthread_self(), shortName);
    if (named != 0) return named;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) return errno;
    if (!idle) return 0;
    struct sched_param parameters = {.sched_priority = 0};
    if (sched_setscheduler(0, SCHED_IDLE, &parameters) != 0) return errno;
    return 0;
}

int narrator_allowed_cpus(int *cpus, int capacity) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0) return -1;
    int count = 0;
    for (int cpu = 0; cpu < CPU_SETSIZE && count < capacity; cpu++) {
        if (CPU_ISSET(cpu, &set)) cpus[count++] = cpu;
    }
    return count;
}
