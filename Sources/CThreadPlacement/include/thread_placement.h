#ifndef NARRATOR_THREAD_PLACEMENT_H
#define NARRATOR_THREAD_PLACEMENT_H

// Linux thread placement for AwakeCPUs and WakeUpProbe: calls that Swift's Glibc module does
// not expose (they need _GNU_SOURCE).

/// Gives the calling thread the SCHED_IDLE policy (below every normal thread) when `idle` is
/// non-zero, then moves it onto CPU `cpu` alone, then names it `name` (at most 15 bytes are
/// kept), so that a thread that bears the name is placed. Returns 0, or the errno of the first
/// call that failed (the later ones are then not made).
int narrator_thread_place(const char *name, int cpu, int idle);

/// Writes the CPUs the calling thread may run on into `cpus` (at most `capacity`) and returns
/// how many there are, or -errno.
int narrator_allowed_cpus(int *cpus, int capacity);

/// The calling thread's kernel id (gettid), as /proc/self/task lists it.
int narrator_thread_id(void);

/// The CPU's hint that this is a spin-wait loop (x86 `pause`, Arm `yield`): less power, and
/// less taken from a hyperthread sibling.
void narrator_cpu_relax(void);

#endif
