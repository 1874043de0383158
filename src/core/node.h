/* A node communicator's view of its shared segment: who I am, where everybody's flags and
 * rings are, and the sequence counters every rank advances identically (collectives on a
 * communicator are ordered, so equal counters need no agreement). */
#ifndef NC_NODE_H
#define NC_NODE_H

#include <stdint.h>
#include <sys/types.h>

#include "hier.h"
#include "segment.h"
#include "single_copy.h"
#include "tree.h"
#include "wait.h"

/* Who read the last fragment published into one of my ring slots, so the slot is refilled
 * only after those readers are done with it. */
typedef struct nc_slot_use {
    uint64_t frag_end; /* readers must have consumed up to here (0: never used) */
    nc_tree_pos tree;  /* my place in the Bcast tree they read through: my children */
    int any_reader;    /* or any rank of the node may have read it (reductions) */
} nc_slot_use;

/* What a staging copy in the shared heap holds (coll/heap_only.h). */
typedef enum { NC_STAGE_BCAST, NC_STAGE_MOVE, NC_STAGE_KINDS } nc_stage_kind;

/* The last trees this rank took its place in (nc_node_tree). */
#define NC_TREE_CACHE 4
typedef struct nc_tree_cache {
    nc_tree_pos pos[NC_TREE_CACHE];
    const nc_hier *hier[NC_TREE_CACHE];
    unsigned next;
} nc_tree_cache;

typedef struct nc_node {
    int size, rank;
    void *base;
    nc_layout layout;
    nc_wait_policy wait;
    int cma;            /* single-copy reads work between all ranks of this node */
    int heap;           /* every rank has a shared heap and maps every other's (core/heap.h) */
    nc_hier *hier;      /* the groups the trees follow (NODECOLL_TOPO_LEVELS); NULL: flat */
    nc_tree_cache trees; /* (every call plans its tree; the same few trees come back) */
    nc_peer *peers;     /* per node rank, for single-copy transfers */
    uint64_t sync_seq;  /* barriers and fan-in/fan-out signals */
    uint64_t frag;      /* pipeline fragments, summed over all calls */
    nc_slot_use *slot_use;                 /* per ring segment */
    nc_slot_use inline_use[NC_INLINE_SLOTS]; /* per inline fragment slot */
    uint64_t *cons_seen; /* per node rank: last value seen in its cons flag (saves re-reading a remote line) */
    uint64_t cons_floor; /* every other rank is known to have consumed the fragments below this */
    /* Private working memory of the reductions, kept between calls (a freshly touched page
     * costs ~1.6 us on the development machine): [0] chunks of the slice algorithm,
     * [1] whole vectors (inter-node partial results, Reduce_scatter's full result). */
    char *scratch[2];
    size_t scratch_bytes[2];
    /* Node-shared handles: which flag sets of the control pages are taken, and the last call
     * number of the handle that used each set (the next handle there continues from it, so
     * its flags never go back).  Changed only by collective create/free: alike on all ranks. */
    uint64_t shared_seq[NC_SHARED_SLOTS];
    unsigned char shared_used[NC_SHARED_SLOTS];
    uint64_t move_seq;   /* data-movement rounds (coll/move.h) */
    uint64_t move_readers_seq; /* round of my last release (its readers may still read) */
    int move_nreaders;   /* how many of them are not known to be done */
    int *move_readers;   /* node ranks that read my move area in that round */
    /* Working memory of the data-movement algorithms, kept between calls (coll/move.h):
     * [0] tables, [1] data. */
    char *move_scratch[2];
    size_t move_scratch_bytes[2];
    /* Copies in my shared heap of what peers must reach on a node without CMA (coll/heap_only.h),
     * kept between calls: per kind. */
    char *stage[NC_STAGE_KINDS];
    size_t stage_bytes[NC_STAGE_KINDS];
} nc_node;

/* Whether the node's other ranks (if any) reach my [p, p + len) with single copy. */
static inline int nc_node_reachable(const nc_node *n, const void *p, size_t len)
{
    return n->size == 1 || n->cma || (n->heap && nc_heap_holds(p, len));
}

/* My place in the tree of groups h (NULL: flat), root, radix and shape: the one computed for
 * the last calls if it is among them. */
static inline nc_tree_pos nc_node_tree(nc_node *n, const nc_hier *h, int root, int radix, nc_tree_shape shape)
{
    nc_tree_cache *c = &n->trees;
    radix = radix < 1 ? 1 : radix; /* (as nc_tree_place keeps it: never 0, as an unused entry's) */
    for (int i = 0; i < NC_TREE_CACHE; i++) {
        const nc_tree_pos *t = &c->pos[i];
        if (t->radix == radix && t->root == root && t->shape == (signed char)shape && c->hier[i] == h) return *t;
    }
    unsigned at = c->next++ % NC_TREE_CACHE;
    c->pos[at] = nc_tree_place(h, n->size, n->rank, root, radix, shape);
    c->hier[at] = h;
    return c->pos[at];
}

static inline nc_rank_ctl *nc_node_ctl(const nc_node *n, int rank)
{
    return nc_segment_ctl(n->base, &n->layout, rank);
}

static inline char *nc_node_ring(const nc_node *n, int rank, uint64_t frag)
{
    return nc_segment_ring(n->base, &n->layout, rank, frag);
}

static inline char *nc_node_move_area(const nc_node *n, int rank)
{
    return nc_segment_move_area(n->base, &n->layout, rank);
}

#endif
