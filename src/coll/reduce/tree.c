/* Reduction tree: a fan-in over contiguous rank ranges rooted at node rank 0, or over ranges
 * of the node's topology groups rooted at the root (core/hier.h; the registry says which,
 * nc_registry_fanin_shape); a parent folds its children's published partial results and its
 * own input into its own slot, pipelined in ring fragments (a chain of inline flags goes
 * whole).  A Reduce to another root than the tree's: that root copies each fragment from the
 * top's slot.  Allreduce: then the node Bcast; Reduce_scatter: an Allreduce into the node's
 * vector scratch, of which each rank keeps its block.  The fan-in also serves flat (radix
 * P-1). */
#include "reduce.h"
#include "../ledger.h"
#include "../registry.h"

void nc_fanin_setup(nc_fanin *st, const nc_reduce_call *call, const nc_hier *hier, int radix, int top, int root)
{
    st->pc = 0;
    st->call = call;
    st->hier = hier;
    st->radix = radix;
    st->top_rank = top;
    st->root = root;
}

/* Fragment k of the plan: where it starts, how much. */
static void take_fragment(nc_fanin *st)
{
    st->g = st->p.g0 + st->k;
    st->cnt = nc_frag_count(&st->p, st->k);
    st->off = nc_frag_first(&st->p, st->k) * st->p.elem;
    st->len = st->cnt * st->p.elem;
}

static void copy_from_top(const nc_fanin *st, const nc_node *n)
{
    nc_copy_bytes(st->call->recv + st->off, nc_frag_data(n, st->p.place, st->top_rank, st->g), st->len);
}

nc_step nc_fanin_progress(nc_op *op, nc_fanin *st)
{
    nc_node *n = &op->c->node;
    const nc_reduce_call *call = st->call;
    NC_BEGIN(st);
    st->p = nc_plan_fragments(n, call->count, call->red->elem_size, (size_t)op->c->cfg.reduce_inline_max);
    st->t = nc_node_tree(n, st->hier, st->top_rank, st->radix, NC_TREE_RANGE);
    st->top = st->t.parent < 0;
    /* The top folds straight into the result unless that is its own input (in place) or the
     * result belongs to another rank, which then copies it from the top's slot. */
    st->top_direct = st->top && st->root == st->top_rank && call->send != call->recv;
    st->root_copies = n->rank == st->root && st->root != st->top_rank;
    for (st->k = 0; st->k < st->p.nfrag; st->k++) {
        take_fragment(st);
        if (st->top_direct) {
            st->acc = call->recv + st->off;
        } else {
            NC_AWAIT(st, nc_slot_free(op, n, st->p.place, st->g));
            st->acc = nc_slot_take(n, st->p.place, st->g, NULL);
        }
        /* acc = own op (child 1 op (child 2 op ... child m)) */
        for (st->i = st->t.children - 1; st->i >= 0; st->i--) {
            st->child = nc_tree_child(st->hier, n->size, &st->t, st->i);
            NC_AWAIT(st, nc_frag_published(op, n, &st->p, st->child, st->k));
            const char *child = nc_frag_data(n, st->p.place, st->child, st->g);
            if (st->i == st->t.children - 1) nc_copy_bytes(st->acc, child, st->len);
            else nc_fold(call->red, child, st->acc, st->cnt);
        }
        if (st->t.children) nc_fold(call->red, call->send + st->off, st->acc, st->cnt);
        else nc_copy_bytes(st->acc, call->send + st->off, st->len);
        if (st->top && st->root == st->top_rank && !st->top_direct)
            nc_copy_bytes(call->recv + st->off, st->acc, st->len);
        else if (!st->top_direct)
            nc_frag_publish(n, &st->p, st->k);
        if (st->root_copies && !st->p.place.in_flag) {
            NC_AWAIT(st, nc_frag_published(op, n, &st->p, st->top_rank, st->k));
            copy_from_top(st, n);
        }
        if (!st->root_copies || !st->p.place.in_flag) nc_consumed_through(n, st->g);
    }
    /* A chain of inline flags is posted first flag last (nc_frag_publish): the top's comes
     * once mine is out, so the root copies it only then (consumed only then, too). */
    for (st->k = 0; st->root_copies && st->p.place.in_flag && st->k < st->p.nfrag; st->k++) {
        take_fragment(st);
        NC_AWAIT(st, nc_frag_published(op, n, &st->p, st->top_rank, st->k));
        copy_from_top(st, n);
        nc_consumed_through(n, st->g);
    }
    NC_END(st);
}

typedef struct tree_state {
    nc_reduce_head head;
    nc_reduce_call whole; /* the call as run (Reduce_scatter: an Allreduce) */
    union {
        nc_fanin fanin;
        nc_node_bcast_step bcast;
    } step;
} tree_state;
NC_REDUCE_STATE_FITS(tree_state);

/* Reproducible: a flat fan-in folds x0 op (x1 op ...) like every other algorithm. */
static int radix(const nc_comm *c, nc_coll_id coll, const nc_reduce_call *call)
{
    if (c->cfg.reproducible) return c->node.size > 1 ? c->node.size - 1 : 1;
    return nc_registry_radix(c, coll, call->count * call->red->elem_size, c->cfg.reduce_fanin);
}

static nc_step progress(nc_op *op, void *state)
{
    tree_state *st = state;
    nc_node *n = &op->c->node;
    const nc_reduce_call *call = &st->whole;
    NC_BEGIN(&st->head);
    st->whole = nc_whole_vector_call(n, &st->head.call);
    {
        int root = call->deliver >= 0 ? call->deliver : 0, top;
        const nc_hier *shape = nc_registry_fanin_shape(op->c, call->red, root, &top);
        nc_fanin_setup(&st->step.fanin, call, shape, radix(op->c, op->args->coll, &st->head.call), top, root);
    }
    NC_AWAIT_STEP(&st->head, nc_fanin_progress(op, &st->step.fanin));
    if (call->deliver == NC_DELIVER_ALL) {
        nc_node_bcast_setup_bytes(&st->step.bcast, call->recv, call->count * call->red->elem_size, 0);
        NC_AWAIT_STEP(&st->head, nc_node_bcast_progress(op, &st->step.bcast));
    }
    nc_keep_own_block(n, &st->head.call, &st->whole);
    NC_END(&st->head);
}

static int always(const nc_comm *c, const nc_args *a) { return 1; }

const nc_algorithm nc_reduce_tree = {NC_ALG_TREE, always, NULL, progress, 0};
