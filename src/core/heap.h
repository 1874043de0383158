/* The shared heap as the main library sees it (docs/design.md, "The shared heap"): this
 * process's own heap, which libnodecoll-heap.so provides when it is present, and the heaps
 * of other processes this process has mapped ("views").
 *
 * Every process has at most one heap for its life: one memfd, mapped whole by each peer
 * that reads or writes its blocks, so a peer's view is the owner's memory itself and never
 * goes stale however the owner frees and reuses blocks.  A view is mapped once per process
 * and shared by every communicator whose node holds the owner; it goes when the last of
 * them is freed. */
#ifndef NC_HEAP_H
#define NC_HEAP_H

#include <stddef.h>
#include <stdint.h>

#include "../heap/nodecoll_heap.h"

/* This process's heap, when NODECOLL_HEAP is not off (`mode`, NC_HEAP_*) and the heap
 * library is here (preloaded, or loaded now for MPI_Alloc_mem): its arena is created on the
 * first call.  NULL: no heap (then nothing below holds). */
const nc_heap_arena *nc_heap_mine(int mode);

/* Whether malloc and its kin hand out this heap's blocks (libnodecoll-heap.so preloaded, on). */
int nc_heap_interposed(void);

/* Whether [p, p + len) lies in this process's heap (inline: asked per call where buffers are
 * published). */
extern const nc_heap_arena *nc_heap_own;
static inline int nc_heap_holds(const void *p, size_t len)
{
    const nc_heap_arena *a = nc_heap_own;
    uintptr_t off = (uintptr_t)p - (uintptr_t)(a ? a->base : NULL);
    return a && off < a->size && len <= a->size - off;
}

/* Blocks of this process's heap (MPI_Alloc_mem's, staging copies): NULL when there is no heap
 * or it cannot give one; release returns 0 when p is not a block of this process's heap. */
void *nc_heap_alloc(size_t bytes);
int nc_heap_release(void *p);

/* Another process's heap mapped here. */
typedef struct nc_heap_view {
    uint64_t id;
    const char *remote_base; /* where the owner has it */
    size_t size;
    char *local;             /* where it is mapped here */
    int refs;
} nc_heap_view;

/* Where [remote, remote + len) of the owner's memory is mapped here; NULL when it is not in
 * the view (or v is NULL). */
static inline char *nc_heap_view_at(const nc_heap_view *v, const void *remote, size_t len)
{
    if (!v) return NULL;
    uintptr_t off = (uintptr_t)remote - (uintptr_t)v->remote_base;
    return off < v->size && len <= v->size - off ? v->local + off : NULL;
}

/* The view of heap `id` with one more reference, or NULL when it is not mapped here. */
nc_heap_view *nc_heap_view_get(uint64_t id);
/* One reference fewer; the last unmaps it. */
void nc_heap_view_put(nc_heap_view *v);

/* ---- passing heaps between processes ---------------------------------------------------------
 * Each process that shares heaps has a datagram socket in the abstract namespace (nothing in
 * the file system, gone with the process), named by a random number.  An owner passes its
 * memfd to a peer in one datagram (SCM_RIGHTS: no ptrace permission needed); the peer maps
 * it and closes the descriptor.  Only datagrams from processes of the same user count. */

/* This process's socket name (opened on the first call); 0 when it cannot have one. */
uint64_t nc_heap_link(void);
/* Sends this process's heap to the socket `to`, without waiting: 0 or an errno. */
int nc_heap_offer(uint64_t to, const nc_heap_arena *mine);
/* Maps every heap waiting in this process's socket that is not mapped yet.  Threads setting
 * up communicators at once may each take the others' datagrams: a view then simply exists
 * when its taker is done (nc_heap_view_get finds it). */
void nc_heap_take_offers(void);

#endif
