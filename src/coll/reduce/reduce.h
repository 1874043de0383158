/* The reduction family's shared pieces (src/coll/reduce/): what a node reduction is asked to
 * do, the fragment plans and folds every algorithm uses, and the resumable steps that several
 * algorithms run (the node reduction whose algorithm the registry chooses, a copy from one
 * node rank to another through the ring, the Scan chain).
 *
 * Order.  Every node algorithm combines the contributions of a set of consecutive ranks from
 * the highest down: acc = x[hi]; acc = x[hi-1] op acc; ... (the MPI convention inout = in op
 * inout with `in` the lower ranks), so a non-commutative operation sees rank order.  The flat
 * fold, the flat fan-in and the slices give every element x0 op (x1 op (... op x[P-1]));
 * Scan gives ((x0 op x1) op x2) ...  The tree (radix < P-1) regroups, which is why
 * NODECOLL_REPRODUCIBLE makes it flat. */
#ifndef NC_REDUCE_FAMILY_H
#define NC_REDUCE_FAMILY_H

#include "../algorithms.h"
#include "../frag.h"
#include "../heap_only.h"
#include "../ledger.h"
#include "../steps.h"

/* Where a node reduction's result goes: every rank's recv, each rank's own block of it
 * (Reduce_scatter), or (a node rank, >= 0) that rank's recv alone. */
enum { NC_DELIVER_ALL = -2, NC_DELIVER_OWN = -1 };

/* What a node reduction algorithm is asked to do: fold every node rank's `send` (count
 * elements) into `recv` for `deliver`.  send == recv: in place (DELIVER_OWN: the whole input
 * is in recv and my block's result goes to its start).  For DELIVER_OWN, node rank q's block
 * is elements [first[q], first[q+1]). */
typedef struct nc_reduce_call {
    const char *send;
    char *recv;
    size_t count;
    const nc_reduction *red;
    int deliver;
    const size_t *first;
} nc_reduce_call;

/* Every node reduction algorithm's state begins with this head (its pc first), so that the
 * node step can hand an algorithm its call before planning it. */
typedef struct nc_reduce_head {
    int pc;
    nc_reduce_call call;
} nc_reduce_head;

/* Room for a node reduction algorithm's state inside the node step. */
#define NC_REDUCE_STEP_STATE_BYTES 608
#define NC_REDUCE_STATE_FITS(type) \
    _Static_assert(sizeof(type) <= NC_REDUCE_STEP_STATE_BYTES, #type " does not fit a node reduction step")

/* ---- helpers ------------------------------------------------------------------------- */

static inline size_t nc_min_size(size_t a, size_t b) { return a < b ? a : b; }

/* memcpy for buffers that may be absent when empty (a rank's Reduce_scatter block of 0);
 * shared with the caller's thread team, if any (large copies only). */
void nc_copy_bytes(void *dst, const void *src, size_t len);
/* acc = lower op acc, `count` elements (shared with the caller's thread team, if any). */
void nc_fold(const nc_reduction *r, const void *lower, void *acc, size_t count);
/* out = lower op upper, out overlapping neither: one pass for a predefined op, a copy and a
 * fold for a user's (which only combines into its second argument). */
void nc_fold_into(const nc_reduction *r, const void *lower, const void *upper, void *out, size_t count);

/* The node's private working memory, kept between calls so its pages stay mapped (a freshly
 * touched page costs ~1.6 us): chunks of the slice algorithms and of ordered, whole vectors
 * (inter-node partial results, Reduce_scatter's full result).  At least `bytes`. */
enum { NC_SCRATCH_CHUNKS, NC_SCRATCH_VECTOR };
char *nc_reduce_scratch(nc_node *n, int which, size_t bytes);

/* First element of node rank q's slice: its block (DELIVER_OWN), else an even share. */
size_t nc_slice_first(const nc_reduce_call *call, int size, int q);

/* Done reading everything up to fragment g: my slot-reuse promise to every other rank. */
static inline void nc_consumed_through(nc_node *n, uint64_t g) { nc_flag_post(&nc_node_ctl(n, n->rank)->cons, g + 1); }

/* A call's elements cut into fragments of whole elements, numbered from the node's fragment
 * counter (taken alike on every rank), published inline or in a ring segment.  A message of
 * up to NODECOLL_REDUCE_INLINE_MAX bytes rides in a chain of inline flags, a flag's worth of
 * elements in each: signal and data in one line transfer per flag, and the flags of a chain
 * fetched together (nc_frag_publish, nc_frag_published). */
typedef struct nc_frag_plan {
    nc_frag_place place;
    size_t per_frag, count, elem; /* elements per fragment, in all, bytes per element */
    uint64_t g0, nfrag;
} nc_frag_plan;

/* At most this many flags in a chain: a call's steps (a node reduction, a forward step, a
 * node Bcast) then never take more than the 64 inline slots between them, and no chain waits
 * for a slot that its own call holds. */
#define NC_CHAIN_FLAGS_MAX (NC_INLINE_SLOTS / 4)

static inline nc_frag_plan nc_plan_fragments(nc_node *n, size_t count, size_t elem, size_t chain_max)
{
    size_t bytes = count * elem;
    int one_flag = bytes <= NC_INLINE_ALIGNED_MAX, chain = 0;
    size_t per_flag = one_flag || bytes > chain_max ? 0 : NC_INLINE_ALIGNED_MAX / elem; /* (no division for 8 B) */
    if (per_flag) chain = count <= per_flag * NC_CHAIN_FLAGS_MAX;
    nc_frag_plan p = {{one_flag || chain, NC_INLINE_HEADER}, 0, count, elem, 0, 0};
    p.per_frag = one_flag ? (count ? count : 1) : chain ? per_flag : n->layout.seg_size / elem;
    p.nfrag = (count + p.per_frag - 1) / p.per_frag;
    p.g0 = nc_take_frags(n, p.nfrag);
    return p;
}
static inline size_t nc_frag_first(const nc_frag_plan *p, uint64_t k) { return (size_t)k * p->per_frag; }
static inline size_t nc_frag_count(const nc_frag_plan *p, uint64_t k)
{
    return nc_min_size(p->per_frag, p->count - nc_frag_first(p, k));
}

/* The lines of node rank `rank`'s inline flags for fragments k0 .. nfrag - 1 of the plan,
 * or, shifted by a call's worth (shift = nfrag), of the next call's, which likely has the
 * same plan; for reading or writing (core/wait.h, nc_flag_touch). */
static inline void nc_frag_touch_chain(const nc_node *n, const nc_frag_plan *p, int rank, uint64_t k0, uint64_t shift,
                                       int write)
{
    for (uint64_t k = k0; k < p->nfrag; k++)
        nc_flag_touch(nc_frag_signal(n, p->place, rank, p->g0 + shift + k), NC_INLINE_HEADER + nc_frag_count(p, k) * p->elem,
                      write);
}

/* For `ready` expressions: node rank `rank` has published fragment g0 + k of plan p.  Seeing
 * a chain's first flag, which its publisher posts last, a reader asks for the lines of all
 * the others at once. */
static inline int nc_frag_published(nc_op *op, nc_node *n, const nc_frag_plan *p, int rank, uint64_t k)
{
    if (!nc_flag_reached(op, nc_frag_signal(n, p->place, rank, p->g0 + k), p->g0 + k + 1)) return 0;
    if (!k && p->place.in_flag) nc_frag_touch_chain(n, p, rank, 1, 0, 0);
    return 1;
}
/* Posts fragment g0 + k of plan p, filled.  In a chain of inline flags the first is posted
 * after the last, and the lines of the next call's chain are then asked for writing
 * (docs/design.md, "Posting without stalling the poster"). */
static inline void nc_frag_publish(nc_node *n, const nc_frag_plan *p, uint64_t k)
{
    uint64_t g = p->g0 + k;
    if (!p->place.in_flag || k) nc_flag_post(nc_frag_signal(n, p->place, n->rank, g), g + 1);
    if (!p->place.in_flag || k + 1 < p->nfrag) return;
    nc_flag_post(nc_frag_signal(n, p->place, n->rank, p->g0), p->g0 + 1);
    nc_frag_touch_chain(n, p, n->rank, 0, p->nfrag, 1);
}

/* Reduce_scatter's blocks: first[q] .. first[q+1] is comm rank q's, in elements (size + 1
 * entries, to free). */
size_t *nc_block_starts(const size_t *counts, int size);
/* Copies rank's block of a whole result vector to recv. */
void nc_keep_block(char *recv, const char *whole, const size_t *first, int rank, size_t elem);

/* The call as an algorithm that delivers whole vectors runs it: DELIVER_OWN becomes an
 * Allreduce into the node's vector scratch, of which nc_keep_own_block keeps my block. */
nc_reduce_call nc_whole_vector_call(nc_node *n, const nc_reduce_call *call);
void nc_keep_own_block(const nc_node *n, const nc_reduce_call *call, const nc_reduce_call *whole);

/* ---- steps ------------------------------------------------------------------------------ */

/* The node reduction of a call, by the node algorithm the registry chooses for `coll` and
 * the vector's bytes (a node of one rank copies: counted as flat). */
typedef struct nc_node_reduce_step {
    int pc;
    nc_coll_id coll;
    const nc_algorithm *alg; /* the node algorithm (its id: for the caller's counters) */
    nc_heap_vote vote;       /* whether every rank's buffers are in its heap, where the slices need that (no
                              * CMA) or run only then (Reduce) */
    _Alignas(16) unsigned char alg_state[NC_REDUCE_STEP_STATE_BYTES]; /* an nc_reduce_head first */
} nc_node_reduce_step;

/* The call of the node algorithm the step runs, at the head of its state. */
static inline nc_reduce_head *nc_node_reduce_head(nc_node_reduce_step *st) { return (nc_reduce_head *)(void *)st->alg_state; }

static inline void nc_node_reduce_setup(nc_node_reduce_step *st, nc_coll_id coll, const nc_reduce_call *call)
{
    st->pc = 0;
    st->coll = coll;
    *nc_node_reduce_head(st) = (nc_reduce_head){0, *call};
}
nc_step nc_node_reduce_progress(nc_op *op, nc_node_reduce_step *st);

/* Copies `bytes` from node rank `from`'s src to node rank `to`'s dst through from's ring;
 * every rank of the node takes part (it numbers the fragments and consumes them). */
typedef struct nc_node_forward_step {
    int pc;
    int from, to;
    const char *src;
    char *dst;
    size_t bytes;
    nc_frag_plan p;
    uint64_t k, g;
    size_t off, len;
} nc_node_forward_step;

void nc_node_forward_setup(nc_node_forward_step *st, int from, int to, const char *src, char *dst, size_t bytes);
nc_step nc_node_forward_progress(nc_op *op, nc_node_forward_step *st);

/* Scan / Exscan along the node's ranks (chain.c): prefix(r) = prefix(r-1) op x(r). */
typedef struct nc_scan_chain_step {
    int pc;
    const char *send;
    char *recv;
    size_t count;
    const nc_reduction *red;
    int exclusive;
    nc_frag_plan p;
    uint64_t k, g;
    size_t cnt, off, len;
    char *mine;
} nc_scan_chain_step;

void nc_scan_chain_setup(nc_scan_chain_step *st, const nc_args *a);
nc_step nc_scan_chain_progress(nc_op *op, nc_scan_chain_step *st);

/* ---- the fan-in tree (tree.c), also flat's fan-in to a root -------------------------------
 * Over ranges of the node's topology groups (core/hier.h; NULL: contiguous rank ranges)
 * rooted at node rank `top`: a parent folds its children's published partial results and its
 * own input into its own slot, pipelined in ring fragments (a chain of inline flags goes
 * whole); the result goes to node rank `root`'s recv (copied from top's slot when root is not
 * top; call->deliver is not read). */
typedef struct nc_fanin {
    int pc;
    const nc_reduce_call *call;
    const nc_hier *hier;
    int radix, root, top_rank;
    nc_tree_pos t;
    int top, top_direct, i, child;
    int root_copies; /* I am the root but not the top: I copy the result from the top's slots */
    nc_frag_plan p;
    uint64_t k, g;
    size_t cnt, off, len;
    char *acc;
} nc_fanin;

void nc_fanin_setup(nc_fanin *st, const nc_reduce_call *call, const nc_hier *hier, int radix, int top, int root);
nc_step nc_fanin_progress(nc_op *op, nc_fanin *st);

#endif
