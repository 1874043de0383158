/* What an algorithm sees of a communicator: its node (shared segment), the bridge between
 * node leaders (reached through callbacks the adapter registers, so this layer needs no MPI),
 * and the settings every rank agreed on. */
#ifndef NC_COMM_H
#define NC_COMM_H

#include <stddef.h>

#include "../core/config.h"
#include "../core/node.h"
#include "../core/ops.h"
#include "../core/stats.h"

/* Where one rank's block lies in a buffer holding the blocks of all ranks. */
typedef struct nc_block {
    size_t offset, bytes;
} nc_block;

/* Inter-node steps among node leaders; each returns 0 or the host MPI's error code. */
typedef struct nc_bridge {
    void *ctx;
    int size, rank; /* size 1 when everything is on one node; rank -1 on non-leaders */
    int (*barrier)(void *ctx);
    int (*bcast)(void *ctx, void *buf, size_t bytes, int root);
    /* Each leader holds in buf the blocks of its own node's ranks (blocks[r] for every comm
     * rank r with node_of[r] == its bridge rank); afterwards every leader's buf holds every
     * block.  Node blocks need not be contiguous (any placement of ranks on nodes). */
    int (*allgather_blocks)(void *ctx, void *buf, const nc_block *blocks, const int *node_of, int nranks);
    /* buf = the leaders' bufs combined by r (count elements), in bridge rank order. */
    int (*allreduce)(void *ctx, void *buf, size_t count, const nc_reduction *r);
} nc_bridge;

typedef struct nc_comm {
    int size, rank;
    nc_node node;
    nc_bridge bridge;
    int *node_of;      /* comm rank -> node index (its leader's bridge rank) */
    int *node_rank_of; /* comm rank -> rank within its node */
    nc_config cfg;     /* comm rank 0's settings, adopted by every rank */
} nc_comm;

static inline int nc_comm_multinode(const nc_comm *c) { return c->bridge.size > 1; }
static inline int nc_comm_is_leader(const nc_comm *c) { return c->node.rank == 0; }

/* Collectives on contiguous bytes; each returns 0 or an error code from the bridge. */
int nc_barrier(nc_comm *c);
int nc_bcast(nc_comm *c, void *buf, size_t bytes, int root);

#endif
