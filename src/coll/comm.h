/* What an algorithm sees of a communicator: its node (shared segment), the bridge between
 * node leaders (reached through callbacks the adapter registers, so this layer needs no MPI),
 * and the settings every rank agreed on. */
#ifndef NC_COMM_H
#define NC_COMM_H

#include <stddef.h>

#include "../core/config.h"
#include "../core/node.h"
#include "../core/stats.h"

/* Inter-node steps among node leaders; each returns 0 or the host MPI's error code. */
typedef struct nc_bridge {
    void *ctx;
    int size, rank; /* size 1 when everything is on one node; rank -1 on non-leaders */
    int (*barrier)(void *ctx);
    int (*bcast)(void *ctx, void *buf, size_t bytes, int root);
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
