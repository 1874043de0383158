/* The Bcast family's shared pieces (src/coll/bcast/): the fan-out tree, the arguments every
 * node algorithm receives, and the ring pipeline that the single-copy algorithm also runs
 * when its root's data is a derived datatype. */
#ifndef NC_BCAST_FAMILY_H
#define NC_BCAST_FAMILY_H

#include "../algorithms.h"
#include "../data.h"
#include "../frag.h"
#include "../steps.h"

/* A rank's place in the node's fan-out tree of `radix` rooted at node rank `root`, shaped by
 * the node's topology groups (core/hier.h: the heap; parent and children as node ranks,
 * parent -1 at the root). */
typedef nc_tree_pos nc_bcast_tree;

static inline nc_bcast_tree nc_bcast_tree_at(nc_node *n, int root, int radix)
{
    return nc_node_tree(n, n->hier, root, radix, NC_TREE_HEAP);
}
/* Node rank of my child i. */
static inline int nc_bcast_child(const nc_node *n, const nc_bcast_tree *t, int i)
{
    return nc_tree_child(n->hier, n->size, t, i);
}
/* For `ready` expressions: every child of t has consumed the fragments below frag_end. */
int nc_bcast_children_done(nc_op *op, nc_node *n, const nc_bcast_tree *t, uint64_t frag_end);

/* What a node Bcast algorithm is asked to do: node rank `root` sends `bytes` of `data`.
 * `announced`: the root announced the byte count in the inline flag of the call's first
 * fragment (and the message with it when it fits there). */
typedef struct nc_bcast_call {
    nc_data *data;
    size_t bytes;
    int root;
    int announced;
} nc_bcast_call;

/* Every node Bcast algorithm's state begins with this head (its pc first), so that the node
 * step can hand an algorithm its call before planning it. */
typedef struct nc_bcast_head {
    int pc;
    nc_bcast_call call;
} nc_bcast_head;

/* The ring pipeline (shm.c): fragments [g0, g0 + frags) through the tree's rings, or its
 * inline flags when `place` says so. */
typedef struct nc_bcast_ring {
    nc_bcast_head head;
    nc_bcast_tree tree;
    nc_frag_place place;
    int carried; /* the announcement carried the message (all its inline flags): the root has
                  * nothing left to send */
    uint64_t g0, frags, g, k, h;
    size_t off, len;
    const char *from_parent;
    char *slot;
} nc_bcast_ring;

/* Sets up a ring pipeline for `call` over `tree`, from fragment g0. */
void nc_bcast_ring_setup(nc_bcast_ring *st, const nc_bcast_call *call, const nc_bcast_tree *tree, nc_frag_place place,
                         uint64_t g0);
nc_step nc_bcast_ring_run(nc_op *op, nc_bcast_ring *st);
/* Where a message of `bytes` travels: a chain of inline flags up to NODECOLL_BCAST_INLINE_MAX
 * (one flag always), else the ring. */
nc_frag_place nc_bcast_place(const nc_comm *c, size_t bytes);
/* Fragments a call of `bytes` takes in `place`. */
uint64_t nc_bcast_ring_frags(const nc_node *n, nc_frag_place place, size_t bytes);

#endif
