/* MPI_Bcast on shared memory (seed 000): a fan-out tree of tunable radix, pipelined in
 * fragments.  "shm" moves each fragment through shared memory: a parent copies it into its
 * own ring (or, for a message of a few dozen bytes, into a flag) and its children copy it out.  "cma" lets each child read the fragment straight
 * from its parent's user buffer (one copy in all).  Across nodes the root's node goes
 * first, then the leaders over the bridge, then every other node from its leader. */
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "frag.h"
#include "data.h"
#include "select.h"
#include "../core/cma.h"
#include "../core/fatal.h"
#include "../core/team.h"
#include "../core/tree.h"

typedef struct tree_pos {
    int vrank, parent, first_child, children; /* parent and children as node ranks */
    int root, radix;
} tree_pos;

static int tree_node_rank(const nc_node *n, const tree_pos *t, int v) { return nc_rank_of(v, t->root, n->size); }

static tree_pos tree_position(const nc_node *n, int root, int radix)
{
    tree_pos t = {nc_vrank(n->rank, root, n->size), -1, 0, 0, root, radix};
    if (t.vrank) t.parent = nc_rank_of(nc_tree_parent(t.vrank, radix), root, n->size);
    t.first_child = nc_tree_first_child(t.vrank, radix);
    t.children = nc_tree_child_count(t.vrank, radix, n->size);
    return t;
}

static void wait_children_done(nc_node *n, const tree_pos *t, uint64_t frag_end)
{
    for (int i = 0; i < t->children; i++) nc_wait_cons(n, tree_node_rank(n, t, t->first_child + i), frag_end);
}

/* My slot for fragment g may still be read by the children of the call that last filled it
 * (a different root gives different children), or by any rank after a reduction; wait for
 * exactly those. */
static void wait_slot_readers(nc_node *n, const nc_slot_use *use)
{
    if (!use->frag_end) return;
    if (use->any_reader) {
        nc_wait_all_cons(n, use->frag_end);
    } else {
        tree_pos before = tree_position(n, use->root, use->radix);
        wait_children_done(n, &before, use->frag_end);
    }
}

static char *claim_slot(nc_node *n, nc_frag_place p, const tree_pos *t, uint64_t g)
{
    nc_slot_use *use = nc_frag_use(n, p, g);
    wait_slot_readers(n, use);
    *use = (nc_slot_use){g + 1, t->root, t->radix, 0};
    return nc_frag_data(n, p, n->rank, g);
}

char *nc_frag_claim_for_all(nc_node *n, nc_frag_place p, uint64_t g)
{
    nc_slot_use *use = nc_frag_use(n, p, g);
    wait_slot_readers(n, use);
    *use = (nc_slot_use){g + 1, 0, 0, 1};
    return nc_frag_data(n, p, n->rank, g);
}

/* Fragments moved per step: one, except for a derived datatype in the ring, where a step
 * covers up to half the ring (never wrapping), so that a type whose runs lie far apart is
 * packed and unpacked in pieces large enough for the engine's tiled kernel.  Half the ring
 * keeps the pipeline going: the parent fills one half while its children drain the other. */
static uint64_t frags_per_step(const nc_node *n, const nc_data *l, nc_frag_place place, uint64_t g, uint64_t left)
{
    uint64_t nseg = (uint64_t)n->layout.nseg, k = nc_data_is_bytes(l) || place.in_flag ? 1 : nseg / 2;
    if (k > nseg - g % nseg) k = nseg - g % nseg; /* (nseg >= 2, so k >= 1) */
    return k < left ? k : left;
}

static void bcast_through_shm(nc_node *n, const tree_pos *t, nc_data *l, size_t bytes, nc_frag_place place,
                              uint64_t g0, int announced)
{
    size_t chunk = n->layout.seg_size;
    uint64_t nfrag = (bytes + chunk - 1) / chunk;
    nc_rank_ctl *me = nc_node_ctl(n, n->rank);
    int carried = announced && !t->vrank && place.in_flag; /* the root's announcement carried the message */
    for (uint64_t g = g0, k; g < g0 + nfrag; g += k) {
        k = frags_per_step(n, l, place, g, g0 + nfrag - g);
        size_t off = (size_t)(g - g0) * chunk, len = bytes - off < k * chunk ? bytes - off : k * chunk;
        const char *from_parent = NULL;
        if (t->vrank) {
            nc_wait_ge(nc_frag_signal(n, place, t->parent, g + k - 1), g + k, &n->wait);
            from_parent = nc_frag_data(n, place, t->parent, g);
        }
        if (t->children && !(carried && g == g0)) {
            char *slot = claim_slot(n, place, t, g);
            for (uint64_t h = g + 1; h < g + k; h++) claim_slot(n, place, t, h); /* the next ones follow in the ring */
            if (from_parent) memcpy(slot, from_parent, len);
            else nc_data_pack(l, off, slot, len);
            nc_flag_post(nc_frag_signal(n, place, n->rank, g + k - 1), g + k);
            if (from_parent) from_parent = slot;
        }
        if (from_parent) nc_data_unpack(l, off, from_parent, len);
        nc_flag_post(&me->cons, g + k);
    }
}

void nc_node_cma_or_die(const nc_node *n, int peer, char *remote, char *local, size_t len, int write)
{
    int err = nc_par_cma(write, n->pids[peer], remote, local, len);
    if (err) nc_fatal("single-copy %s node rank %d failed (errno %d) after a successful probe",
                      write ? "write to" : "read from", peer, err);
}

static char *published_buffer(const nc_flag *f)
{
    return (char *)(uintptr_t)atomic_load_explicit(&f->aux[0], memory_order_relaxed);
}

static void cma_read_or_die(const nc_node *n, int peer, const char *remote, nc_data *l, size_t off, size_t len)
{
    int err = nc_data_read(l, n->pids[peer], remote, off, len);
    if (err) nc_fatal("single-copy read from node rank %d failed (errno %d) after a successful probe", peer, err);
}

/* Single copy, pulled: each child reads fragments from its parent's buffer as the parent
 * announces them, and announces them in turn from its own contiguous copy `flat` (its user
 * buffer, or a staging copy when its datatype is derived; NULL for a derived leaf, which
 * reads straight into its layout). */
static void pull_from_parent(nc_node *n, const tree_pos *t, nc_data *l, char *flat, size_t bytes, size_t chunk,
                             uint64_t g0)
{
    const nc_rank_ctl *parent = nc_node_ctl(n, t->parent);
    nc_rank_ctl *me = nc_node_ctl(n, n->rank);
    int staged = flat && flat != l->base;
    for (size_t off = 0, g = g0; off < bytes; off += chunk, g++) {
        size_t len = bytes - off < chunk ? bytes - off : chunk;
        nc_wait_ge(&parent->pub, g + 1, &n->wait);
        const char *remote = published_buffer(&parent->pub) + off;
        if (staged) { /* a derived forwarder: its children read the contiguous copy */
            nc_node_cma_or_die(n, t->parent, (char *)(uintptr_t)remote, flat + off, len, 0);
            nc_data_unpack(l, off, flat + off, len);
        } else {
            cma_read_or_die(n, t->parent, remote, l, off, len);
        }
        if (t->children) nc_flag_post(&me->pub, g + 1);
    }
}

/* With push, the root also writes the tail [cut, bytes) of every child's buffer while the
 * children pull the head: the copying is shared by all ranks instead of left to the
 * receivers.  Each of c children gets 1/(c+1) of the message from the root, which then
 * copies as much in total as each child does. */
static size_t push_cut(size_t bytes, int children)
{
    size_t cut = bytes - bytes / (size_t)(children + 1);
    return cut & ~(size_t)4095; /* whole pages for the kernel's copy */
}

/* A push child offers its buffer for the call of first fragment g0 in its `ready` flag,
 * tagged with the call: a derived child (no buffer: it pulls everything) does not wait for
 * the push and may already offer the next call's buffer when the root gets to it, which
 * must then skip it.  The tag is written before the address and read after it, so an
 * address is never taken for the wrong call (a review found a root writing one call's tail
 * into the next call's buffer). */
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

static void root_push(nc_node *n, const tree_pos *t, char *buf, size_t bytes, uint64_t g0, uint64_t g_end)
{
    size_t cut = push_cut(bytes, t->children);
    for (int i = 0; i < t->children; i++) {
        int child = tree_node_rank(n, t, t->first_child + i);
        const nc_rank_ctl *ctl = nc_node_ctl(n, child);
        nc_wait_ge(&ctl->ready, g0 + 1, &n->wait);
        char *dst = push_target(&ctl->ready, g0);
        if (dst) nc_node_cma_or_die(n, child, dst + cut, buf + cut, bytes - cut, 1);
    }
    nc_flag_post(&nc_node_ctl(n, n->rank)->push, g_end);
}

/* A push child: the root writes the tail [cut, bytes) into my buffer while I pull the head.
 * A derived datatype has no contiguous buffer to write into: such a child publishes none
 * (address 0, the root skips it) and pulls everything itself, unpacking as it goes. */
static void child_pull_and_take_push(nc_node *n, const tree_pos *t, nc_data *l, char *flat, size_t bytes,
                                     size_t chunk, uint64_t g0, uint64_t g_end)
{
    nc_rank_ctl *me = nc_node_ctl(n, n->rank);
    offer_push_target(&me->ready, flat, g0);
    if (!flat) {
        pull_from_parent(n, t, l, NULL, bytes, chunk, g0);
        return;
    }
    pull_from_parent(n, t, l, flat, push_cut(bytes, n->size - 1), chunk, g0);
    nc_wait_ge(&nc_node_ctl(n, t->parent)->push, g_end, &n->wait);
}

/* A root whose data is a derived datatype has no buffer to be read in place: it sends the
 * fragments through its ring instead, packing straight into the slots, and tags pub.aux[1]
 * with the call's first fragment so that every rank of the tree follows (a stale tag from an
 * earlier call can never match; bit 63 keeps it apart from the addresses reductions store). */
#define RING_TAG (UINT64_C(1) << 63)

static int parent_chose_ring(nc_node *n, const tree_pos *t, uint64_t g0)
{
    const nc_flag *pub = &nc_node_ctl(n, t->parent)->pub;
    nc_wait_ge(pub, g0 + 1, &n->wait);
    return atomic_load_explicit(&pub->aux[1], memory_order_relaxed) == (RING_TAG | (g0 + 1));
}

static void bcast_single_copy(nc_node *n, const tree_pos *t, nc_data *l, size_t bytes, size_t chunk,
                              uint64_t g0, uint64_t g_end, int push)
{
    nc_rank_ctl *me = nc_node_ctl(n, n->rank);
    int ring = t->vrank ? parent_chose_ring(n, t, g0) : !nc_data_is_bytes(l);
    /* Whoever is read from needs the packed bytes in one piece. */
    char *flat = ring || nc_data_is_bytes(l) ? l->base : t->children ? nc_alloc_or_die(bytes) : NULL;
    if (ring) {
        if (t->children) atomic_store_explicit(&me->pub.aux[1], RING_TAG | (g0 + 1), memory_order_relaxed);
        bcast_through_shm(n, t, l, bytes, (nc_frag_place){0, 0}, g0, 0);
    } else {
        atomic_store_explicit(&me->pub.aux[0], (uint64_t)(uintptr_t)flat, memory_order_relaxed);
        if (!t->vrank) {
            nc_flag_post(&me->pub, g_end);
            if (push) root_push(n, t, flat, bytes, g0, g_end);
        } else if (push) {
            child_pull_and_take_push(n, t, l, flat, bytes, chunk, g0, g_end);
        } else {
            pull_from_parent(n, t, l, flat, bytes, chunk, g0);
        }
    }
    /* Children read my buffer, or my ring tag: it must stay untouched until they are done. */
    wait_children_done(n, t, g_end);
    nc_flag_post(&me->cons, g_end);
    if (flat != l->base) free(flat);
}

/* `announced`: the root has announced the byte count (and sent a message that fits with it). */
static nc_alg_id plan_and_run(nc_comm *c, nc_data *l, size_t bytes, int root, int announced)
{
    nc_node *n = &c->node;
    nc_alg_id alg = nc_select(c, NC_COLL_BCAST, bytes);
    tree_pos t = tree_position(n, root, (int)c->cfg.bcast_radix);
    size_t chunk = alg == NC_ALG_CMA ? (size_t)c->cfg.cma_chunk : n->layout.seg_size;
    uint64_t nfrag = (bytes + chunk - 1) / chunk, g0 = n->frag;
    /* A single-copy call may run through the ring instead (a derived root): number its
     * fragments for whichever needs more. */
    uint64_t ring_frags = (bytes + n->layout.seg_size - 1) / n->layout.seg_size;
    if (alg == NC_ALG_CMA && ring_frags > nfrag) nfrag = ring_frags;
    n->frag += nfrag;
    /* Push needs every non-root to be a direct child of the root (no forwarding). */
    int push = c->cfg.cma_push_min && (int64_t)bytes >= c->cfg.cma_push_min && c->cfg.bcast_radix >= n->size - 1;
    if (alg == NC_ALG_CMA)
        bcast_single_copy(n, &t, l, bytes, chunk, g0, g0 + nfrag, push);
    else
        bcast_through_shm(n, &t, l, bytes, nc_frag_place_aligned(bytes), g0, announced);
    return alg;
}

/* Every rank plans a call from its node root's byte count, which the root announces in aux[0]
 * of its inline flag for the call's first fragment (a message that fits rides in the same
 * flag, so a small Bcast still costs one line transfer).  Ranks whose counts disagree, an
 * erroneous program, thus still number fragments alike and stay in step.  The flag is
 * claimed for every reader: any rank of the node reads the announcement. */
static const nc_frag_place announcement_place = {1, NC_INLINE_HEADER}; /* an inline flag */

static void announce_bytes(nc_node *n, nc_data *l, size_t bytes, uint64_t g0)
{
    char *data = nc_frag_claim_for_all(n, announcement_place, g0);
    nc_flag *f = nc_frag_signal(n, announcement_place, n->rank, g0);
    atomic_store_explicit(&f->aux[0], bytes, memory_order_relaxed);
    if (nc_frag_place_aligned(bytes).in_flag) nc_data_pack(l, 0, data, bytes);
    nc_flag_post(f, g0 + 1);
}

static size_t announced_bytes(nc_node *n, int root, uint64_t g0)
{
    const nc_flag *f = nc_frag_signal(n, announcement_place, root, g0);
    nc_wait_ge(f, g0 + 1, &n->wait);
    return atomic_load_explicit(&f->aux[0], memory_order_relaxed);
}

nc_alg_id nc_node_bcast(nc_comm *c, nc_data *l, size_t my_bytes, int root)
{
    nc_node *n = &c->node;
    size_t bytes = my_bytes;
    /* Nothing to send takes no step (as in the host MPIs, a count of zero on some ranks only
     * cannot be detected: those ranks are gone before the others could learn of it). */
    if (!my_bytes) return nc_select(c, NC_COLL_BCAST, 0);
    if (!c->cfg.bcast_check) return plan_and_run(c, l, bytes, root, 0);
    if (n->rank == root) announce_bytes(n, l, bytes, n->frag);
    else bytes = announced_bytes(n, root, n->frag);
    if (bytes <= my_bytes) return plan_and_run(c, l, bytes, root, 1); /* fewer: the layout takes a prefix */
    /* More than my arguments hold: take part in full (my children may expect it all), keep
     * what fits and report the truncation, as the host MPI does. */
    nc_data whole = nc_data_bytes(nc_alloc_or_die(bytes));
    nc_alg_id alg = plan_and_run(c, &whole, bytes, root, 1);
    nc_data_unpack(l, 0, whole.base, nc_fit(c, bytes, my_bytes));
    free(whole.base);
    return alg;
}

nc_alg_id nc_node_bcast_bytes(nc_comm *c, void *buf, size_t bytes, int root)
{
    nc_data l = nc_data_bytes(buf);
    return nc_node_bcast(c, &l, bytes, root);
}

static int bcast_across_nodes(nc_comm *c, nc_data *l, size_t bytes, int root)
{
    int root_node = c->node_of[root], my_node = c->node_of[c->rank];
    int node_root = my_node == root_node ? c->node_rank_of[root] : 0;
    int err = 0;
    int bridge_step = nc_comm_multinode(c) && nc_comm_is_leader(c);
    /* On the root's node the data flows node -> bridge, elsewhere bridge -> node. */
    if (my_node == root_node && c->node.size > 1) nc_stats_count(NC_COLL_BCAST, nc_node_bcast(c, l, bytes, node_root), bytes);
    if (bridge_step) {
        err = c->bridge.bcast(c->bridge.ctx, l->base, bytes, root_node);
        nc_stats_count(NC_COLL_BCAST, NC_ALG_BRIDGE, bytes);
    }
    if (my_node != root_node && c->node.size > 1) nc_stats_count(NC_COLL_BCAST, nc_node_bcast(c, l, bytes, node_root), bytes);
    return err;
}

int nc_bcast(nc_comm *c, nc_data *l, size_t bytes, int root)
{
    if (!bytes) return 0;
    if (nc_data_is_bytes(l) || !(nc_comm_multinode(c) && nc_comm_is_leader(c)))
        return nc_call_result(c, bcast_across_nodes(c, l, bytes, root));
    /* A leader hands the bridge contiguous bytes: it stages its derived datatype. */
    nc_data flat = nc_data_bytes(nc_alloc_or_die(bytes));
    if (c->rank == root) nc_data_pack(l, 0, flat.base, bytes);
    int err = bcast_across_nodes(c, &flat, bytes, root);
    if (c->rank != root) nc_data_unpack(l, 0, flat.base, bytes);
    free(flat.base);
    return nc_call_result(c, err);
}
