/* Bcast through shared memory (Graham and Shipman): a fan-out tree of tunable radix (shaped
 * by the node's topology groups, core/hier.h), pipelined in fragments.  A parent copies each
 * fragment into its own ring (or, for a message of a few hundred bytes, into a chain of
 * inline flags: signal and data in one line transfer each) and its children copy it out,
 * forwarding it from their own ring to theirs. */
#include <string.h>

#include "bcast.h"
#include "../ledger.h"
#include "../registry.h"

int nc_bcast_children_done(nc_op *op, nc_node *n, const nc_bcast_tree *t, uint64_t frag_end)
{
    for (int i = 0; i < t->children; i++)
        if (!nc_consumed(op, n, nc_bcast_child(n, t, i), frag_end)) return 0;
    return 1;
}

nc_frag_place nc_bcast_place(const nc_comm *c, size_t bytes)
{
    size_t chain = (size_t)c->cfg.bcast_inline_max;
    return (nc_frag_place){bytes <= NC_INLINE_ALIGNED_MAX || bytes <= chain, NC_INLINE_HEADER};
}

static size_t frag_bytes(const nc_node *n, nc_frag_place place)
{
    return place.in_flag ? NC_INLINE_ALIGNED_MAX : n->layout.seg_size;
}

/* (Without a division for a message of one fragment: a 64-bit division costs a small
 * Bcast more than the rest of its arithmetic.) */
uint64_t nc_bcast_ring_frags(const nc_node *n, nc_frag_place place, size_t bytes)
{
    size_t chunk = frag_bytes(n, place);
    return bytes <= chunk ? 1 : (bytes + chunk - 1) / chunk;
}

void nc_bcast_ring_setup(nc_bcast_ring *st, const nc_bcast_call *call, const nc_bcast_tree *tree, nc_frag_place place,
                         uint64_t g0)
{
    st->head = (nc_bcast_head){0, *call};
    st->tree = *tree;
    st->place = place;
    st->g0 = g0;
    st->carried = 0;
}

/* Fragments moved per step: one, except for a derived datatype in the ring, where a step
 * covers up to half the ring (never wrapping), so that a type whose runs lie far apart is
 * packed and unpacked in pieces large enough for the engine's tiled kernel.  Half the ring
 * keeps the pipeline going: the parent fills one half while its children drain the other. */
static uint64_t frags_per_step(const nc_node *n, const nc_data *l, nc_frag_place place, uint64_t g, uint64_t left)
{
    uint64_t nseg = (uint64_t)n->layout.nseg, k = nc_data_is_bytes(l) || place.in_flag ? 1 : nseg / 2;
    if (k > 1 && k > nseg - g % nseg) k = nseg - g % nseg; /* (nseg >= 2, so k >= 1; no division for one) */
    return k < left ? k : left;
}

nc_step nc_bcast_ring_run(nc_op *op, nc_bcast_ring *st)
{
    nc_node *n = &op->c->node;
    const nc_bcast_tree *t = &st->tree;
    nc_data *l = st->head.call.data;
    size_t chunk = frag_bytes(n, st->place), bytes = st->head.call.bytes;
    uint64_t end = st->g0 + nc_bcast_ring_frags(n, st->place, bytes);
    NC_BEGIN(&st->head);
    for (st->g = st->g0; st->g < end; st->g += st->k) {
        st->k = frags_per_step(n, l, st->place, st->g, end - st->g);
        st->off = (size_t)(st->g - st->g0) * chunk;
        st->len = bytes - st->off < st->k * chunk ? bytes - st->off : st->k * chunk;
        st->from_parent = NULL;
        if (t->parent >= 0) {
            NC_AWAIT(&st->head, nc_flag_reached(op, nc_frag_signal(n, st->place, t->parent, st->g + st->k - 1), st->g + st->k));
            st->from_parent = nc_frag_data(n, st->place, t->parent, st->g);
        }
        if (t->children && !st->carried) {
            /* The step's slots follow each other in the ring; each must be free first. */
            for (st->h = st->g; st->h < st->g + st->k; st->h++) {
                NC_AWAIT(&st->head, nc_slot_free(op, n, st->place, st->h));
                char *slot = nc_slot_take(n, st->place, st->h, t);
                if (st->h == st->g) st->slot = slot;
            }
            if (st->from_parent) memcpy(st->slot, st->from_parent, st->len);
            else nc_data_pack(l, st->off, st->slot, st->len);
            nc_flag_post(nc_frag_signal(n, st->place, n->rank, st->g + st->k - 1), st->g + st->k);
            if (st->place.in_flag) nc_flag_prepare(nc_frag_signal(n, st->place, n->rank, st->g + st->k), NC_INLINE_HEADER + st->len);
            if (st->from_parent) st->from_parent = st->slot;
        }
        if (st->from_parent) nc_data_unpack(l, st->off, st->from_parent, st->len);
        nc_flag_post(&nc_node_ctl(n, n->rank)->cons, st->g + st->k);
    }
    NC_END(&st->head);
}

/* ---- the registered algorithm -------------------------------------------------------- */

static void plan(nc_op *op, void *state)
{
    nc_bcast_ring *st = state;
    const nc_comm *c = op->c;
    nc_bcast_tree tree = nc_bcast_tree_at(&op->c->node, st->head.call.root,
                                          nc_registry_radix(c, NC_COLL_BCAST, st->head.call.bytes, c->cfg.bcast_radix));
    nc_bcast_call call = st->head.call;
    nc_bcast_ring_setup(st, &call, &tree, nc_bcast_place(c, call.bytes), 0);
    /* The root's announcement carried a message that fits in its inline flags. */
    st->carried = call.announced && tree.parent < 0 && st->place.in_flag;
}

static nc_step progress(nc_op *op, void *state)
{
    nc_bcast_ring *st = state;
    nc_node *n = &op->c->node;
    if (!st->head.pc) st->g0 = nc_take_frags(n, nc_bcast_ring_frags(n, st->place, st->head.call.bytes));
    return nc_bcast_ring_run(op, st);
}

static int always(const nc_comm *c, const nc_args *a) { return 1; }

const nc_algorithm nc_bcast_shm = {NC_ALG_SHM, always, plan, progress, 0};
NC_STEP_STATE_FITS(nc_bcast_ring);
