/* The node Bcast step (steps.h): the root announces the byte count, every rank chooses the
 * node algorithm from it, and runs it.
 *
 * Every rank plans the call from its node root's byte count, which the root announces in
 * aux[0] of its inline flag for the call's first fragment (a message that fits rides in the
 * same flag, so a small Bcast still costs one line transfer).  Ranks whose counts disagree,
 * an erroneous program, thus still number fragments alike and stay in step.  The flag is
 * taken for every reader: any rank of the node reads the announcement. */
#include <stdlib.h>

#include "bcast.h"
#include "../ledger.h"
#include "../registry.h"
#include "../../core/fatal.h"

static const nc_frag_place announcement_place = {1, NC_INLINE_HEADER};
/* In the announced byte count: the root's buffer lies in its shared heap (nodes without CMA
 * run single copy only then). */
#define ROOT_IN_HEAP (UINT64_C(1) << 62)

void nc_node_bcast_setup(nc_node_bcast_step *st, nc_data *data, size_t my_bytes, int root)
{
    st->pc = 0;
    st->data = data;
    st->my_bytes = st->bytes = my_bytes;
    st->root = root;
    st->announced = 0;
    st->whole.base = NULL;
}

void nc_node_bcast_setup_bytes(nc_node_bcast_step *st, void *buf, size_t bytes, int root)
{
    st->plain = nc_data_bytes(buf);
    nc_node_bcast_setup(st, &st->plain, bytes, root);
}

static void announce(nc_comm *c, nc_node_bcast_step *st, uint64_t g0)
{
    nc_node *n = &c->node;
    char *data = nc_slot_take(n, announcement_place, g0, NULL);
    nc_flag *f = nc_frag_signal(n, announcement_place, n->rank, g0);
    st->root_in_heap = nc_heap_only(c) && nc_data_is_bytes(st->data) && nc_heap_holds(st->data->base, st->bytes);
    atomic_store_explicit(&f->aux[0], st->bytes | (st->root_in_heap ? ROOT_IN_HEAP : 0), memory_order_relaxed);
    if (nc_frag_place_aligned(st->bytes).in_flag) nc_data_pack(st->data, 0, data, st->bytes);
    nc_flag_post(f, g0 + 1);
}

static const nc_algorithm *choose(const nc_comm *c, const nc_node_bcast_step *st)
{
    nc_args a = {.coll = NC_COLL_BCAST, .root = st->root, .heap_agreed = st->root_in_heap};
    return nc_registry_select_step(c, &a, st->bytes);
}

/* Hands the chosen algorithm its call (more bytes than my arguments hold: take part in
 * full, as my children may expect it all, and keep what fits afterwards) and plans it. */
static void start_algorithm(nc_op *op, nc_node_bcast_step *st)
{
    nc_data *into = st->data;
    if (st->bytes > st->my_bytes) {
        st->whole = nc_data_bytes(nc_alloc_or_die(st->bytes));
        into = &st->whole;
    }
    nc_bcast_head *head = (nc_bcast_head *)(void *)st->alg_state;
    *head = (nc_bcast_head){0, {into, st->bytes, st->root, st->announced}};
    if (st->alg->plan) st->alg->plan(op, st->alg_state);
}

nc_step nc_node_bcast_progress(nc_op *op, nc_node_bcast_step *st)
{
    nc_comm *c = op->c;
    nc_node *n = &c->node;
    NC_BEGIN(st);
    st->bytes = st->my_bytes; /* (a persistent request's step starts again from its setup) */
    st->announced = st->root_in_heap = 0;
    st->whole.base = NULL;
    /* Nothing to send takes no step (as in the host MPIs, a count of zero on some ranks only
     * cannot be detected: those ranks are gone before the others could learn of it). */
    if (!st->my_bytes) {
        st->alg = choose(c, st);
        return NC_DONE;
    }
    /* (without CMA the ranks learn from the announcement whether the root's buffer is in its heap) */
    if (c->cfg.bcast_check || nc_heap_only(c)) {
        if (n->rank == st->root) {
            NC_AWAIT(st, nc_slot_free(op, n, announcement_place, n->frag));
            announce(c, st, n->frag);
        } else {
            NC_AWAIT(st, nc_flag_reached(op, nc_frag_signal(n, announcement_place, st->root, n->frag), n->frag + 1));
            st->bytes = atomic_load_explicit(&nc_frag_signal(n, announcement_place, st->root, n->frag)->aux[0],
                                             memory_order_relaxed);
            st->root_in_heap = !!(st->bytes & ROOT_IN_HEAP);
            st->bytes &= ~ROOT_IN_HEAP;
        }
        st->announced = 1;
    }
    st->alg = choose(c, st);
    start_algorithm(op, st);
    NC_AWAIT_STEP(st, st->alg->progress(op, st->alg_state));
    if (st->whole.base) {
        nc_data_unpack(st->data, 0, st->whole.base, nc_fit(c, st->bytes, st->my_bytes));
        free(st->whole.base);
    }
    NC_END(st);
}

/* ---- on one node, the step is the call's algorithm -------------------------------------- */

static void plan_call(nc_op *op, void *state)
{
    const nc_args *a = op->args;
    nc_node_bcast_setup(state, a->bcast.data, a->bcast.bytes, op->c->node_rank_of[a->root]);
}

static nc_step progress_call(nc_op *op, void *state)
{
    nc_node_bcast_step *st = state;
    if (!op->args->bcast.bytes) return NC_DONE; /* (a nonblocking call of nothing) */
    nc_step s = nc_node_bcast_progress(op, st);
    if (s == NC_DONE) nc_stats_count(NC_COLL_BCAST, st->alg->id, op->args->bcast.bytes);
    return s;
}

static int one_node(const nc_comm *c, const nc_args *a) { return !nc_comm_multinode(c); }

const nc_algorithm nc_bcast_node = {NC_ALG_HIERARCHY, one_node, plan_call, progress_call, 1};
NC_STATE_FITS(nc_node_bcast_step);
