/* Bcast by single copy (CMA, or the shared heaps): each child reads the fragments straight
 * from its parent's buffer as the parent announces them (one copy in all), and announces
 * them in turn from its own contiguous copy.  With push, the root also writes the tail of
 * every child's buffer while the children pull the head, sharing the copying among all
 * ranks.  A root whose data is a derived datatype has no buffer to be read in place: the
 * call then runs the ring pipeline, and the root tags its pub flag so that every rank of the
 * tree follows.  On a node without CMA (the root's buffer is in its heap, or this algorithm
 * would not run) a rank whose buffer lies outside its heap forwards from a copy in its heap
 * and takes no push. */
#include <stdlib.h>

#include "bcast.h"
#include "../ledger.h"
#include "../registry.h"
#include "../heap_only.h"
#include "../watch.h"
#include "../../core/fatal.h"
#include "../../core/team.h"

/* pub.aux[1] of a root that chose the ring: the call's first fragment, tagged (a stale tag
 * from an earlier call can never match; bit 63 keeps it apart from the addresses reductions
 * store). */
#define RING_TAG (UINT64_C(1) << 63)

typedef struct cma_state {
    nc_bcast_head head;
    nc_bcast_tree tree;
    size_t chunk;
    int push;
    uint64_t g0, g_end;
    int ring;
    char *flat; /* the contiguous copy my children read (my buffer, or a staging copy) */
    size_t off, pulled;
    uint64_t g;
    int i;
    nc_bcast_ring ring_step;
} cma_state;
NC_STEP_STATE_FITS(cma_state);

static char *published_buffer(const nc_flag *f)
{
    return (char *)(uintptr_t)atomic_load_explicit(&f->aux[0], memory_order_relaxed);
}

/* A push child offers its buffer for call g0 in its `ready` flag, tagged with the call: a
 * derived child (no buffer, it pulls everything) does not wait for the push and may already
 * offer the next call's buffer when the root gets to it; the root must then skip it.  The
 * tag is written before the address and read after it, so an address is never taken for
 * the wrong call (a review found a root writing one call's tail into the next call's
 * buffer). */
static void offer_push_target(nc_flag *ready, char *buffer, uint64_t g0)
{
    atomic_store_explicit(&ready->aux[1], g0 + 1, memory_order_relaxed);
    atomic_store_explicit(&ready->aux[0], (uint64_t)(uintptr_t)buffer, memory_order_release);
    nc_flag_post(ready, g0 + 1);
}

static char *push_target(const nc_flag *ready, uint64_t g0)
{
    char *buffer = (char *)(uintptr_t)atomic_load_explicit(&ready->aux[0], memory_order_acquire);
    return atomic_load_explicit(&ready->aux[1], memory_order_relaxed) == g0 + 1 ? buffer : NULL;
}

/* Each of c children gets 1/(c+1) of the message from the root, which then copies as much in
 * total as each child does. */
static size_t push_cut(size_t bytes, int children)
{
    size_t cut = bytes - bytes / (size_t)(children + 1);
    return cut & ~(size_t)4095; /* whole pages for the kernel's copy */
}

static void plan(nc_op *op, void *state)
{
    cma_state *st = state;
    nc_comm *c = op->c;
    nc_node *n = &c->node;
    size_t bytes = st->head.call.bytes;
    int radix = nc_registry_radix(c, NC_COLL_BCAST, bytes, c->cfg.bcast_radix);
    st->tree = nc_bcast_tree_at(&op->c->node, st->head.call.root, radix);
    st->chunk = (size_t)nc_registry_param(c, NC_COLL_BCAST, bytes, NC_TUNE_CHUNK, c->cfg.cma_chunk);
    /* Push needs every non-root to be a direct child of the root (no forwarding, no groups). */
    st->push = c->cfg.cma_push_min && (int64_t)bytes >= c->cfg.cma_push_min && radix >= n->size - 1 && !n->hier;
}

/* Fragments numbered for whichever of the single copy and the ring (a derived root) needs
 * more. */
static uint64_t call_frags(const nc_node *n, const cma_state *st)
{
    size_t bytes = st->head.call.bytes;
    uint64_t frags = (bytes + st->chunk - 1) / st->chunk, ring = nc_bcast_ring_frags(n, nc_ring_place, bytes);
    return ring > frags ? ring : frags;
}

/* The contiguous copy my children read: my buffer when it is contiguous and they reach it,
 * else a copy (in my heap on a node without CMA); none for a leaf of a derived type. */
static char *copy_for_children(nc_node *n, const nc_bcast_tree *t, nc_data *l, size_t bytes)
{
    if (nc_data_is_bytes(l) && (!t->children || nc_node_reachable(n, l->base, bytes))) return l->base;
    if (!t->children) return NULL;
    return n->cma ? nc_alloc_or_die(bytes) : nc_stage(n, NC_STAGE_BCAST, bytes);
}

/* Reads [off, off + len) of my parent's published buffer into my copy. */
static void read_from_parent(nc_comm *c, cma_state *st, size_t off, size_t len)
{
    nc_node *n = &c->node;
    nc_data *l = st->head.call.data;
    const char *remote = published_buffer(&nc_node_ctl(n, st->tree.parent)->pub) + off;
    int err;
    if (st->flat && st->flat != l->base) { /* a derived forwarder: its children read the contiguous copy */
        nc_node_single_copy_or_die(c, st->tree.parent, (char *)(uintptr_t)remote, st->flat + off, len, 0);
        nc_data_unpack(l, off, st->flat + off, len);
    } else if ((err = nc_data_read(l, &n->peers[st->tree.parent], remote, off, len))) {
        nc_single_copy_failed(c, st->tree.parent, "read from", err);
    }
}

static nc_step progress(nc_op *op, void *state)
{
    cma_state *st = state;
    nc_node *n = &op->c->node;
    const nc_bcast_tree *t = &st->tree;
    nc_data *l = st->head.call.data;
    size_t bytes = st->head.call.bytes;
    nc_rank_ctl *me = nc_node_ctl(n, n->rank);
    NC_BEGIN(&st->head);
    st->g0 = nc_take_frags(n, call_frags(n, st));
    st->g_end = st->g0 + call_frags(n, st);
    if (t->parent >= 0) {
        NC_AWAIT(&st->head, nc_flag_reached(op, &nc_node_ctl(n, t->parent)->pub, st->g0 + 1));
        st->ring = atomic_load_explicit(&nc_node_ctl(n, t->parent)->pub.aux[1], memory_order_relaxed) ==
                   (RING_TAG | (st->g0 + 1));
    } else {
        st->ring = !nc_data_is_bytes(l);
    }
    /* Whoever is read from needs the packed bytes in one piece. */
    st->flat = st->ring ? l->base : copy_for_children(n, t, l, bytes);
    if (st->ring) {
        if (t->children) atomic_store_explicit(&me->pub.aux[1], RING_TAG | (st->g0 + 1), memory_order_relaxed);
        nc_bcast_ring_setup(&st->ring_step, &st->head.call, t, nc_ring_place, st->g0);
        NC_AWAIT_STEP(&st->head, nc_bcast_ring_run(op, &st->ring_step));
    } else if (t->parent < 0) {
        atomic_store_explicit(&me->pub.aux[0], (uint64_t)(uintptr_t)st->flat, memory_order_relaxed);
        nc_flag_post(&me->pub, st->g_end);
        if (st->push) {
            for (st->i = 0; st->i < t->children; st->i++) {
                NC_AWAIT(&st->head, nc_flag_reached(op, &nc_node_ctl(n, nc_bcast_child(n, t, st->i))->ready, st->g0 + 1));
                int child = nc_bcast_child(n, t, st->i);
                char *dst = push_target(&nc_node_ctl(n, child)->ready, st->g0);
                size_t cut = push_cut(bytes, t->children);
                if (dst) nc_node_single_copy_or_die(op->c, child, dst + cut, st->flat + cut, bytes - cut, 1);
            }
            nc_flag_post(&me->push, st->g_end);
        }
    } else {
        atomic_store_explicit(&me->pub.aux[0], (uint64_t)(uintptr_t)st->flat, memory_order_relaxed);
        /* A push child has the root write the tail [cut, bytes) into its buffer while it pulls
         * the head; a derived child has no contiguous buffer to be written into: it publishes
         * none (the root skips it) and pulls everything. */
        st->pulled = bytes;
        if (st->push) {
            char *target = st->flat && nc_node_reachable(n, st->flat, bytes) ? st->flat : NULL;
            offer_push_target(&me->ready, target, st->g0);
            if (target) st->pulled = push_cut(bytes, n->size - 1);
        }
        for (st->off = 0, st->g = st->g0; st->off < st->pulled; st->off += st->chunk, st->g++) {
            NC_AWAIT(&st->head, nc_flag_reached(op, &nc_node_ctl(n, t->parent)->pub, st->g + 1));
            read_from_parent(op->c, st, st->off, st->pulled - st->off < st->chunk ? st->pulled - st->off : st->chunk);
            if (t->children) nc_flag_post(&me->pub, st->g + 1);
        }
        if (st->pulled < bytes) NC_AWAIT(&st->head, nc_flag_reached(op, &nc_node_ctl(n, t->parent)->push, st->g_end));
    }
    /* Children read my buffer, or my ring tag: it must stay untouched until they are done. */
    NC_AWAIT(&st->head, nc_bcast_children_done(op, n, t, st->g_end));
    nc_flag_post(&me->cons, st->g_end);
    if (st->flat != l->base) { /* (the children are done with my copy) */
        if (n->cma) free(st->flat);
        else nc_stage_release_kind(n, NC_STAGE_BCAST); /* (the heap keeps NODECOLL_HEAP_RETAIN backed) */
    }
    NC_END(&st->head);
}

const nc_algorithm nc_bcast_cma = {NC_ALG_CMA, nc_single_copy, plan, progress, 0};
