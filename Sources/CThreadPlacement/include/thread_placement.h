#ifndef NARRATOR_THREAD_PLACEMENT_H
#define NARRATOR_THREAD_PLACEMENT_H

/// Names the calling thread `name` (at most 15 bytes are kept), moves it onto CPU `cpu` alone
/// and, when `idle` is non-zero, gives it the SCHED_IDLE policy (below every normal thread):
/// Linux-specific calls that Swift's Glibc module does not expose. Returns 0, or the errno of
/// the call that failed.
int narrator_thread_place(const char *name, int cpu, int idle);

/// Writes the CPUs this process may run on into `cpus` (at most `capacity`) and returns how
/// many there are, or -1 with errno set.
int narrator_allowed_cpus(int *cpus, int capacity);

#endif
