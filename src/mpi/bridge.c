/* The bridge transport: the inter-node steps of the algorithms (coll/comm.h, nc_bridge)
 * through the host MPI, on the bridge communicator (one leader per node) or on the
 * communicator's private duplicate (every rank).
 *
 * Each step is written once.  Called without a request it makes the host's blocking calls
 * (the fastest the host has: its blocking collectives beat its nonblocking ones several
 * times at small sizes); with one it makes the matching nonblocking calls and keeps their
 * requests in a host_step, which bridge_test completes.  MPI counts are ints: messages of
 * more than 1 GiB travel in pieces (both sides cut them alike, and MPI keeps the messages of
 * one pair and tag in order), reductions in pieces of at most INT_MAX elements. */
#include "bridge.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "state.h"
#include "../core/fatal.h"

#define NC_PIECE ((size_t)1 << 30)
/* Tag of point-to-point steps: their communicators are private, so any fixed tag is ours. */
#define NC_BRIDGE_TAG 0x6e63

/* The requests of a nonblocking step (nc_bridge_req.impl). */
typedef struct host_step {
    MPI_Comm comm;
    MPI_Request *req;
    int n, cap;
    MPI_Datatype *types; /* committed for the step, freed when it completes */
    int ntypes;
    int *counts, *displs; /* a nonblocking Allgatherv's arrays, kept until it completes */
    /* comm_exchange with a window: sends still to post, and the oldest not known done */
    nc_xfer *sends;
    int nsends, next_send, first_send_req, oldest, window;
    int err;
} host_step;

static host_step *step_of(nc_bridge_req *r, MPI_Comm comm)
{
    if (!r) return NULL;
    host_step *h = nc_calloc_or_die(1, sizeof *h);
    h->comm = comm;
    r->impl = h;
    return h;
}

/* A request slot of step h (grown as needed). */
static MPI_Request *slot(host_step *h)
{
    if (h->n == h->cap) {
        h->cap = h->cap ? 2 * h->cap : 8;
        MPI_Request *grown = realloc(h->req, sizeof *h->req * (size_t)h->cap);
        if (!grown) nc_fatal("out of memory for %d host requests", h->cap);
        h->req = grown;
    }
    return &h->req[h->n++];
}

/* How a step's start returns: blocking, its error; nonblocking, success (the error is kept
 * for bridge_test, so the caller always completes the step). */
static int started(host_step *h, int err)
{
    if (!h) return err;
    if (h->err == MPI_SUCCESS) h->err = err;
    return MPI_SUCCESS;
}

static void step_free(host_step *h)
{
    for (int i = 0; i < h->ntypes; i++) PMPI_Type_free(&h->types[i]);
    free(h->types);
    free(h->counts);
    free(h->displs);
    free(h->sends);
    free(h->req);
    free(h);
}

/* ---- point to point -------------------------------------------------------------------- */

static int post_pieces(const nc_xfer *x, int send, MPI_Comm comm, MPI_Request *(*next)(void *), void *ctx)
{
    for (size_t off = 0; off < x->bytes; off += NC_PIECE) {
        int len = (int)(x->bytes - off < NC_PIECE ? x->bytes - off : NC_PIECE);
        char *at = (char *)x->buf + off;
        int err = send ? PMPI_Isend(at, len, MPI_BYTE, x->peer, NC_BRIDGE_TAG, comm, next(ctx))
                       : PMPI_Irecv(at, len, MPI_BYTE, x->peer, NC_BRIDGE_TAG, comm, next(ctx));
        if (err != MPI_SUCCESS) return err;
    }
    return MPI_SUCCESS;
}

static MPI_Request *next_slot(void *h) { return slot(h); }

/* Posts sends from h->next_send while fewer than the window are in flight. */
static int post_window(host_step *h)
{
    int err = MPI_SUCCESS;
    while (err == MPI_SUCCESS && h->next_send < h->nsends) {
        if (h->window > 0) {
            while (h->oldest < h->n) { /* retire what is done, oldest first */
                int done = 0;
                err = PMPI_Test(&h->req[h->oldest], &done, MPI_STATUS_IGNORE);
                if (err != MPI_SUCCESS || !done) break;
                h->oldest++;
            }
            if (err != MPI_SUCCESS || h->n - h->oldest >= h->window) break;
        }
        err = post_pieces(&h->sends[h->next_send++], 1, h->comm, next_slot, h);
    }
    return err;
}

/* Every receive is posted before the first send, so any number of sends may wait in flight
 * without deadlock; `window` bounds how many do (0: no bound), in the order given.  The
 * blocking form retires the oldest send before it posts past the window. */
static int exchange_on(MPI_Comm comm, const nc_xfer *sends, int nsends, const nc_xfer *recvs, int nrecvs,
                       int window, nc_bridge_req *r)
{
    host_step local = {.comm = comm}, *h = r ? step_of(r, comm) : &local;
    int err = MPI_SUCCESS;
    for (int i = 0; i < nrecvs && err == MPI_SUCCESS; i++) err = post_pieces(&recvs[i], 0, comm, next_slot, h);
    h->sends = nc_alloc_or_die(sizeof *sends * (size_t)(nsends ? nsends : 1));
    if (nsends) memcpy(h->sends, sends, sizeof *sends * (size_t)nsends); /* (sends may be NULL then) */
    h->nsends = nsends;
    h->window = window;
    h->first_send_req = h->oldest = h->n;
    if (err == MPI_SUCCESS) err = post_window(h);
    if (r) return started(h, err);
    while (err == MPI_SUCCESS && h->next_send < h->nsends) { /* blocking: wait for room */
        err = PMPI_Wait(&h->req[h->oldest++], MPI_STATUS_IGNORE);
        if (err == MPI_SUCCESS) err = post_window(h);
    }
    /* Wait for every request that was posted, even after an error, so none outlives its buffer. */
    for (int i = 0; i < h->n; i++) {
        int e = PMPI_Wait(&h->req[i], MPI_STATUS_IGNORE);
        if (e != MPI_SUCCESS && err == MPI_SUCCESS) err = e;
    }
    free(h->sends);
    free(h->req);
    return err;
}

static int bridge_exchange(void *ctx, const nc_xfer *sends, int nsends, const nc_xfer *recvs, int nrecvs,
                           nc_bridge_req *r)
{
    return exchange_on(*(MPI_Comm *)ctx, sends, nsends, recvs, nrecvs, 0, r);
}

static int comm_exchange(void *comm_ctx, const nc_xfer *sends, int nsends, const nc_xfer *recvs, int nrecvs,
                         int window, nc_bridge_req *r)
{
    return exchange_on(*(MPI_Comm *)comm_ctx, sends, nsends, recvs, nrecvs, window, r);
}

/* ---- collectives among the leaders ------------------------------------------------------ */

static int bridge_barrier(void *ctx, nc_bridge_req *r)
{
    MPI_Comm comm = *(MPI_Comm *)ctx;
    host_step *h = step_of(r, comm);
    return started(h, h ? PMPI_Ibarrier(comm, slot(h)) : PMPI_Barrier(comm));
}

static int bridge_bcast(void *ctx, void *buf, size_t bytes, int root, nc_bridge_req *r)
{
    MPI_Comm comm = *(MPI_Comm *)ctx;
    host_step *h = step_of(r, comm);
    for (size_t off = 0; off < bytes; off += NC_PIECE) {
        int len = (int)(bytes - off < NC_PIECE ? bytes - off : NC_PIECE);
        char *at = (char *)buf + off;
        int err = h ? PMPI_Ibcast(at, len, MPI_BYTE, root, comm, slot(h)) : PMPI_Bcast(at, len, MPI_BYTE, root, comm);
        if (err != MPI_SUCCESS) return started(h, err);
    }
    return started(h, MPI_SUCCESS);
}

static int bridge_allgather(void *ctx, const void *send, void *recv, size_t bytes, nc_bridge_req *r)
{
    MPI_Comm comm = *(MPI_Comm *)ctx;
    host_step *h = step_of(r, comm);
    /* (`bytes` is small: a record per leader, or a reduction chunk) */
    return started(h, h ? PMPI_Iallgather(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, comm, slot(h))
                        : PMPI_Allgather(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, comm));
}

static int comm_allgather(void *comm_ctx, const void *send, void *recv, size_t bytes, nc_bridge_req *r)
{
    return bridge_allgather(comm_ctx, send, recv, bytes, r);
}

enum { REDUCE_ALL = -1, REDUCE_EXSCAN = -2 }; /* (or the root of a Reduce) */

/* Reductions through the host MPI in pieces of at most INT_MAX elements.  Allreduce works in
 * place; Reduce and Exscan get separate buffers (MPICH 4.0.2 dereferences MPI_IN_PLACE in
 * some of its Reduce algorithms). */
static int reduce_any(MPI_Comm comm, const void *send, void *recv, size_t count, const nc_reduction *red, int root,
                      nc_bridge_req *r)
{
    const nc_host_op *op = red->host;
    host_step *h = step_of(r, comm);
    for (size_t first = 0; first < count; first += INT_MAX) {
        int n = (int)(count - first < INT_MAX ? count - first : INT_MAX);
        size_t off = first * red->elem_size;
        char *out = recv ? (char *)recv + off : NULL;
        const char *in = send ? (const char *)send + off : NULL;
        int err;
        if (root == REDUCE_EXSCAN)
            err = h ? PMPI_Iexscan(in, out, n, op->type, op->op, comm, slot(h)) : PMPI_Exscan(in, out, n, op->type, op->op, comm);
        else if (root == REDUCE_ALL)
            err = h ? PMPI_Iallreduce(MPI_IN_PLACE, out, n, op->type, op->op, comm, slot(h))
                    : PMPI_Allreduce(MPI_IN_PLACE, out, n, op->type, op->op, comm);
        else
            err = h ? PMPI_Ireduce(in, out, n, op->type, op->op, root, comm, slot(h))
                    : PMPI_Reduce(in, out, n, op->type, op->op, root, comm);
        if (err != MPI_SUCCESS) return started(h, err);
    }
    return started(h, MPI_SUCCESS);
}

static int bridge_allreduce(void *ctx, void *buf, size_t count, const nc_reduction *red, nc_bridge_req *r)
{
    return reduce_any(*(MPI_Comm *)ctx, NULL, buf, count, red, REDUCE_ALL, r);
}

static int bridge_reduce(void *ctx, const void *send, void *recv, size_t count, const nc_reduction *red, int root,
                         nc_bridge_req *r)
{
    return reduce_any(*(MPI_Comm *)ctx, send, recv, count, red, root, r);
}

static int bridge_exscan(void *ctx, const void *send, void *recv, size_t count, const nc_reduction *red,
                         nc_bridge_req *r)
{
    return reduce_any(*(MPI_Comm *)ctx, send, recv, count, red, REDUCE_EXSCAN, r);
}

/* A node's blocks as one datatype over the buffer (pieces under 1 GiB: MPI counts are ints). */
static MPI_Datatype node_blocks_type(const nc_block *blocks, const int *node_of, int nranks, int node)
{
    int n = 0;
    for (int q = 0; q < nranks; q++)
        if (node_of[q] == node) n += (int)((blocks[q].bytes + NC_PIECE - 1) / NC_PIECE);
    int *lengths = nc_alloc_or_die(sizeof(int) * (size_t)(n ? n : 1));
    MPI_Aint *displs = nc_alloc_or_die(sizeof(MPI_Aint) * (size_t)(n ? n : 1));
    int i = 0;
    for (int q = 0; q < nranks; q++)
        for (size_t off = 0; node_of[q] == node && off < blocks[q].bytes; off += NC_PIECE, i++) {
            lengths[i] = (int)(blocks[q].bytes - off < NC_PIECE ? blocks[q].bytes - off : NC_PIECE);
            displs[i] = (MPI_Aint)(blocks[q].offset + off);
        }
    MPI_Datatype type;
    PMPI_Type_create_hindexed(n, lengths, displs, MPI_BYTE, &type);
    PMPI_Type_commit(&type);
    free(lengths);
    free(displs);
    return type;
}

/* Where each node's blocks form one run in rank order (blocked placement), the leaders run
 * the host's Allgatherv in place; otherwise each sends its node's blocks to every other
 * leader as one indexed datatype (any placement, any layout). */
static int bridge_allgather_blocks(void *ctx, void *buf, const nc_block *blocks, const int *node_of, int nranks,
                                   nc_bridge_req *r)
{
    MPI_Comm bridge = *(MPI_Comm *)ctx;
    int nodes, me, err = MPI_SUCCESS;
    PMPI_Comm_size(bridge, &nodes);
    PMPI_Comm_rank(bridge, &me);
    size_t *start = nc_calloc_or_die((size_t)nodes, sizeof *start), *end = nc_calloc_or_die((size_t)nodes, sizeof *end);
    int *counts = nc_alloc_or_die(sizeof(int) * (size_t)nodes), *displs = nc_alloc_or_die(sizeof(int) * (size_t)nodes);
    unsigned char *seen = nc_calloc_or_die((size_t)nodes, 1);
    int runs = 1;
    for (int q = 0; q < nranks; q++) {
        int j = node_of[q];
        if (!seen[j]) start[j] = end[j] = blocks[q].offset;
        runs &= blocks[q].offset == end[j];
        end[j] = blocks[q].offset + blocks[q].bytes;
        seen[j] = 1;
    }
    for (int j = 0; j < nodes; j++) {
        runs &= end[j] <= INT_MAX;
        counts[j] = (int)(end[j] - start[j]);
        displs[j] = (int)start[j];
    }
    host_step local = {.comm = bridge}, *h = r ? step_of(r, bridge) : &local;
    if (runs && r) { /* (its arrays must outlive the call) */
        err = PMPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_BYTE, buf, counts, displs, MPI_BYTE, bridge, slot(h));
        h->counts = counts;
        h->displs = displs;
        counts = displs = NULL;
    } else if (runs) {
        err = PMPI_Allgatherv(MPI_IN_PLACE, 0, MPI_BYTE, buf, counts, displs, MPI_BYTE, bridge);
    } else {
        h->types = nc_alloc_or_die(sizeof(MPI_Datatype) * (size_t)nodes);
        h->ntypes = nodes;
        for (int j = 0; j < nodes; j++) h->types[j] = node_blocks_type(blocks, node_of, nranks, j);
        for (int j = 0; j < nodes && err == MPI_SUCCESS; j++)
            if (j != me) err = PMPI_Irecv(buf, 1, h->types[j], j, 0, bridge, slot(h));
        for (int j = 0; j < nodes && err == MPI_SUCCESS; j++)
            if (j != me) err = PMPI_Isend(buf, 1, h->types[me], j, 0, bridge, slot(h));
        if (!r) {
            for (int i = 0; i < h->n; i++) { /* (MPICH's MPI_STATUSES_IGNORE upsets GCC's bounds checks) */
                int e = PMPI_Wait(&h->req[i], MPI_STATUS_IGNORE);
                if (e != MPI_SUCCESS && err == MPI_SUCCESS) err = e;
            }
            for (int j = 0; j < nodes; j++) PMPI_Type_free(&h->types[j]);
            free(h->types);
            free(h->req);
        }
    }
    free(seen);
    free(start);
    free(end);
    free(counts);
    free(displs);
    return r ? started(h, err) : err;
}

/* ---- completion ------------------------------------------------------------------------- */

static int bridge_test(void *ctx, nc_bridge_req *r, int *err)
{
    host_step *h = r->impl;
    int done = 0, e = h->err;
    if (e == MPI_SUCCESS) e = post_window(h);
    if (e == MPI_SUCCESS && h->next_send == h->nsends) {
        /* (statuses one by one: MPICH's MPI_STATUSES_IGNORE upsets GCC's bounds checks) */
        done = 1;
        for (int i = 0; i < h->n && done && e == MPI_SUCCESS; i++) {
            int one = 0;
            e = PMPI_Test(&h->req[i], &one, MPI_STATUS_IGNORE);
            done = one;
        }
    }
    if (e != MPI_SUCCESS) { /* every posted request still completes before its buffer goes */
        for (int i = 0; i < h->n; i++) PMPI_Wait(&h->req[i], MPI_STATUS_IGNORE);
        done = 1;
    }
    if (!done) return 0;
    *err = e;
    step_free(h);
    r->impl = NULL;
    return 1;
}

nc_bridge nc_mpi_bridge(MPI_Comm *bridge_comm, MPI_Comm *whole_comm, int size, int rank)
{
    return (nc_bridge){.ctx = bridge_comm, .size = size, .rank = rank, .test = bridge_test,
                       .barrier = bridge_barrier, .bcast = bridge_bcast, .allreduce = bridge_allreduce,
                       .reduce = bridge_reduce, .exscan = bridge_exscan, .allgather = bridge_allgather,
                       .allgather_blocks = bridge_allgather_blocks, .exchange = bridge_exchange,
                       .comm_ctx = whole_comm, .comm_allgather = comm_allgather, .comm_exchange = comm_exchange};
}
