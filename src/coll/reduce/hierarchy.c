/* Reduce, Allreduce and Reduce_scatter(_block) as the node step and the bridge step meet (the
 * call's algorithm unless ordered.c must run).  On one node it is the node step alone: the
 * node algorithm the registry chooses delivers to the root, to everyone, or each rank's
 * block.  Across nodes (when the op is commutative or the nodes hold consecutive ranks, so
 * the bridge's order is rank order): the node reduces to its leader, the leaders reduce
 * through the host MPI, and the result goes out over the node (Allreduce: the node Bcast;
 * Reduce: the root's leader forwards it to the root through its ring; Reduce_scatter: an
 * Allreduce into the node's vector scratch, of which each rank keeps its block).  The node
 * step counts its own algorithm, the leaders the bridge step. */
#include <stdlib.h>

#include "reduce.h"

typedef struct hierarchy_state {
    int pc;
    size_t *first;        /* Reduce_scatter's blocks */
    char *whole;          /* the Allreduce's result across nodes: recv or the vector scratch */
    char *partial, *result; /* Reduce across nodes, on leaders: the node's partial result, the final one */
    nc_bridge_req req;
    union {
        nc_node_reduce_step reduce;
        nc_node_bcast_step bcast;
        nc_node_forward_step forward;
    } step;
} hierarchy_state;
NC_STATE_FITS(hierarchy_state);

static int is_reduce_scatter(nc_coll_id coll)
{
    return coll == NC_COLL_REDUCE_SCATTER || coll == NC_COLL_REDUCE_SCATTER_BLOCK;
}

static size_t vector_bytes(const nc_args *a) { return a->reduce.count * a->reduce.red->elem_size; }

/* Runs the node reduction of the call into recv for `deliver` (set up when pc is 0). */
static void setup_node_reduce(hierarchy_state *st, const nc_args *a, char *recv, int deliver)
{
    nc_reduce_call call = {a->reduce.send, recv, a->reduce.count, a->reduce.red, deliver, st->first};
    nc_node_reduce_setup(&st->step.reduce, a->coll, &call);
}

static nc_step node_reduce(nc_op *op, hierarchy_state *st)
{
    nc_step s = nc_node_reduce_progress(op, &st->step.reduce);
    if (s == NC_DONE) nc_stats_count(op->args->coll, st->step.reduce.alg->id, vector_bytes(op->args));
    return s;
}

static int deliver_on_one_node(const nc_comm *c, const nc_args *a)
{
    if (is_reduce_scatter(a->coll)) return NC_DELIVER_OWN;
    return a->root < 0 ? NC_DELIVER_ALL : c->node_rank_of[a->root];
}

static nc_step on_one_node(nc_op *op, hierarchy_state *st)
{
    const nc_args *a = op->args;
    NC_BEGIN(st);
    /* On one node, node ranks are comm ranks: the slices are the blocks. */
    st->first = is_reduce_scatter(a->coll) ? nc_block_starts(a->reduce.counts, op->c->size) : NULL;
    setup_node_reduce(st, a, a->reduce.recv, deliver_on_one_node(op->c, a));
    NC_AWAIT_STEP(st, node_reduce(op, st));
    if (st->first) free(st->first); /* (a call saved on the small calls' path) */
    NC_END(st);
}

static nc_step allreduce_across_nodes(nc_op *op, hierarchy_state *st)
{
    nc_comm *c = op->c;
    const nc_args *a = op->args;
    size_t bytes = vector_bytes(a);
    NC_BEGIN(st);
    st->first = NULL;
    st->whole = is_reduce_scatter(a->coll) ? nc_reduce_scratch(&c->node, NC_SCRATCH_VECTOR, bytes) : a->reduce.recv;
    setup_node_reduce(st, a, st->whole, 0);
    NC_AWAIT_STEP(st, node_reduce(op, st));
    if (nc_comm_is_leader(c)) {
        NC_BRIDGE_STEP(op, st, &st->req, c->bridge.allreduce(c->bridge.ctx, st->whole, a->reduce.count, a->reduce.red, op->bridge_req));
        nc_stats_count(a->coll, NC_ALG_BRIDGE, bytes);
    }
    if (c->node.size > 1) {
        nc_node_bcast_setup_bytes(&st->step.bcast, st->whole, bytes, 0);
        NC_AWAIT_STEP(st, nc_node_bcast_progress(op, &st->step.bcast));
    }
    if (is_reduce_scatter(a->coll)) {
        st->first = nc_block_starts(a->reduce.counts, c->size);
        nc_keep_block(a->reduce.recv, st->whole, st->first, c->rank, a->reduce.red->elem_size);
        free(st->first);
    }
    NC_END(st);
}

/* Leaders hold their node's partial result and, on the root's node, the final one (handed on
 * to the root when it is not the leader) in the vector scratch. */
static nc_step reduce_across_nodes(nc_op *op, hierarchy_state *st)
{
    nc_comm *c = op->c;
    const nc_args *a = op->args;
    size_t bytes = vector_bytes(a);
    int root_node = c->node_of[a->root], on_root_node = c->node_of[c->rank] == root_node;
    NC_BEGIN(st);
    st->first = NULL;
    st->partial = nc_comm_is_leader(c) ? nc_reduce_scratch(&c->node, NC_SCRATCH_VECTOR, 2 * bytes) : NULL;
    st->result = !st->partial ? NULL : c->rank == a->root ? a->reduce.recv : st->partial + bytes;
    setup_node_reduce(st, a, st->partial, 0);
    NC_AWAIT_STEP(st, node_reduce(op, st));
    if (nc_comm_is_leader(c)) {
        NC_BRIDGE_STEP(op, st, &st->req,
                       c->bridge.reduce(c->bridge.ctx, st->partial, on_root_node ? st->result : NULL, a->reduce.count,
                                        a->reduce.red, root_node, op->bridge_req));
        nc_stats_count(NC_COLL_REDUCE, NC_ALG_BRIDGE, bytes);
    }
    if (on_root_node && c->node_rank_of[a->root] != 0) {
        nc_node_forward_setup(&st->step.forward, 0, c->node_rank_of[a->root], st->result, a->reduce.recv, bytes);
        NC_AWAIT_STEP(st, nc_node_forward_progress(op, &st->step.forward));
    }
    NC_END(st);
}

static nc_step progress(nc_op *op, void *state)
{
    hierarchy_state *st = state;
    if (!nc_comm_multinode(op->c)) return on_one_node(op, st);
    if (op->args->root >= 0) return reduce_across_nodes(op, st);
    return allreduce_across_nodes(op, st);
}

static int always(const nc_comm *c, const nc_args *a) { return 1; }

const nc_algorithm nc_reduce_hierarchy = {NC_ALG_HIERARCHY, always, NULL, progress, 1};
