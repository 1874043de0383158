/* Reduce-scatter by slices through the rings (cma.c's slices without system calls): in round
 * k every rank copies chunk k of each peer's slice of its input into its ring (P-1 pieces),
 * then folds the pieces the others staged for its own slice with its own input into a
 * result segment, which every rank that needs it copies out.  The staged chunks are read
 * soon after they are written, so they mostly move between the cores' caches, not through
 * memory.  Fragment numbers of round k: g0 + k*P + j, the pieces first (j = the reader's
 * index among the others), the result last.  Needs 2P ring segments, so a round's segments
 * are free again when the next starts. */
#include <stdlib.h>

#include "reduce.h"
#include "../ledger.h"
#include "../../core/fatal.h"

static const nc_frag_place ring = {0, 0};

typedef struct shm_state {
    nc_reduce_head head;
    uint64_t g0, rounds, k, g;
    size_t per_round; /* elements of one slice per round */
    size_t lo, hi;
    int q;
    char *acc, *aside;
} shm_state;
NC_REDUCE_STATE_FITS(shm_state);

static uint64_t piece_frag(const shm_state *st, int size, int owner, int reader)
{
    return st->g0 + st->k * (uint64_t)size + (uint64_t)(reader < owner ? reader : reader - 1);
}

static uint64_t result_frag(const shm_state *st, int size) { return st->g0 + st->k * (uint64_t)size + (uint64_t)size - 1; }

/* Elements [lo, hi) of slice q in round k (empty once the slice is done). */
static void round_span(shm_state *st, int size, int q)
{
    size_t first = nc_slice_first(&st->head.call, size, q), end = nc_slice_first(&st->head.call, size, q + 1);
    st->lo = nc_min_size(first + (size_t)st->k * st->per_round, end);
    st->hi = nc_min_size(st->lo + st->per_round, end);
}

static uint64_t rounds_needed(const shm_state *st, int size)
{
    uint64_t rounds = 0;
    for (int q = 0; q < size; q++) {
        size_t len = nc_slice_first(&st->head.call, size, q + 1) - nc_slice_first(&st->head.call, size, q);
        uint64_t need = (len + st->per_round - 1) / st->per_round;
        if (need > rounds) rounds = need;
    }
    return rounds;
}

/* Folds the piece of rank st->q (src) into my result segment. */
static void fold_piece(const shm_state *st, int size, const char *src)
{
    const nc_reduce_call *call = &st->head.call;
    if (st->q == size - 1) nc_copy_bytes(st->acc, src, (st->hi - st->lo) * call->red->elem_size);
    else nc_fold(call->red, src, st->acc, st->hi - st->lo);
}

static int delivers_all_to_me(const nc_reduce_call *call, int me)
{
    return call->deliver == NC_DELIVER_ALL || call->deliver == me;
}

static nc_step progress(nc_op *op, void *state)
{
    shm_state *st = state;
    const nc_reduce_call *call = &st->head.call;
    nc_node *n = &op->c->node;
    nc_flag *my_pub = &nc_node_ctl(n, n->rank)->pub;
    int me = n->rank, size = n->size;
    size_t es = call->red->elem_size;
    NC_BEGIN(&st->head);
    st->per_round = n->layout.seg_size / es;
    st->rounds = rounds_needed(st, size);
    st->g0 = nc_take_frags(n, st->rounds * (uint64_t)size);
    /* In place, my block's result goes to the start of recv: kept aside until the end. */
    st->aside = call->deliver == NC_DELIVER_OWN && call->send == call->recv && call->first[me]
                    ? nc_alloc_or_die((call->first[me + 1] - call->first[me]) * es)
                    : NULL;
    for (st->k = 0; st->k < st->rounds; st->k++) {
        for (st->q = 0; st->q < size; st->q++) {
            if (st->q == me) continue;
            st->g = piece_frag(st, size, me, st->q);
            NC_AWAIT(&st->head, nc_slot_free(op, n, ring, st->g));
            round_span(st, size, st->q);
            nc_copy_bytes(nc_slot_take(n, ring, st->g, NULL), call->send + st->lo * es, (st->hi - st->lo) * es);
            nc_flag_post(my_pub, st->g + 1);
        }
        NC_AWAIT(&st->head, nc_slot_free(op, n, ring, result_frag(st, size)));
        st->acc = nc_slot_take(n, ring, result_frag(st, size), NULL);
        round_span(st, size, me);
        for (st->q = size - 1; st->q >= 0; st->q--) {
            if (st->q == me) {
                fold_piece(st, size, call->send + st->lo * es);
                continue;
            }
            st->g = piece_frag(st, size, st->q, me);
            NC_AWAIT(&st->head, nc_flag_reached(op, &nc_node_ctl(n, st->q)->pub, st->g + 1));
            fold_piece(st, size, nc_frag_data(n, ring, st->q, st->g));
        }
        nc_flag_post(my_pub, result_frag(st, size) + 1);
        if (call->deliver == NC_DELIVER_OWN) {
            nc_copy_bytes((st->aside ? st->aside : call->recv) + (st->lo - call->first[me]) * es, st->acc,
                          (st->hi - st->lo) * es);
        } else if (delivers_all_to_me(call, me)) {
            for (st->q = 0; st->q < size; st->q++) {
                if (st->q != me) NC_AWAIT(&st->head, nc_flag_reached(op, &nc_node_ctl(n, st->q)->pub, result_frag(st, size) + 1));
                round_span(st, size, st->q);
                nc_copy_bytes(call->recv + st->lo * es,
                              st->q == me ? st->acc : nc_frag_data(n, ring, st->q, result_frag(st, size)),
                              (st->hi - st->lo) * es);
            }
        }
        nc_consumed_through(n, result_frag(st, size));
    }
    if (st->aside) {
        /* Every piece of my input is staged by now: recv may take my result. */
        nc_copy_bytes(call->recv, st->aside, (call->first[me + 1] - call->first[me]) * es);
        free(st->aside);
    }
    NC_END(&st->head);
}

static int rings_hold_two_rounds(const nc_comm *c, const nc_args *a) { return c->node.layout.nseg >= 2 * c->node.size; }

const nc_algorithm nc_reduce_shm = {NC_ALG_SHM, rings_hold_two_rounds, NULL, progress, 0};
