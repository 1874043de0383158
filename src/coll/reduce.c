/* Reductions on shared memory (seed 000, sections 3.1-3.2): Reduce, Allreduce,
 * Reduce_scatter(_block), Scan, Exscan.
 *
 * Order.  Every node algorithm combines the contributions of a set of consecutive ranks
 * from the highest down: acc = x[hi]; acc = x[hi-1] op acc; ... (the MPI convention
 * inout = in op inout with `in` the lower ranks), so a non-commutative operation sees rank
 * order.  The flat fan-in, the flat Allreduce and the single-copy slice algorithm all give
 * every element the value x0 op (x1 op (... op x[P-1])); Scan gives ((x0 op x1) op x2) ...
 * The tree (radix < P-1) regroups, which is why NODECOLL_REPRODUCIBLE makes it flat.
 *
 * Algorithms on a node:
 *   flat  every rank publishes its input (a flag line or a ring segment) and folds everybody's
 *         in rank order: one cache-line transfer for a small Allreduce, no fan-out step.
 *   tree  fan-in tree over contiguous rank ranges rooted at node rank 0: a parent folds its
 *         children's published partial results and its own input into its own slot; for
 *         Allreduce the result then goes out through the Bcast tree.  Pipelined in fragments.
 *   cma   reduce-scatter by slices: each rank reduces one slice of the vector, reading the
 *         others' input buffers with process_vm_readv in cache-sized chunks, and writes each
 *         reduced chunk straight into the result buffers that need it (every rank's for
 *         Allreduce, the root's for Reduce, its own for Reduce_scatter).
 *   chain Scan/Exscan: rank r waits for rank r-1's prefix fragment and publishes its own.
 * Several nodes: node reduce to the leader, the leaders reduce through the host MPI on the
 * bridge, node Bcast — when the op is commutative or the nodes hold consecutive rank ranges
 * (so the bridge order is rank order).  Otherwise, and with NODECOLL_REPRODUCIBLE, "ordered":
 * the inputs are allgathered in chunks through the host MPI and every rank folds them in
 * rank order, the one order that does not depend on the node layout.
 */
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "frag.h"
#include "../core/team.h"
#include "select.h"
#include "../core/fatal.h"

static size_t min_size(size_t a, size_t b) { return a < b ? a : b; }


enum { SCRATCH_CHUNKS, SCRATCH_VECTOR };

/* The node's scratch memory `which`, at least `bytes`: kept between calls so its pages stay
 * mapped. */
static char *scratch(nc_node *n, int which, size_t bytes)
{
    if (!n->scratch[which] || n->scratch_bytes[which] < bytes) {
        free(n->scratch[which]);
        n->scratch[which] = nc_alloc_or_die(bytes);
        n->scratch_bytes[which] = bytes;
    }
    return n->scratch[which];
}

/* memcpy for buffers that may be absent when empty (a rank's Reduce_scatter block of 0);
 * shared with the caller's thread team, if any (large copies only). */
static void copy_bytes(void *dst, const void *src, size_t len)
{
    if (len) nc_par_copy(dst, src, len);
}

/* acc = lower op acc, `count` elements (shared with the caller's thread team, if any). */
static void fold(const nc_reduction *r, const void *lower, void *acc, size_t count)
{
    if (count) nc_par_reduce(r, lower, acc, count);
}

/* ---- fragments of one call ------------------------------------------------------------- */

/* A call's elements are cut into fragments of whole elements, each numbered with the node's
 * fragment counter (advanced alike on every rank), published inline or in a ring segment. */
typedef struct frag_plan {
    nc_frag_place place;
    size_t per_frag, count, elem; /* elements per fragment, in all, bytes per element */
    uint64_t g0, nfrag;
} frag_plan;

static frag_plan plan_fragments(nc_node *n, size_t count, size_t elem)
{
    frag_plan p = {nc_frag_place_aligned(count * elem), 0, count, elem, n->frag, 0};
    p.per_frag = p.place.in_flag ? (count ? count : 1) : n->layout.seg_size / elem;
    p.nfrag = (count + p.per_frag - 1) / p.per_frag;
    n->frag += p.nfrag;
    return p;
}

static size_t frag_first(const frag_plan *p, uint64_t k) { return (size_t)k * p->per_frag; }
static size_t frag_count(const frag_plan *p, uint64_t k) { return min_size(p->per_frag, p->count - frag_first(p, k)); }

/* Peer's fragment g, once published. */
static const char *peer_frag(nc_node *n, const frag_plan *p, int rank, uint64_t g)
{
    nc_wait_ge(nc_frag_signal(n, p->place, rank, g), g + 1, &n->wait);
    return nc_frag_data(n, p->place, rank, g);
}

static void publish_frag(nc_node *n, const frag_plan *p, uint64_t g)
{
    nc_flag_post(nc_frag_signal(n, p->place, n->rank, g), g + 1);
}

/* Claims my slot for fragment g and fills it with `len` bytes from src. */
static char *copy_to_slot(nc_node *n, nc_frag_place place, uint64_t g, const char *src, size_t len)
{
    char *slot = nc_frag_claim_for_all(n, place, g);
    copy_bytes(slot, src, len);
    return slot;
}

/* Done reading everything up to fragment g: my slot-reuse promise to every other rank. */
static void consumed(nc_node *n, uint64_t g) { nc_flag_post(&nc_node_ctl(n, n->rank)->cons, g + 1); }

/* ---- fan-in tree over contiguous rank ranges --------------------------------------------- */

/* The range [lo, hi) is rooted at lo; lo+1 .. hi-1 is cut into `parts` consecutive
 * sub-ranges, each rooted at its first rank.  Every subtree is a range of consecutive
 * ranks, so a parent folding its children from the last to the first keeps rank order. */
typedef struct range_node {
    int lo, hi, parts;
} range_node;

static int part_start(const range_node *t, int i)
{
    int rest = t->hi - t->lo - 1;
    return t->lo + 1 + (int)((long)i * rest / t->parts);
}

static range_node range_make(int lo, int hi, int radix)
{
    range_node t = {lo, hi, hi - lo - 1 < radix ? hi - lo - 1 : radix};
    return t;
}

/* My place in the tree: my own range (children = its parts) and my parent (-1 at the top). */
static range_node range_position(int me, int size, int radix, int *parent)
{
    range_node t = range_make(0, size, radix);
    *parent = -1;
    while (me != t.lo) {
        int i = 0;
        while (part_start(&t, i + 1) <= me) i++;
        *parent = t.lo;
        t = range_make(part_start(&t, i), part_start(&t, i + 1), radix);
    }
    return t;
}

/* acc = own op (child 1 op (child 2 op ... child m)), for fragment g. */
static void fold_subtree(nc_node *n, const frag_plan *p, const range_node *t, uint64_t g, const char *own,
                         char *acc, size_t count, const nc_reduction *r)
{
    size_t len = count * p->elem;
    if (!t->parts) {
        copy_bytes(acc, own, len);
        return;
    }
    copy_bytes(acc, peer_frag(n, p, part_start(t, t->parts - 1), g), len);
    for (int i = t->parts - 2; i >= 0; i--) fold(r, peer_frag(n, p, part_start(t, i), g), acc, count);
    fold(r, own, acc, count);
}

/* The fold of every node rank's `send` lands in node rank `root`'s recv. */
static void tree_reduce(nc_comm *c, const char *send, char *recv, size_t count, const nc_reduction *r,
                        int root, int radix)
{
    nc_node *n = &c->node;
    frag_plan p = plan_fragments(n, count, r->elem_size);
    int parent;
    range_node t = range_position(n->rank, n->size, radix, &parent);
    int top = parent < 0;
    /* The top folds straight into the result unless that is its own input (in place) or
     * the result belongs to another rank, which then copies it from the top's slot. */
    int top_direct = top && root == 0 && send != recv;
    for (uint64_t k = 0; k < p.nfrag; k++) {
        uint64_t g = p.g0 + k;
        size_t cnt = frag_count(&p, k), off = frag_first(&p, k) * p.elem, len = cnt * p.elem;
        char *acc = top_direct ? recv + off : nc_frag_claim_for_all(n, p.place, g);
        fold_subtree(n, &p, &t, g, send + off, acc, cnt, r);
        if (top && root == 0 && !top_direct) copy_bytes(recv + off, acc, len);
        else if (!top_direct) publish_frag(n, &p, g);
        if (n->rank == root && root != 0) copy_bytes(recv + off, peer_frag(n, &p, 0, g), len);
        consumed(n, g);
    }
}

/* Every rank publishes its input and folds elements [lo, hi) of all of them into recv
 * (recv[0] is element lo): the same code on the same inputs gives every rank the same bits.
 * Allreduce folds everything; Reduce_scatter only its own block. */
static void flat_reduce_range(nc_comm *c, const char *send, char *recv, size_t count, size_t lo, size_t hi,
                              const nc_reduction *r)
{
    nc_node *n = &c->node;
    frag_plan p = plan_fragments(n, count, r->elem_size);
    for (uint64_t k = 0; k < p.nfrag; k++) {
        uint64_t g = p.g0 + k;
        size_t first = frag_first(&p, k), cnt = frag_count(&p, k), off = first * p.elem, len = cnt * p.elem;
        char *mine = copy_to_slot(n, p.place, g, send + off, len); /* my input from here on (in place) */
        publish_frag(n, &p, g);
        size_t from = first > lo ? first : lo, to = min_size(first + cnt, hi);
        for (int q = n->size - 1; q >= 0 && from < to; q--) {
            const char *src = (q == n->rank ? mine : peer_frag(n, &p, q, g)) + (from - first) * p.elem;
            char *dst = recv + (from - lo) * p.elem;
            if (q == n->size - 1) copy_bytes(dst, src, (to - from) * p.elem);
            else fold(r, src, dst, to - from);
        }
        consumed(n, g);
    }
}

/* Copies `bytes` from node rank `from`'s src to node rank `to`'s dst through from's ring. */
static void node_forward(nc_comm *c, int from, int to, const char *src, char *dst, size_t bytes)
{
    nc_node *n = &c->node;
    frag_plan p = plan_fragments(n, bytes, 1);
    for (uint64_t k = 0; k < p.nfrag; k++) {
        uint64_t g = p.g0 + k;
        size_t off = frag_first(&p, k), len = frag_count(&p, k);
        if (n->rank == from) {
            copy_to_slot(n, p.place, g, src + off, len);
            publish_frag(n, &p, g);
        } else if (n->rank == to) {
            copy_bytes(dst + off, peer_frag(n, &p, from, g), len);
        }
        consumed(n, g); /* everybody, so `from` can reuse its slots within a long message */
    }
}

/* ---- single-copy reduce-scatter by slices ------------------------------------------------ */

enum { DELIVER_ALL = -2, DELIVER_OWN = -1 }; /* or the node rank of a Reduce root */

typedef struct peer_buffers {
    char **input, **result;
} peer_buffers;

/* Publishes my input and result addresses for call g and learns everybody's. */
static peer_buffers exchange_addresses(nc_node *n, uint64_t g, const char *send, char *recv)
{
    nc_rank_ctl *me = nc_node_ctl(n, n->rank);
    atomic_store_explicit(&me->pub.aux[0], (uint64_t)(uintptr_t)send, memory_order_relaxed);
    atomic_store_explicit(&me->pub.aux[1], (uint64_t)(uintptr_t)recv, memory_order_relaxed);
    nc_flag_post(&me->pub, g + 1);
    peer_buffers b = {nc_alloc_or_die(sizeof(char *) * (size_t)n->size), nc_alloc_or_die(sizeof(char *) * (size_t)n->size)};
    for (int q = 0; q < n->size; q++) {
        const nc_flag *pub = &nc_node_ctl(n, q)->pub;
        if (q != n->rank) nc_wait_ge(pub, g + 1, &n->wait);
        b.input[q] = (char *)(uintptr_t)atomic_load_explicit(&pub->aux[0], memory_order_relaxed);
        b.result[q] = (char *)(uintptr_t)atomic_load_explicit(&pub->aux[1], memory_order_relaxed);
    }
    return b;
}

/* Reduces elements [lo, hi) of everybody's input, `chunk` elements at a time, in rank order
 * from the highest down.  Only I touch this slice of anybody's buffers, so I may overwrite a
 * peer's input there (in place) right after reading it.  `own_dst`: where my own result
 * goes for DELIVER_OWN. */
static void reduce_slice(nc_comm *c, const peer_buffers *b, const char *send, size_t lo, size_t hi,
                         const nc_reduction *r, int deliver, char *own_dst)
{
    nc_node *n = &c->node;
    size_t es = r->elem_size, chunk = (size_t)c->cfg.reduce_chunk / es;
    if (!chunk) chunk = 1;
    char *acc = scratch(n, SCRATCH_CHUNKS, 2 * chunk * es), *tmp = acc + chunk * es;
    for (size_t e = lo; e < hi; e += chunk) {
        size_t cnt = min_size(chunk, hi - e), off = e * es, len = cnt * es;
        for (int q = n->size - 1; q >= 0; q--) {
            char *into = q == n->size - 1 ? acc : tmp;
            const char *src = q == n->rank ? send + off : into;
            if (q != n->rank) nc_node_cma_or_die(n, q, b->input[q] + off, into, len, 0);
            if (q == n->size - 1) {
                if (src != acc) copy_bytes(acc, src, len);
            } else {
                fold(r, src, acc, cnt);
            }
        }
        for (int q = 0; q < n->size; q++) {
            if (deliver == DELIVER_OWN) {
                if (q == n->rank) copy_bytes(own_dst + (e - lo) * es, acc, len);
            } else if (deliver == DELIVER_ALL || deliver == q) {
                if (q == n->rank) copy_bytes(b->result[q] + off, acc, len);
                else nc_node_cma_or_die(n, q, b->result[q] + off, acc, len, 1);
            }
        }
    }
}

/* slice_first[q] .. slice_first[q+1] is node rank q's slice (in elements). */
static void cma_slices(nc_comm *c, const char *send, char *recv, const size_t *slice_first,
                       const nc_reduction *r, int deliver)
{
    nc_node *n = &c->node;
    uint64_t g = n->frag++;
    peer_buffers b = exchange_addresses(n, g, send, recv);
    size_t lo = slice_first[n->rank], hi = slice_first[n->rank + 1], es = r->elem_size;
    /* In place, my block's result goes to the start of recv, which may be another rank's
     * slice of my input: keep it aside until everybody is done. */
    char *aside = deliver == DELIVER_OWN && send == recv && lo ? nc_alloc_or_die((hi - lo) * es) : NULL;
    reduce_slice(c, &b, send, lo, hi, r, deliver, aside ? aside : recv);
    /* Others read my input and write my result: neither may go away before they are done. */
    consumed(n, g);
    nc_wait_all_cons(n, g + 1);
    if (aside) copy_bytes(recv, aside, (hi - lo) * es);
    free(aside);
    free(b.input);
    free(b.result);
}

static size_t *even_slices(int parts, size_t count)
{
    size_t *first = nc_alloc_or_die(sizeof(size_t) * (size_t)(parts + 1));
    for (int q = 0; q <= parts; q++) first[q] = count / (size_t)parts * (size_t)q + min_size((size_t)q, count % (size_t)parts);
    return first;
}

/* ---- reduce-scatter by slices through the rings -------------------------------------- */

/* The same slices without system calls: in round k every rank copies chunk k of each peer's
 * slice of its input into its ring (P-1 pieces), then folds the pieces the others staged
 * for its own slice with its own input into a result segment, which every rank that needs
 * it copies out.  The staged chunks are read soon after they are written, so they mostly
 * move between the cores' caches, not through memory.  Fragment numbers of round k:
 * g0 + k*P + j, the pieces first (j = the peer's index among the others), the result last.
 * Needs 2P ring segments, so a round's segments are free again when the next starts. */
typedef struct ring_slices {
    uint64_t g0;
    int size;
    size_t per_round; /* elements of one slice per round */
} ring_slices;

static uint64_t piece_frag(const ring_slices *rs, uint64_t k, int owner, int reader)
{
    return rs->g0 + k * (uint64_t)rs->size + (uint64_t)(reader < owner ? reader : reader - 1);
}

static uint64_t result_frag(const ring_slices *rs, uint64_t k) { return rs->g0 + k * (uint64_t)rs->size + (uint64_t)rs->size - 1; }

/* Elements [*lo, *hi) of slice q in round k (empty once the slice is done). */
static void round_span(const ring_slices *rs, const size_t *first, int q, uint64_t k, size_t *lo, size_t *hi)
{
    *lo = min_size(first[q] + (size_t)k * rs->per_round, first[q + 1]);
    *hi = min_size(*lo + rs->per_round, first[q + 1]);
}

static int ring_slices_fit(const nc_node *n) { return n->layout.nseg >= 2 * n->size; }

static void shm_slices(nc_comm *c, const char *send, char *recv, const size_t *first, const nc_reduction *r,
                       int deliver)
{
    nc_node *n = &c->node;
    nc_frag_place ring = {0, 0};
    size_t es = r->elem_size;
    ring_slices rs = {n->frag, n->size, n->layout.seg_size / es};
    uint64_t rounds = 0;
    for (int q = 0; q < n->size; q++) {
        uint64_t need = (first[q + 1] - first[q] + rs.per_round - 1) / rs.per_round;
        if (need > rounds) rounds = need;
    }
    n->frag += rounds * (uint64_t)n->size;
    int me = n->rank;
    /* In place, my block's result goes to the start of recv: kept aside until the end. */
    char *aside = deliver == DELIVER_OWN && send == recv && first[me] ? nc_alloc_or_die((first[me + 1] - first[me]) * es) : NULL;
    char *own_dst = aside ? aside : recv;
    for (uint64_t k = 0; k < rounds; k++) {
        size_t lo, hi;
        for (int q = 0; q < n->size; q++) {
            if (q == me) continue;
            uint64_t g = piece_frag(&rs, k, me, q);
            round_span(&rs, first, q, k, &lo, &hi);
            copy_to_slot(n, ring, g, send + lo * es, (hi - lo) * es);
            nc_flag_post(&nc_node_ctl(n, me)->pub, g + 1);
        }
        uint64_t gr = result_frag(&rs, k);
        round_span(&rs, first, me, k, &lo, &hi);
        char *acc = nc_frag_claim_for_all(n, ring, gr);
        for (int q = n->size - 1; q >= 0; q--) {
            const char *src = send + lo * es;
            if (q != me) {
                uint64_t g = piece_frag(&rs, k, q, me);
                nc_wait_ge(&nc_node_ctl(n, q)->pub, g + 1, &n->wait);
                src = nc_frag_data(n, ring, q, g);
            }
            if (q == n->size - 1) copy_bytes(acc, src, (hi - lo) * es);
            else fold(r, src, acc, hi - lo);
        }
        nc_flag_post(&nc_node_ctl(n, me)->pub, gr + 1);
        if (deliver == DELIVER_ALL || deliver == me) {
            for (int q = 0; q < n->size; q++) {
                uint64_t g = result_frag(&rs, k);
                round_span(&rs, first, q, k, &lo, &hi);
                if (q != me) nc_wait_ge(&nc_node_ctl(n, q)->pub, g + 1, &n->wait);
                copy_bytes(recv + lo * es, q == me ? acc : nc_frag_data(n, ring, q, g), (hi - lo) * es);
            }
        } else if (deliver == DELIVER_OWN) {
            copy_bytes(own_dst + (lo - first[me]) * es, acc, (hi - lo) * es);
        }
        consumed(n, result_frag(&rs, k));
    }
    if (aside) {
        /* Every piece of my input is staged by now: recv may take my result. */
        copy_bytes(recv, aside, (first[me + 1] - first[me]) * es);
        free(aside);
    }
}

/* ---- recursive doubling (for comparison, seed 000 3.1) -------------------------------- */

/* Step s pairs rank r with r ^ 2^s: both publish what they hold for fragment k, read the
 * partner's and combine lower op higher, so after log2 P steps every rank holds the whole
 * fold of every block in rank order, computed identically on both sides of each pair.
 * Fragment numbers g0 + k * steps + s. */
static int is_power_of_two(int x) { return x > 0 && !(x & (x - 1)); }

static void recursive_doubling(nc_comm *c, const char *send, char *recv, size_t count, const nc_reduction *r)
{
    nc_node *n = &c->node;
    int steps = 0;
    while ((1 << steps) < n->size) steps++;
    size_t es = r->elem_size, per_frag = n->layout.seg_size / es;
    uint64_t nfrag = (count + per_frag - 1) / per_frag, g0 = n->frag;
    nc_frag_place ring = {0, 0};
    n->frag += nfrag * (uint64_t)steps;
    if (send != recv) copy_bytes(recv, send, count * es);
    char *tmp = scratch(n, SCRATCH_CHUNKS, per_frag * es);
    for (uint64_t k = 0; k < nfrag; k++) {
        size_t off = (size_t)k * per_frag * es, cnt = min_size(per_frag, count - (size_t)k * per_frag), len = cnt * es;
        for (int st = 0; st < steps; st++) {
            uint64_t g = g0 + k * (uint64_t)steps + (uint64_t)st;
            int partner = n->rank ^ (1 << st);
            copy_to_slot(n, ring, g, recv + off, len);
            nc_flag_post(&nc_node_ctl(n, n->rank)->pub, g + 1);
            nc_wait_ge(&nc_node_ctl(n, partner)->pub, g + 1, &n->wait);
            const char *theirs = nc_frag_data(n, ring, partner, g);
            if (partner < n->rank) {
                fold(r, theirs, recv + off, cnt);
            } else { /* mine op theirs: their copy takes the fold, then becomes mine */
                copy_bytes(tmp, theirs, len);
                fold(r, recv + off, tmp, cnt);
                copy_bytes(recv + off, tmp, len);
            }
            consumed(n, g);
        }
    }
}

/* ---- Scan / Exscan on a node ----------------------------------------------------------- */

/* prefix(r) = prefix(r-1) op x(r): rank r folds rank r-1's published prefix into a copy of
 * its own input and publishes the result, fragment by fragment (a pipeline along the chain). */
static void chain_scan(nc_comm *c, const char *send, char *recv, size_t count, const nc_reduction *r, int exclusive)
{
    nc_node *n = &c->node;
    frag_plan p = plan_fragments(n, count, r->elem_size);
    for (uint64_t k = 0; k < p.nfrag; k++) {
        uint64_t g = p.g0 + k;
        size_t cnt = frag_count(&p, k), off = frag_first(&p, k) * p.elem, len = cnt * p.elem;
        char *mine = copy_to_slot(n, p.place, g, send + off, len);
        if (n->rank > 0) {
            const char *prev = peer_frag(n, &p, n->rank - 1, g);
            if (exclusive) copy_bytes(recv + off, prev, len);
            fold(r, prev, mine, cnt);
        }
        if (!exclusive) copy_bytes(recv + off, mine, len);
        publish_frag(n, &p, g);
        consumed(n, g);
    }
}

/* ---- several nodes --------------------------------------------------------------------- */

/* Node k holds comm ranks first_k .. first_k + size_k - 1 in node rank order, and the bridge
 * orders nodes like their ranks: folding node results in bridge order is rank order. */
static int nodes_hold_consecutive_ranks(const nc_comm *c)
{
    if (c->node_of[0] != 0 || c->node_rank_of[0] != 0) return 0;
    for (int q = 1; q < c->size; q++) {
        int same = c->node_of[q] == c->node_of[q - 1];
        if (same ? c->node_rank_of[q] != c->node_rank_of[q - 1] + 1
                 : c->node_rank_of[q] != 0 || c->node_of[q] != c->node_of[q - 1] + 1)
            return 0;
    }
    return 1;
}

static int needs_ordered(const nc_comm *c, const nc_reduction *r)
{
    return c->cfg.reproducible || (!r->commutative && !nodes_hold_consecutive_ranks(c));
}

enum ordered_kind { ORDERED_REDUCE, ORDERED_SCAN, ORDERED_EXSCAN };

/* Everybody's inputs, `reduce_chunk` bytes per rank at a time, gathered through the host MPI
 * and folded by every rank in rank order (root < 0: every rank keeps the result). */
static int ordered(nc_comm *c, const char *send, char *recv, size_t count, const nc_reduction *r,
                   enum ordered_kind kind, int root)
{
    size_t es = r->elem_size, chunk = (size_t)c->cfg.reduce_chunk / es;
    if (!chunk) chunk = 1;
    char *all = scratch(&c->node, SCRATCH_CHUNKS, min_size(chunk, count) * es * (size_t)c->size);
    int err = 0, last = kind == ORDERED_EXSCAN ? c->rank - 1 : c->rank;
    for (size_t e = 0; e < count && !err; e += chunk) {
        size_t cnt = min_size(chunk, count - e), off = e * es, len = cnt * es;
        err = c->bridge.comm_allgather(c->bridge.comm_ctx, send + off, all, len, NULL);
        if (err) break;
        if (kind == ORDERED_REDUCE && (root < 0 || root == c->rank)) {
            copy_bytes(recv + off, all + (size_t)(c->size - 1) * len, len);
            for (int q = c->size - 2; q >= 0; q--) fold(r, all + (size_t)q * len, recv + off, cnt);
        } else if (kind != ORDERED_REDUCE && last >= 0) {
            for (int q = 1; q <= last; q++) fold(r, all + (size_t)(q - 1) * len, all + (size_t)q * len, cnt);
            copy_bytes(recv + off, all + (size_t)last * len, len);
        }
    }
    return err;
}

/* ---- entry points ---------------------------------------------------------------------- */

/* The table's choice; shm slices fall back to the tree when the rings are too short,
 * recursive doubling on a node that is not a power of two and for Reduce. */
static nc_alg_id slice_alg(const nc_comm *c, nc_coll_id coll, size_t bytes)
{
    nc_alg_id alg = nc_select(c, coll, bytes);
    if (alg == NC_ALG_SHM && !ring_slices_fit(&c->node)) return NC_ALG_TREE;
    if (alg == NC_ALG_RECURSIVE_DOUBLING && (coll == NC_COLL_REDUCE || !is_power_of_two(c->node.size)))
        return NC_ALG_TREE;
    return alg;
}

static void run_slices(nc_comm *c, nc_alg_id alg, const char *send, char *recv, const size_t *first,
                       const nc_reduction *r, int deliver)
{
    if (alg == NC_ALG_CMA) cma_slices(c, send, recv, first, r, deliver);
    else shm_slices(c, send, recv, first, r, deliver);
}

static int tree_radix(const nc_comm *c)
{
    /* Reproducible: a flat fan-in folds x0 op (x1 op ...) like every other algorithm. */
    return c->cfg.reproducible ? (c->node.size > 1 ? c->node.size - 1 : 1) : (int)c->cfg.reduce_fanin;
}

/* Node-level Reduce to node rank `root`; returns the algorithm. */
static nc_alg_id node_reduce(nc_comm *c, nc_coll_id coll, const char *send, char *recv, size_t count,
                             const nc_reduction *r, int root)
{
    nc_node *n = &c->node;
    if (n->size == 1) {
        if (send != recv) copy_bytes(recv, send, count * r->elem_size);
        return NC_ALG_FLAT;
    }
    nc_alg_id alg = slice_alg(c, coll, count * r->elem_size);
    if (alg == NC_ALG_RECURSIVE_DOUBLING) alg = NC_ALG_TREE; /* an Allreduce algorithm */
    if (alg == NC_ALG_CMA || alg == NC_ALG_SHM) {
        size_t *first = even_slices(n->size, count);
        run_slices(c, alg, send, recv, first, r, root);
        free(first);
    } else {
        tree_reduce(c, send, recv, count, r, root, alg == NC_ALG_FLAT ? n->size - 1 : tree_radix(c));
    }
    return alg;
}

static nc_alg_id node_allreduce(nc_comm *c, nc_coll_id coll, const char *send, char *recv, size_t count,
                                const nc_reduction *r)
{
    nc_node *n = &c->node;
    nc_alg_id alg = slice_alg(c, coll, count * r->elem_size);
    if (alg == NC_ALG_CMA || alg == NC_ALG_SHM) {
        size_t *first = even_slices(n->size, count);
        run_slices(c, alg, send, recv, first, r, DELIVER_ALL);
        free(first);
    } else if (alg == NC_ALG_FLAT) {
        flat_reduce_range(c, send, recv, count, 0, count, r);
    } else if (alg == NC_ALG_RECURSIVE_DOUBLING) {
        recursive_doubling(c, send, recv, count, r);
    } else {
        tree_reduce(c, send, recv, count, r, 0, tree_radix(c));
        nc_node_bcast_bytes(c, recv, count * r->elem_size, 0);
    }
    return alg;
}

static int hierarchical_allreduce(nc_comm *c, nc_coll_id coll, const char *send, char *recv, size_t count,
                                  const nc_reduction *r)
{
    int err = 0;
    nc_alg_id alg = node_reduce(c, coll, send, recv, count, r, 0);
    if (nc_comm_is_leader(c)) {
        err = c->bridge.allreduce(c->bridge.ctx, recv, count, r, NULL);
        nc_stats_count(coll, NC_ALG_BRIDGE, count * r->elem_size);
    }
    if (c->node.size > 1) nc_node_bcast_bytes(c, recv, count * r->elem_size, 0);
    nc_stats_count(coll, alg, count * r->elem_size);
    return err;
}

/* Leaders hold their node's partial result and, on the root's node, the final one (handed
 * on to the root when it is not the leader) in the vector scratch. */
static int hierarchical_reduce(nc_comm *c, const char *send, char *recv, size_t count, const nc_reduction *r, int root)
{
    size_t bytes = count * r->elem_size;
    int err = 0, leader = nc_comm_is_leader(c);
    int on_root_node = c->node_of[c->rank] == c->node_of[root], root_node_rank = c->node_rank_of[root];
    char *partial = leader ? scratch(&c->node, SCRATCH_VECTOR, 2 * bytes) : NULL;
    char *result = !leader ? NULL : c->rank == root ? recv : partial + bytes;
    nc_alg_id alg = node_reduce(c, NC_COLL_REDUCE, send, partial, count, r, 0);
    if (leader) {
        err = c->bridge.reduce(c->bridge.ctx, partial, on_root_node ? result : NULL, count, r, c->node_of[root], NULL);
        nc_stats_count(NC_COLL_REDUCE, NC_ALG_BRIDGE, bytes);
    }
    if (on_root_node && root_node_rank != 0) node_forward(c, 0, root_node_rank, result, recv, bytes);
    nc_stats_count(NC_COLL_REDUCE, alg, bytes);
    return err;
}

static int allreduce_for(nc_comm *c, nc_coll_id coll, const char *send, char *recv, size_t count, const nc_reduction *r)
{
    if (nc_comm_multinode(c)) {
        if (needs_ordered(c, r)) {
            nc_stats_count(coll, NC_ALG_ORDERED, count * r->elem_size);
            return ordered(c, send, recv, count, r, ORDERED_REDUCE, -1);
        }
        return hierarchical_allreduce(c, coll, send, recv, count, r);
    }
    nc_stats_count(coll, node_allreduce(c, coll, send, recv, count, r), count * r->elem_size);
    return 0;
}

int nc_reduce(nc_comm *c, const void *send, void *recv, size_t count, const nc_reduction *r, int root)
{
    if (root < 0) return allreduce_for(c, NC_COLL_ALLREDUCE, send, recv, count, r);
    if (nc_comm_multinode(c)) {
        if (needs_ordered(c, r)) {
            nc_stats_count(NC_COLL_REDUCE, NC_ALG_ORDERED, count * r->elem_size);
            return ordered(c, send, recv, count, r, ORDERED_REDUCE, root);
        }
        return hierarchical_reduce(c, send, recv, count, r, root);
    }
    nc_stats_count(NC_COLL_REDUCE, node_reduce(c, NC_COLL_REDUCE, send, recv, count, r, c->node_rank_of[root]),
                   count * r->elem_size);
    return 0;
}

int nc_reduce_scatter(nc_comm *c, nc_coll_id coll, const void *send, void *recv, const size_t *counts,
                      const nc_reduction *r)
{
    size_t *first = nc_alloc_or_die(sizeof(size_t) * (size_t)(c->size + 1)), es = r->elem_size;
    int err = 0;
    first[0] = 0;
    for (int q = 0; q < c->size; q++) first[q + 1] = first[q] + counts[q];
    size_t total = first[c->size];
    /* On one node, node ranks are comm ranks: the slices are the blocks. */
    nc_alg_id alg = nc_comm_multinode(c) ? NC_ALG_COUNT : slice_alg(c, coll, total * es);
    if (alg == NC_ALG_CMA || alg == NC_ALG_SHM) {
        run_slices(c, alg, send, recv, first, r, DELIVER_OWN);
        nc_stats_count(coll, alg, total * es);
    } else if (alg == NC_ALG_FLAT) {
        flat_reduce_range(c, send, recv, total, first[c->rank], first[c->rank + 1], r);
        nc_stats_count(coll, alg, total * es);
    } else {
        char *all = scratch(&c->node, SCRATCH_VECTOR, total * es);
        err = allreduce_for(c, coll, send, all, total, r);
        copy_bytes(recv, all + first[c->rank] * es, counts[c->rank] * es);
    }
    free(first);
    return err;
}

/* Several nodes holding consecutive ranks: each node scans its own ranks (chain), its last
 * rank's total goes to the leader, the leaders exscan the totals through the host MPI, and
 * every rank but those of the first node folds its node's offset in front of its result. */
static int hierarchical_scan(nc_comm *c, const char *send, char *recv, size_t count, const nc_reduction *r,
                             int exclusive)
{
    nc_node *n = &c->node;
    size_t bytes = count * r->elem_size;
    int last = n->rank == n->size - 1, err = 0;
    char *total = scratch(n, SCRATCH_VECTOR, 2 * bytes), *offset = total + bytes;
    if (last) copy_bytes(total, send, bytes); /* before an in-place chain overwrites it */
    if (n->size > 1) chain_scan(c, send, recv, count, r, exclusive);
    else if (!exclusive && send != recv) copy_bytes(recv, send, bytes);
    if (last && n->rank > 0) {
        if (exclusive) fold(r, recv, total, count); /* my exclusive prefix op my input */
        else copy_bytes(total, recv, bytes);
    }
    if (n->size > 1) node_forward(c, n->size - 1, 0, total, total, bytes);
    if (nc_comm_is_leader(c)) {
        err = c->bridge.exscan(c->bridge.ctx, total, offset, count, r, NULL);
        nc_stats_count(exclusive ? NC_COLL_EXSCAN : NC_COLL_SCAN, NC_ALG_BRIDGE, bytes);
    }
    if (c->node_of[c->rank] == 0) return err; /* the first node's prefixes are already global */
    if (n->size > 1) nc_node_bcast_bytes(c, offset, bytes, 0);
    if (exclusive && n->rank == 0) copy_bytes(recv, offset, bytes);
    else fold(r, offset, recv, count);
    return err;
}

int nc_scan(nc_comm *c, const void *send, void *recv, size_t count, const nc_reduction *r, int exclusive)
{
    nc_coll_id coll = exclusive ? NC_COLL_EXSCAN : NC_COLL_SCAN;
    int err = 0;
    if (nc_comm_multinode(c) && (c->cfg.reproducible || !nodes_hold_consecutive_ranks(c))) {
        nc_stats_count(coll, NC_ALG_ORDERED, count * r->elem_size);
        return ordered(c, send, recv, count, r, exclusive ? ORDERED_EXSCAN : ORDERED_SCAN, -1);
    }
    if (nc_comm_multinode(c)) err = hierarchical_scan(c, send, recv, count, r, exclusive);
    else chain_scan(c, send, recv, count, r, exclusive);
    nc_stats_count(coll, NC_ALG_CHAIN, count * r->elem_size);
    return err;
}
