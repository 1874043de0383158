/* What an algorithm sees of a communicator: its node (shared segment), the bridge between
 * node leaders (reached through callbacks the adapter registers, so this layer needs no MPI),
 * and the settings every rank agreed on. */
#ifndef NC_COMM_H
#define NC_COMM_H

#include <stddef.h>

#include "../core/config.h"
#include "../core/node.h"
#include "../core/stats.h"

/* One message of a bridge exchange: `bytes` at `buf` to or from bridge rank `peer`. */
typedef struct nc_xfer {
    int peer;
    void *buf;
    size_t bytes;
} nc_xfer;

/* Inter-node steps among node leaders; each returns 0 or the host MPI's error code. */
typedef struct nc_bridge {
    void *ctx;
    int size, rank; /* size 1 when everything is on one node; rank -1 on non-leaders */
    int (*barrier)(void *ctx);
    int (*bcast)(void *ctx, void *buf, size_t bytes, int root);
    /* Point-to-point among leaders: posts every receive and send, then waits for all
     * (any size: the adapter splits what MPI's int counts cannot carry). */
    int (*exchange)(void *ctx, const nc_xfer *sends, int nsends, const nc_xfer *recvs, int nrecvs);
} nc_bridge;


typedef struct nc_comm {
    int size, rank;
    nc_node node;
    nc_bridge bridge;
    int *node_of;      /* comm rank -> node index (its leader's bridge rank) */
    int *node_rank_of; /* comm rank -> rank within its node */
    int *node_members; /* comm ranks sorted by node, then by rank within the node */
    int *node_start;   /* node k's members are node_members[node_start[k] .. node_start[k+1]) */
    int cma_everywhere; /* single-copy works on every node of the communicator */
    nc_config cfg;     /* comm rank 0's settings, adopted by every rank */
} nc_comm;

/* One rank's view of a vector argument of a data-movement collective: block i (of rank i)
 * has nc_vec_len(v, i) bytes at base + nc_vec_off(v, i).  Either MPI's int form (counts
 * and displacements in elements, or uniform blocks back to back) or a byte form. */
typedef struct nc_vec {
    char *base;
    const int *counts, *displs; /* NULL counts: every block has `count` elements; NULL displs: back to back */
    int count;
    size_t elem, extent;        /* bytes per element; bytes per displacement unit */
    const size_t *lens, *offs;  /* byte form: overrides the int form when non-NULL */
} nc_vec;

static inline size_t nc_vec_len(const nc_vec *v, int i)
{
    if (v->lens) return v->lens[i];
    return (size_t)(v->counts ? v->counts[i] : v->count) * v->elem;
}

static inline size_t nc_vec_off(const nc_vec *v, int i)
{
    if (v->offs) return v->offs[i];
    return (v->displs ? (size_t)v->displs[i] : (size_t)i * (size_t)v->count) * v->extent;
}

static inline char *nc_vec_at(const nc_vec *v, int i) { return v->base + nc_vec_off(v, i); }

static inline int nc_comm_multinode(const nc_comm *c) { return c->bridge.size > 1; }
static inline int nc_comm_is_leader(const nc_comm *c) { return c->node.rank == 0; }

/* Collectives on contiguous bytes; each returns 0 or an error code from the bridge. */
int nc_barrier(nc_comm *c);
int nc_bcast(nc_comm *c, void *buf, size_t bytes, int root);

/* Data movement (gather.c, allgather.c, alltoall.c).  `coll` names the MPI call for the
 * counters.  A NULL send (or recv for scatter) means MPI_IN_PLACE: the rank's own block is
 * already where it belongs.  `recv` of gather and `send` of scatter matter at the root only. */
int nc_gatherv(nc_comm *c, nc_coll_id coll, const void *send, size_t send_bytes, const nc_vec *recv, int root);
int nc_scatterv(nc_comm *c, nc_coll_id coll, const nc_vec *send, void *recv, size_t recv_bytes, int root);
int nc_allgatherv(nc_comm *c, nc_coll_id coll, const void *send, size_t send_bytes, const nc_vec *recv);
int nc_alltoallv(nc_comm *c, nc_coll_id coll, const nc_vec *send, const nc_vec *recv);

#endif
