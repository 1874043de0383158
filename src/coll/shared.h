/* Node-shared collective results (Zhou et al., the hybrid "MPI+MPI" model): a result lives once
 * per node, in a region every rank of the node maps, and is read in place.
 *
 * Synchronisation is by per-rank sequence flags, not barriers.  For call k on a handle:
 *   state  2k   "I arrived at call k", which implies "I released result k-1";
 *          2k+1 "I released result k" (explicitly, or by calling get_buffer for k+1);
 *   ready  k    "result k is complete", posted by the rank that wrote it (Bcast) or by the
 *               node leader after the inter-node step;
 *   chain       Allreduce: how far this rank has folded its contribution into the result.
 * Nobody writes into the region for call k before every rank of the node has posted a
 * state >= 2k-1, so a result a rank still holds is never overwritten.  The flags live in the
 * communicator's control pages (a set per handle), the region holds nothing but the result. */
#ifndef NC_SHARED_H
#define NC_SHARED_H

#include <stdint.h>

#include "comm.h"

typedef struct nc_shared {
    nc_comm *comm;
    int slot;               /* the flag set in every rank's control page */
    char *data;             /* the node's copy of the result */
    size_t capacity;
    uint64_t seq;           /* calls made on the handle: alike on every rank */
    uint64_t state_posted;  /* the last value of my state flag */
    uint64_t prepared_for;  /* the call my contribution may already be written for */
    int holding;            /* I hold result `seq` */
    char *fold_tmp;         /* one chunk, for Allreduce with a non-commutative operation */
    size_t fold_tmp_bytes;
} nc_shared;

/* Takes a free flag set of the communicator; -1 when all NC_SHARED_SLOTS are taken (the same
 * on every rank: handles are created and freed collectively). */
int nc_shared_open(nc_shared *h, nc_comm *c, char *data, size_t capacity);
/* Releases what this rank holds and gives the flag set back. */
void nc_shared_close(nc_shared *h);

/* Releases my result and waits until every rank of the node has released it: afterwards my
 * contribution to the next call may be written into h->data. */
char *nc_shared_prepare(nc_shared *h);
/* -1 if this rank holds no result. */
int nc_shared_release(nc_shared *h);

/* Each returns 0 or the bridge's error code, and sets *mismatch when a rank of the node
 * passed different sizes (or a different root).  `src` NULL: the contribution is already in
 * place (nc_shared_prepare was called for this call). */
int nc_shared_bcast(nc_shared *h, const void *src, size_t bytes, int root, int *mismatch);
/* Allgather and Allgatherv (`coll` for the counters): blocks[r] is where comm rank r's block
 * lies; `signature` summarises the sizes and must be equal on every rank. */
int nc_shared_allgather(nc_shared *h, nc_coll_id coll, const void *src, const nc_block *blocks, uint64_t signature,
                        int *mismatch);
/* count elements of r->elem_size (the extent) bytes; the last element occupies only
 * elem_size - tail_gap bytes (the buffers may end there). */
int nc_shared_allreduce(nc_shared *h, const void *src, size_t count, size_t tail_gap, const nc_reduction *r,
                        int *mismatch);

#endif
