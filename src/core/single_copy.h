/* Single-copy transfers between the processes of a node: plain loads and stores through the
 * peer's shared heap when the buffer lies in it (core/heap.h), else cross-memory attach
 * (core/cma.h) when the node allows it.  Every single-copy transfer of the algorithms comes
 * through here (directly, or through the thread teams' nc_par_single_copy). */
#ifndef NC_SINGLE_COPY_H
#define NC_SINGLE_COPY_H

#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "heap.h"
#include "stats.h"

/* Another process of the node, as single copy reaches it. */
typedef struct nc_peer {
    pid_t pid;
    int cma;                  /* CMA works between the node's ranks (the setup probe) */
    const nc_heap_view *heap; /* its heap mapped here, or NULL */
} nc_peer;

/* The errno of a transfer that has no way to the buffer: not in the peer's heap, and CMA is
 * off (the algorithms only choose single copy when every buffer has a way). */
#define NC_NO_SINGLE_COPY ENXIO

/* Where [remote, remote + len) of the peer's memory is mapped here; NULL: not in its heap. */
static inline char *nc_peer_mapped(const nc_peer *p, const void *remote, size_t len)
{
    return nc_heap_view_at(p->heap, remote, len);
}

/* Counts one transfer of `len` bytes (counter single_copy, heap or cma). */
static inline void nc_peer_counted(int through_heap, size_t len)
{
    nc_stats_count(NC_COLL_SINGLE_COPY, through_heap ? NC_ALG_HEAP : NC_ALG_CMA, len);
}

/* Each returns 0 or an errno. */
int nc_peer_read(const nc_peer *p, const void *remote, void *local, size_t len);
int nc_peer_write(const nc_peer *p, void *remote, const void *local, size_t len);
/* Copies the len contiguous bytes at `remote` into the `nlocal` runs of `local` (which it
 * consumes: the entries are modified). */
int nc_peer_readv(const nc_peer *p, const void *remote, struct iovec *local, size_t nlocal, size_t len);

#endif
