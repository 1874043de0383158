/* The arena behind the shared heap: one memfd per process, mapped once at a fixed range of
 * its address space, from which every large block is carved (arena.c).
 *
 * One region per process, not one per block: a peer that maps the memfd whole sees every
 * block the owner will ever hand out at the same offsets, so a buffer freed and allocated
 * again is the same memory to both sides and no peer mapping can go stale. */
#ifndef NC_HEAP_ARENA_H
#define NC_HEAP_ARENA_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "nodecoll_heap.h"

/* Bytes of address space (and of the memfd) the arena spans, and how many freed bytes it
 * keeps backed for reuse before it returns pages to the system. */
void nc_arena_configure(size_t size, size_t retain);

/* Set once the arena is mapped (and never unset): whether p lies in it (inline: every free
 * asks). */
extern _Atomic(char *) nc_arena_base;
extern size_t nc_arena_span;
static inline int nc_arena_contains(const void *p)
{
    char *base = atomic_load_explicit(&nc_arena_base, memory_order_acquire);
    return base && (uintptr_t)p - (uintptr_t)base < nc_arena_span;
}

/* The arena, mapped on first use; 0 or an errno (nothing mapped: no heap). */
int nc_arena_get(nc_heap_arena *out);

/* A block of `bytes` aligned to `align` (a power of two; 64 at least is given), zeroed when
 * `zero`; NULL when the arena cannot hold it (or cannot be mapped). */
void *nc_arena_alloc(size_t bytes, size_t align, int zero);
/* p: a block of this arena. */
void nc_arena_free(void *p);
size_t nc_arena_usable(const void *p);
/* Shrinks p, or grows it where the arena is free behind it; 0 when it must move instead. */
int nc_arena_resize(void *p, size_t bytes);

#endif
