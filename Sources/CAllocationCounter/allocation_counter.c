#include "allocation_counter.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *pointer, size_t size);
extern void __libc_free(void *pointer);
extern void *__libc_memalign(size_t alignment, size_t size);

static _Thread_local bool counting = false;
static uint64_t count = 0;

static inline void note(void) {
    if (counting) {
        // NARRATOR_ALLOC_TRAP=1: stop at the first counted allocation, for a debugger's
        // backtrace (docs/testing.md).
        if (getenv("NARRATOR_ALLOC_TRAP")) __builtin_trap();
        __atomic_fetch_add(&count, 1, __ATOMIC_RELAXED);
    }
}

void narrator_count_allocations(bool enabled) { counting = enabled; }
uint64_t narrator_allocation_count(void) { return __atomic_load_n(&count, __ATOMIC_RELAXED); }
void narrator_reset_allocation_count(void) { __atomic_store_n(&count, 0, __ATOMIC_RELAXED); }

void *malloc(size_t size) { note(); return __libc_malloc(size); }
void *calloc(size_t n, size_t size) { note(); return __libc_calloc(n, size); }
void *realloc(void *pointer, size_t size) { note(); return __libc_realloc(pointer, size); }
void free(void *pointer) { __libc_free(pointer); }
void *memalign(size_t alignment, size_t size) { note(); return __libc_memalign(alignment, size); }
void *aligned_alloc(size_t alignment, size_t size) { note(); return __libc_memalign(alignment, size); }
int posix_memalign(void **out, size_t alignment, size_t size) {
    note();
    void *pointer = __libc_memalign(alignment, size);
    if (!pointer) return ENOMEM;
    *out = pointer;
    return 0;
}
