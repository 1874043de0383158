/* Reductions across nodes in rank order whatever the node layout: everybody's inputs,
 * NODECOLL_REDUCE_CHUNK bytes per rank at a time, gathered through the host MPI and folded by
 * every rank in rank order, the one order that does not depend on the node layout.  Runs
 * when the bridge's order is not rank order and the operation cares (not commutative, or a
 * Scan), and always in reproducible mode.  Reduce_scatter: an Allreduce into the node's
 * vector scratch, of which each rank keeps its block. */
#include <stdlib.h>

#include "reduce.h"

typedef struct ordered_state {
    int pc;
    char *all, *result;
    size_t chunk, e, cnt;
    nc_bridge_req req;
} ordered_state;
NC_STATE_FITS(ordered_state);

/* Node k holds comm ranks first_k .. first_k + size_k - 1 in node rank order, and the bridge
 * orders nodes like their ranks: folding node results in bridge order is rank order. */
static int nodes_hold_consecutive_ranks(const nc_comm *c)
{
    if (c->node_of[0] != 0 || c->node_rank_of[0] != 0) return 0;
    for (int q = 1; q < c->size; q++) {
        int same = c->node_of[q] == c->node_of[q - 1];
        if (same ? c->node_rank_of[q] != c->node_rank_of[q - 1] + 1
                 : c->node_rank_of[q] != 0 || c->node_of[q] != c->node_of[q - 1] + 1)
            return 0;
    }
    return 1;
}

static int is_scan(nc_coll_id coll) { return coll == NC_COLL_SCAN || coll == NC_COLL_EXSCAN; }
static int is_reduce_scatter(nc_coll_id coll)
{
    return coll == NC_COLL_REDUCE_SCATTER || coll == NC_COLL_REDUCE_SCATTER_BLOCK;
}

static int rank_order_needed(const nc_comm *c, const nc_args *a)
{
    if (!nc_comm_multinode(c)) return 0;
    if (c->cfg.reproducible) return 1;
    return (is_scan(a->coll) || !a->reduce.red->commutative) && !nodes_hold_consecutive_ranks(c);
}

/* Folds the gathered chunk (`len` bytes per rank in rank order) into my result at `off`. */
static void fold_chunk(const ordered_state *st, const nc_comm *c, const nc_args *a, size_t off, size_t len)
{
    const nc_reduction *r = a->reduce.red;
    if (is_scan(a->coll)) {
        int last = a->coll == NC_COLL_EXSCAN ? c->rank - 1 : c->rank;
        if (last < 0) return;
        for (int q = 1; q <= last; q++) nc_fold(r, st->all + (size_t)(q - 1) * len, st->all + (size_t)q * len, st->cnt);
        nc_copy_bytes((char *)a->reduce.recv + off, st->all + (size_t)last * len, len);
    } else if (st->result) {
        nc_copy_bytes(st->result + off, st->all + (size_t)(c->size - 1) * len, len);
        for (int q = c->size - 2; q >= 0; q--) nc_fold(r, st->all + (size_t)q * len, st->result + off, st->cnt);
    }
}

/* Where my result goes: recv, the vector scratch (Reduce_scatter), nowhere (Reduce, not the root). */
static char *result_buffer(nc_comm *c, const nc_args *a, size_t bytes)
{
    if (is_reduce_scatter(a->coll)) return nc_reduce_scratch(&c->node, NC_SCRATCH_VECTOR, bytes);
    return a->root < 0 || a->root == c->rank ? a->reduce.recv : NULL;
}

static nc_step progress(nc_op *op, void *state)
{
    ordered_state *st = state;
    nc_comm *c = op->c;
    const nc_args *a = op->args;
    size_t es = a->reduce.red->elem_size, count = a->reduce.count;
    NC_BEGIN(st);
    st->chunk = (size_t)c->cfg.reduce_chunk / es;
    if (!st->chunk) st->chunk = 1;
    st->all = nc_reduce_scratch(&c->node, NC_SCRATCH_CHUNKS, nc_min_size(st->chunk, count) * es * (size_t)c->size);
    st->result = result_buffer(c, a, count * es);
    for (st->e = 0; st->e < count && !op->err; st->e += st->chunk) {
        st->cnt = nc_min_size(st->chunk, count - st->e);
        NC_BRIDGE_STEP(op, st, &st->req,
                       c->bridge.comm_allgather(c->bridge.comm_ctx, (const char *)a->reduce.send + st->e * es, st->all, st->cnt * es,
                                                op->bridge_req));
        if (!op->err) fold_chunk(st, c, a, st->e * es, st->cnt * es);
    }
    if (is_reduce_scatter(a->coll)) {
        size_t *first = nc_block_starts(a->reduce.counts, c->size);
        nc_keep_block(a->reduce.recv, st->result, first, c->rank, es);
        free(first);
    }
    NC_END(st);
}

const nc_algorithm nc_reduce_ordered = {NC_ALG_ORDERED, rank_order_needed, NULL, progress, 0};
