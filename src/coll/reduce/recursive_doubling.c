/* Recursive doubling (for comparison; Graham and Shipman, section 3.1): step s pairs rank r
 * with r ^ 2^s; both publish what they hold for fragment k, read the partner's and combine
 * lower op higher, so after log2 P steps every rank holds the whole fold of every block in
 * rank order, computed identically on both sides of each pair.  Fragment numbers g0 + k * steps + s.
 * Reduce_scatter: an Allreduce into the node's vector scratch, of which each rank keeps its
 * block. */
#include "reduce.h"
#include "../ledger.h"

static const nc_frag_place ring = {0, 0};

typedef struct doubling_state {
    nc_reduce_head head;
    nc_reduce_call whole; /* the call as run (Reduce_scatter: an Allreduce) */
    int steps, s;
    size_t per_frag, off, cnt;
    uint64_t nfrag, g0, k, g;
    char *tmp;
} doubling_state;
NC_REDUCE_STATE_FITS(doubling_state);

static void plan(nc_op *op, void *state)
{
    doubling_state *st = state;
    st->steps = 0;
    while ((1 << st->steps) < op->c->node.size) st->steps++;
}

/* Combines the partner's fragment with mine, lower rank's op higher rank's. */
static void combine(const doubling_state *st, const nc_node *n, int partner)
{
    const nc_reduce_call *call = &st->whole;
    const char *theirs = nc_frag_data(n, ring, partner, st->g);
    char *mine = call->recv + st->off;
    size_t len = st->cnt * call->red->elem_size;
    if (partner < n->rank) {
        nc_fold(call->red, theirs, mine, st->cnt);
    } else { /* mine op theirs: their copy takes the fold, then becomes mine */
        nc_copy_bytes(st->tmp, theirs, len);
        nc_fold(call->red, mine, st->tmp, st->cnt);
        nc_copy_bytes(mine, st->tmp, len);
    }
}

static nc_step progress(nc_op *op, void *state)
{
    doubling_state *st = state;
    const nc_reduce_call *call = &st->whole;
    nc_node *n = &op->c->node;
    size_t es = st->head.call.red->elem_size;
    NC_BEGIN(&st->head);
    st->whole = nc_whole_vector_call(n, &st->head.call);
    st->per_frag = n->layout.seg_size / es;
    st->nfrag = (call->count + st->per_frag - 1) / st->per_frag;
    st->g0 = nc_take_frags(n, st->nfrag * (uint64_t)st->steps);
    if (call->send != call->recv) nc_copy_bytes(call->recv, call->send, call->count * es);
    st->tmp = nc_reduce_scratch(n, NC_SCRATCH_CHUNKS, st->per_frag * es);
    for (st->k = 0; st->k < st->nfrag; st->k++) {
        st->off = (size_t)st->k * st->per_frag * es;
        st->cnt = nc_min_size(st->per_frag, call->count - (size_t)st->k * st->per_frag);
        for (st->s = 0; st->s < st->steps; st->s++) {
            st->g = st->g0 + st->k * (uint64_t)st->steps + (uint64_t)st->s;
            NC_AWAIT(&st->head, nc_slot_free(op, n, ring, st->g));
            nc_copy_bytes(nc_slot_take(n, ring, st->g, NULL), call->recv + st->off, st->cnt * es);
            nc_flag_post(&nc_node_ctl(n, n->rank)->pub, st->g + 1);
            NC_AWAIT(&st->head, nc_flag_reached(op, &nc_node_ctl(n, n->rank ^ (1 << st->s))->pub, st->g + 1));
            combine(st, n, n->rank ^ (1 << st->s));
            nc_consumed_through(n, st->g);
        }
    }
    nc_keep_own_block(n, &st->head.call, &st->whole);
    NC_END(&st->head);
}

/* Pairs need a power-of-two node, and every rank ends with the whole result (no Reduce). */
static int pairs_up(const nc_comm *c, const nc_args *a)
{
    int size = c->node.size;
    return size > 0 && !(size & (size - 1)) && a->root < 0;
}

const nc_algorithm nc_reduce_recursive_doubling = {NC_ALG_RECURSIVE_DOUBLING, pairs_up, plan, progress, 0};
