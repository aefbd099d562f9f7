#ifndef NARRATOR_ALLOCATION_COUNTER_H
#define NARRATOR_ALLOCATION_COUNTER_H

// Counts heap allocations made by threads that asked to be counted. Linked only into the test
// binary, where it replaces malloc and friends (forwarding to glibc's own implementation).

#include <stdbool.h>
#include <stdint.h>

/// Starts (true) or stops (false) counting the calling thread's allocations.
void narrator_count_allocations(bool enabled);
/// Allocations (malloc, calloc, realloc, memalign family) made by counted threads so far.
uint64_t narrator_allocation_count(void);
/// Sets the count back to zero.
void narrator_reset_allocation_count(void);

#endif
