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
#include "../core/tune.h"
#include "data.h"

/* One message of a bridge exchange: `bytes` at `buf` to or from bridge rank `peer`. */
typedef struct nc_xfer {
    int peer;
    void *buf;
    size_t bytes;
} nc_xfer;

/* Where one rank's block lies in a buffer holding the blocks of all ranks. */
typedef struct nc_block {
    size_t offset, bytes;
} nc_block;

/* Host requests of a bridge step in flight; what they hold is the adapter's business. */
typedef struct nc_bridge_req {
    void *impl;
} nc_bridge_req;

/* Inter-node steps among node leaders (and on the whole communicator), through the host
 * MPI.  Each takes a request last: NULL runs the host's blocking call and returns 0 or its
 * error code; a request starts the host's nonblocking call(s), which `test` completes
 * (1: complete, with the step's error code in *err; 0: not yet).  A started step must be
 * tested to completion. */
typedef struct nc_bridge {
    void *ctx;
    int size, rank; /* size 1 when everything is on one node; rank -1 on non-leaders */
    int (*test)(void *ctx, nc_bridge_req *r, int *err);
    int (*barrier)(void *ctx, nc_bridge_req *r);
    int (*bcast)(void *ctx, void *buf, size_t bytes, int root, nc_bridge_req *r);
    /* Among the leaders with the call's op and datatype as the adapter describes them
     * (red->host); Allreduce in place, Reduce's recv used at the bridge root only. */
    int (*allreduce)(void *ctx, void *buf, size_t count, const nc_reduction *red, nc_bridge_req *r);
    int (*reduce)(void *ctx, const void *send, void *recv, size_t count, const nc_reduction *red, int root,
                  nc_bridge_req *r);
    int (*exscan)(void *ctx, const void *send, void *recv, size_t count, const nc_reduction *red, nc_bridge_req *r);
    /* Every leader's `bytes` in bridge rank order. */
    int (*allgather)(void *ctx, const void *send, void *recv, size_t bytes, nc_bridge_req *r);
    /* Each leader holds in buf the blocks of its own node's ranks (blocks[r] for every comm
     * rank r with node_of[r] == its bridge rank); afterwards every leader's buf holds every
     * block.  Node blocks need not be contiguous (any placement of ranks on nodes). */
    int (*allgather_blocks)(void *ctx, void *buf, const nc_block *blocks, const int *node_of, int nranks,
                            nc_bridge_req *r);
    /* Point-to-point among leaders: every receive and send posted (any size: the adapter
     * splits what MPI's int counts cannot carry). */
    int (*exchange)(void *ctx, const nc_xfer *sends, int nsends, const nc_xfer *recvs, int nrecvs,
                    nc_bridge_req *r);
    /* On the whole communicator (not only the leaders; peers are comm ranks): */
    void *comm_ctx;
    /* every rank's `bytes` in rank order; */
    int (*comm_allgather)(void *comm_ctx, const void *send, void *recv, size_t bytes, nc_bridge_req *r);
    /* point to point as `exchange`, with at most `window` sends in flight (0: all at once),
     * posted in the order given. */
    int (*comm_exchange)(void *comm_ctx, const nc_xfer *sends, int nsends, const nc_xfer *recvs, int nrecvs,
                         int window, nc_bridge_req *r);
} nc_bridge;

/* Long waits on the node's flags (coll/watch.h): the hook the node's wait policy points to,
 * and what it needs to report a wait or judge the awaited rank dead. */
typedef struct nc_watch {
    nc_wait_watch hook;       /* first member: nc_wait_watch callbacks find the nc_comm from it */
    uint64_t reported_call;   /* the last call a wait was reported in */
    unsigned char *watchable; /* per node rank: its liveness can be judged from this process */
    void (*abort_job)(void);  /* the adapter's: stops every rank of the job */
} nc_watch;

/* A communicator's virtual topology as the neighbourhood collectives see it, read once when
 * its state is set up (the adapter's neighbor_lists.c).  In-edge k brings block k of the receive
 * vector from comm rank in[k]; out-edge j takes block j of the send vector to out[j]; -1 is
 * MPI_PROC_NULL (a missing neighbour of a non-periodic Cartesian grid: nothing moves).  A
 * rank may appear several times, itself included.  Which out-edge of in[k] feeds in-edge k
 * is MPI's rule: on a Cartesian grid block s of the sender lands in block s^1 of the receiver
 * (the neighbour below sends upwards), in a graph the m-th edge from s to r feeds the m-th
 * edge of r from s (in list order). */
typedef struct nc_neighbors {
    int cartesian;
    int indegree, outdegree;
    int *in, *out;
    int *in_occurrence;  /* graphs: how often in[k] appears in in[0 .. k) */
    int *in_match;       /* the sender's out-edge feeding in-edge k: known for Cartesian grids
                          * and edges from myself, else -1 until first read from the sender's
                          * published edge table (NC_NO_EDGE: the sender has none) */
    int *out_previous;   /* the last out-edge before j to the same rank, or -1 */
    int max_degree;      /* over the whole communicator: its edge tables' room (coll/move.h) */
} nc_neighbors;
#define NC_NO_EDGE (-2)

struct nc_algorithm;
/* The registry's last choice at one level, and the call it was made for. */
typedef struct nc_choice {
    const struct nc_algorithm *alg;
    size_t bytes;
    int key; /* what else of the call the choice depends on (nc_registry_key) */
} nc_choice;

typedef struct nc_comm {
    int size, rank;
    nc_node node;
    nc_bridge bridge;
    int *node_of;      /* comm rank -> node index (its leader's bridge rank) */
    int *node_rank_of; /* comm rank -> rank within its node */
    int *node_members; /* comm ranks sorted by node, then by rank within the node */
    int *node_start;   /* node k's members are node_members[node_start[k] .. node_start[k+1]) */
    int single_copy_everywhere; /* CMA or shared heaps on every node of the communicator */
    nc_config cfg;     /* comm rank 0's settings, adopted by every rank */
    nc_neighbors *neighbors; /* its virtual topology, or NULL (none: the host judges neighbour calls) */
    nc_tune_rules *tune; /* comm rank 0's tuning rules for this node's size (NODECOLL_TUNE_FILE), or NULL */
    atomic_int truncated; /* this call brought this rank more bytes than its arguments hold */
    uint64_t calls;       /* calls entered on this communicator (coll/check.h) */
    nc_watch watch;       /* consulted by long waits on the node's flags (coll/watch.h) */
    /* The engine's (engine.c): operations started here and not completed, in call order. */
    struct nc_op *queue_head, *queue_tail;
    _Atomic int queue_lock, queued;
    _Atomic int listed;          /* on the engine's list of communicators with operations */
    nc_choice chosen[2][NC_COLL_COUNT]; /* the registry's last choice per level and collective */
    struct nc_comm *next_pending;
} nc_comm;

/* A collective's result when this rank was sent more than its arguments let it receive (the
 * excess was dropped): the host MPI's MPI_ERR_TRUNCATE.  Bridge errors are positive. */
#define NC_TRUNCATED (-2)

/* How much of `sent` bytes fit in `room`; notes the truncation when they do not. */
static inline size_t nc_fit(nc_comm *c, size_t sent, size_t room)
{
    if (sent <= room) return sent;
    atomic_store_explicit(&c->truncated, 1, memory_order_relaxed);
    return room;
}

/* A call's result: the bridge's error, else NC_TRUNCATED if nc_fit dropped bytes (cleared). */
static inline int nc_call_result(nc_comm *c, int err)
{
    /* a plain load on the common path: an atomic exchange per call would cost a locked op */
    if (!atomic_load_explicit(&c->truncated, memory_order_relaxed)) return err;
    atomic_store_explicit(&c->truncated, 0, memory_order_relaxed);
    return err ? err : NC_TRUNCATED;
}

/* One rank's view of a vector argument of a data-movement collective: block i (of rank i)
 * has lens[i] bytes at base + offs[i] (the adapter turns MPI's counts, displacements and
 * datatypes into bytes, with base at the lowest block so no offset is negative). */
typedef struct nc_vec {
    char *base;
    const size_t *lens, *offs;
    nc_data *blocks; /* NULL, or block i laid out as blocks[i] says (a derived receive type used
                      * in place; base and offs then unused): go through nc_move_read_block,
                      * nc_vec_unpack and nc_vec_pack */
} nc_vec;

static inline size_t nc_vec_len(const nc_vec *v, int i) { return v->lens[i]; }
static inline size_t nc_vec_off(const nc_vec *v, int i) { return v->offs[i]; }
static inline char *nc_vec_at(const nc_vec *v, int i) { return v->base + nc_vec_off(v, i); }

static inline int nc_comm_multinode(const nc_comm *c) { return c->bridge.size > 1; }
static inline int nc_comm_is_leader(const nc_comm *c) { return c->node.rank == 0; }

/* Collectives on packed bytes; each returns 0 or an error code from the bridge. */
int nc_barrier(nc_comm *c);
/* Bcast of `bytes` packed bytes, each rank's laid out as its nc_data says. */
int nc_bcast(nc_comm *c, nc_data *l, size_t bytes, int root);

/* MPI_IN_PLACE for the send buffer of Gather and Allgather: the rank's own block is already
 * where it belongs in the receive vector.  Never NULL: a rank with nothing to send may pass
 * a null buffer, and that must not read as "in place". */
extern const char nc_in_place_marker;
#define NC_IN_PLACE ((const void *)&nc_in_place_marker)

#endif
