/* Reduction tree: a fan-in over contiguous rank ranges rooted at node rank 0; a parent folds
 * its children's published partial results and its own input into its own slot, pipelined
 * in fragments.  A Reduce to another root: that root copies each fragment from rank 0's
 * slot.  Allreduce: then the node Bcast; Reduce_scatter: an Allreduce into the node's vector
 * scratch, of which each rank keeps its block.  The fan-in also serves flat (radix P-1). */
#include "reduce.h"
#include "../ledger.h"

/* The range [lo, hi) is rooted at lo; lo+1 .. hi-1 is cut into `parts` consecutive
 * sub-ranges, each rooted at its first rank.  Every subtree is a range of consecutive ranks,
 * so a parent folding its children from the last to the first keeps rank order. */
static int part_start(const nc_range_node *t, int i)
{
    int rest = t->hi - t->lo - 1;
    return t->lo + 1 + (int)((long)i * rest / t->parts);
}

static nc_range_node range_make(int lo, int hi, int radix)
{
    nc_range_node t = {lo, hi, hi - lo - 1 < radix ? hi - lo - 1 : radix};
    return t;
}

/* My place in the tree: my own range (children = its parts) and my parent (-1 at the top). */
static nc_range_node range_position(int me, int size, int radix, int *parent)
{
    nc_range_node t = range_make(0, size, radix);
    *parent = -1;
    while (me != t.lo) {
        int i = 0;
        while (part_start(&t, i + 1) <= me) i++;
        *parent = t.lo;
        t = range_make(part_start(&t, i), part_start(&t, i + 1), radix);
    }
    return t;
}

void nc_fanin_setup(nc_fanin *st, const nc_reduce_call *call, int radix, int root)
{
    st->pc = 0;
    st->call = call;
    st->radix = radix;
    st->root = root;
}

nc_step nc_fanin_progress(nc_op *op, nc_fanin *st)
{
    nc_node *n = &op->c->node;
    const nc_reduce_call *call = st->call;
    NC_BEGIN(st);
    st->p = nc_plan_fragments(n, call->count, call->red->elem_size);
    st->t = range_position(n->rank, n->size, st->radix, &st->parent);
    st->top = st->parent < 0;
    /* The top folds straight into the result unless that is its own input (in place) or the
     * result belongs to another rank, which then copies it from the top's slot. */
    st->top_direct = st->top && st->root == 0 && call->send != call->recv;
    for (st->k = 0; st->k < st->p.nfrag; st->k++) {
        st->g = st->p.g0 + st->k;
        st->cnt = nc_frag_count(&st->p, st->k);
        st->off = nc_frag_first(&st->p, st->k) * st->p.elem;
        st->len = st->cnt * st->p.elem;
        if (st->top_direct) {
            st->acc = call->recv + st->off;
        } else {
            NC_AWAIT(st, nc_slot_free(op, n, st->p.place, st->g));
            st->acc = nc_slot_take(n, st->p.place, st->g, 0, 0);
        }
        /* acc = own op (child 1 op (child 2 op ... child m)) */
        for (st->i = st->t.parts - 1; st->i >= 0; st->i--) {
            NC_AWAIT(st, nc_frag_published(op, n, st->p.place, part_start(&st->t, st->i), st->g));
            const char *child = nc_frag_data(n, st->p.place, part_start(&st->t, st->i), st->g);
            if (st->i == st->t.parts - 1) nc_copy_bytes(st->acc, child, st->len);
            else nc_fold(call->red, child, st->acc, st->cnt);
        }
        if (st->t.parts) nc_fold(call->red, call->send + st->off, st->acc, st->cnt);
        else nc_copy_bytes(st->acc, call->send + st->off, st->len);
        if (st->top && st->root == 0 && !st->top_direct) nc_copy_bytes(call->recv + st->off, st->acc, st->len);
        else if (!st->top_direct) nc_frag_publish(n, st->p.place, st->g);
        if (n->rank == st->root && st->root != 0) {
            NC_AWAIT(st, nc_frag_published(op, n, st->p.place, 0, st->g));
            nc_copy_bytes(call->recv + st->off, nc_frag_data(n, st->p.place, 0, st->g), st->len);
        }
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
static int radix(const nc_comm *c)
{
    return c->cfg.reproducible ? (c->node.size > 1 ? c->node.size - 1 : 1) : (int)c->cfg.reduce_fanin;
}

static nc_step progress(nc_op *op, void *state)
{
    tree_state *st = state;
    nc_node *n = &op->c->node;
    const nc_reduce_call *call = &st->whole;
    NC_BEGIN(&st->head);
    st->whole = nc_whole_vector_call(n, &st->head.call);
    nc_fanin_setup(&st->step.fanin, call, radix(op->c), call->deliver >= 0 ? call->deliver : 0);
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
