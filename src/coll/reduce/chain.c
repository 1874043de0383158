/* Scan / Exscan on a node: prefix(r) = prefix(r-1) op x(r).  Rank r folds rank r-1's
 * published prefix into a copy of its own input and publishes the result, fragment by
 * fragment (a pipeline along the chain; a message in a chain of inline flags goes whole).
 * On one node the chain is the call; across nodes it is the node step of scan_hierarchy.c. */
#include "reduce.h"
#include "../ledger.h"

void nc_scan_chain_setup(nc_scan_chain_step *st, const nc_args *a)
{
    st->pc = 0;
    st->send = a->reduce.send;
    st->recv = a->reduce.recv;
    st->count = a->reduce.count;
    st->red = a->reduce.red;
    st->exclusive = a->coll == NC_COLL_EXSCAN;
}

nc_step nc_scan_chain_progress(nc_op *op, nc_scan_chain_step *st)
{
    nc_node *n = &op->c->node;
    NC_BEGIN(st);
    st->p = nc_plan_fragments(n, st->count, st->red->elem_size, (size_t)op->c->cfg.reduce_inline_max);
    for (st->k = 0; st->k < st->p.nfrag; st->k++) {
        st->g = st->p.g0 + st->k;
        st->cnt = nc_frag_count(&st->p, st->k);
        st->off = nc_frag_first(&st->p, st->k) * st->p.elem;
        st->len = st->cnt * st->p.elem;
        NC_AWAIT(st, nc_slot_free(op, n, st->p.place, st->g));
        st->mine = nc_slot_take(n, st->p.place, st->g, NULL);
        nc_copy_bytes(st->mine, st->send + st->off, st->len);
        if (n->rank > 0) {
            NC_AWAIT(st, nc_frag_published(op, n, &st->p, n->rank - 1, st->k));
            const char *prev = nc_frag_data(n, st->p.place, n->rank - 1, st->g);
            if (st->exclusive) nc_copy_bytes(st->recv + st->off, prev, st->len);
            nc_fold(st->red, prev, st->mine, st->cnt);
        }
        if (!st->exclusive) nc_copy_bytes(st->recv + st->off, st->mine, st->len);
        nc_frag_publish(n, &st->p, st->k);
        nc_consumed_through(n, st->g);
    }
    NC_END(st);
}

typedef struct chain_state {
    int pc;
    nc_scan_chain_step chain;
} chain_state;
NC_STATE_FITS(chain_state);

static nc_step progress(nc_op *op, void *state)
{
    chain_state *st = state;
    NC_BEGIN(st);
    nc_scan_chain_setup(&st->chain, op->args);
    NC_AWAIT_STEP(st, nc_scan_chain_progress(op, &st->chain));
    NC_END(st);
}

static int one_node(const nc_comm *c, const nc_args *a) { return !nc_comm_multinode(c); }

const nc_algorithm nc_scan_chain = {NC_ALG_CHAIN, one_node, NULL, progress, 0};
