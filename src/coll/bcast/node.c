/* The node Bcast step (steps.h): the root announces the byte count, every rank chooses the
 * node algorithm from it, and runs it.
 *
 * Every rank plans the call from its node root's byte count, which the root announces in
 * aux[0] of its inline flag for the call's first fragment (a message that fits the inline
 * flags rides in them, so a small Bcast still costs one line transfer per flag, fetched
 * together).  Ranks whose counts disagree,
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
    st->whole.base = NULL;
}

void nc_node_bcast_setup_bytes(nc_node_bcast_step *st, void *buf, size_t bytes, int root)
{
    st->plain = nc_data_bytes(buf);
    nc_node_bcast_setup(st, &st->plain, bytes, root);
}

/* On a node without CMA the single-copy algorithm runs only from a root's buffer in its heap. */
static int root_buffer_in_heap(const nc_comm *c, const nc_node_bcast_step *st)
{
    return nc_heap_only(c) && nc_data_is_bytes(st->data) && nc_heap_holds(st->data->base, st->bytes);
}

static const nc_algorithm *choose(const nc_comm *c, const nc_node_bcast_step *st)
{
    nc_args a = {.coll = NC_COLL_BCAST, .root = st->root, .heap_agreed = st->root_in_heap};
    return nc_registry_select_step(c, &a, st->bytes);
}

/* The inline flags the announcement takes: all of a message that the ring algorithm will
 * carry in a chain of them; else one, the call's first fragment, which every node algorithm
 * takes (a chain announced before a single-copy call, which takes one fragment, left the
 * next call's announcement waiting for a slot that no rank would release: the root knows
 * the size, so it chooses as its readers will). */
static uint64_t announced_frags(const nc_comm *c, const nc_node_bcast_step *st)
{
    nc_frag_place place = nc_bcast_place(c, st->bytes);
    if (!place.in_flag || st->alg != &nc_bcast_shm) return 1;
    return nc_bcast_ring_frags(&c->node, place, st->bytes);
}

static int announcement_free(nc_op *op, nc_node *n, uint64_t g0, uint64_t frags)
{
    for (uint64_t g = g0; g < g0 + frags; g++)
        if (!nc_slot_free(op, n, announcement_place, g)) return 0;
    return 1;
}

/* Whether the message rides in the announcing flags. */
static int carried(const nc_node_bcast_step *st, uint64_t frags) { return st->bytes <= frags * NC_INLINE_ALIGNED_MAX; }

/* The payload of announcing flag k, when the message rides in them. */
static size_t carried_len(const nc_node_bcast_step *st, uint64_t k)
{
    size_t off = (size_t)k * NC_INLINE_ALIGNED_MAX, len = st->bytes - off;
    return len < NC_INLINE_ALIGNED_MAX ? len : NC_INLINE_ALIGNED_MAX;
}

/* The lines of the announcing flags, read or written next: a reader fetches them all at
 * once; the root asks for those of the next call, which likely carries the same. */
static void touch_announcement(nc_node *n, const nc_node_bcast_step *st, int rank, uint64_t g0, uint64_t frags, int write)
{
    for (uint64_t k = 0; k < frags; k++) {
        const nc_flag *f = nc_frag_signal(n, announcement_place, rank, g0 + k);
        nc_flag_touch(f, NC_INLINE_HEADER + (carried(st, frags) ? carried_len(st, k) : 0), write);
    }
}

/* A message that fits the inline flags rides in them, the announcing flag posted last: a
 * reader that sees it finds every later fragment posted (its lines can be fetched at once). */
static void announce(nc_node *n, nc_node_bcast_step *st, uint64_t g0, uint64_t frags)
{
    for (uint64_t k = frags; k-- > 0;) {
        char *data = nc_slot_take(n, announcement_place, g0 + k, NULL);
        nc_flag *f = nc_frag_signal(n, announcement_place, n->rank, g0 + k);
        if (carried(st, frags)) nc_data_pack(st->data, (size_t)k * NC_INLINE_ALIGNED_MAX, data, carried_len(st, k));
        uint64_t heap_bit = st->root_in_heap ? ROOT_IN_HEAP : 0;
        if (!k) atomic_store_explicit(&f->aux[0], st->bytes | heap_bit, memory_order_relaxed);
        nc_flag_post(f, g0 + k + 1);
    }
    touch_announcement(n, st, n->rank, g0 + frags, frags, 1);
}

/* Whether the root announces the byte count (and whether its buffer is in its heap).
 * (Asked again rather than kept in the step: a flag stored there and read back with the
 * root beside it in one wider load cannot be forwarded from the store buffer, and waited
 * for the previous call's stores to shared lines, a cross-core transfer per call.) */
static int announces(const nc_comm *c) { return c->cfg.bcast_check || nc_heap_only(c); }

/* Hands the chosen algorithm its call (more bytes than my arguments hold: take part in
 * full, as my children may expect it all, and keep what fits afterwards) and plans it. */
static void start_algorithm(nc_op *op, nc_node_bcast_step *st, int announced)
{
    nc_data *into = st->data;
    if (st->bytes > st->my_bytes) {
        st->whole = nc_data_bytes(nc_alloc_or_die(st->bytes));
        into = &st->whole;
    }
    nc_bcast_head *head = (nc_bcast_head *)(void *)st->alg_state;
    *head = (nc_bcast_head){0, {into, st->bytes, st->root, announced}};
    if (st->alg->plan) st->alg->plan(op, st->alg_state);
}

nc_step nc_node_bcast_progress(nc_op *op, nc_node_bcast_step *st)
{
    nc_comm *c = op->c;
    nc_node *n = &c->node;
    NC_BEGIN(st);
    st->bytes = st->my_bytes; /* (a persistent request's step starts again from its setup) */
    st->root_in_heap = 0;
    st->whole.base = NULL;
    /* Nothing to send takes no step (as in the host MPIs, a count of zero on some ranks only
     * cannot be detected: those ranks are gone before the others could learn of it). */
    if (!st->my_bytes) {
        st->alg = choose(c, st);
        return NC_DONE;
    }
    /* (without CMA the ranks learn from the announcement whether the root's buffer is in its heap) */
    if (announces(c)) {
        if (n->rank == st->root) {
            st->root_in_heap = root_buffer_in_heap(c, st);
            st->alg = choose(c, st);
            NC_AWAIT(st, announcement_free(op, n, n->frag, announced_frags(c, st)));
            announce(n, st, n->frag, announced_frags(c, st));
        } else {
            NC_AWAIT(st, nc_flag_reached(op, nc_frag_signal(n, announcement_place, st->root, n->frag), n->frag + 1));
            st->bytes = atomic_load_explicit(&nc_frag_signal(n, announcement_place, st->root, n->frag)->aux[0],
                                             memory_order_relaxed);
            st->root_in_heap = !!(st->bytes & ROOT_IN_HEAP);
            st->bytes &= ~ROOT_IN_HEAP;
            st->alg = choose(c, st);
            /* (a message in one flag was read with it) */
            if (st->bytes > NC_INLINE_ALIGNED_MAX) touch_announcement(n, st, st->root, n->frag, announced_frags(c, st), 0);
        }
    } else {
        st->alg = choose(c, st);
    }
    start_algorithm(op, st, announces(c));
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
