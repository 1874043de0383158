/* The node's shared accounting, claimed and released only here: the sequence numbers every
 * rank of a node takes alike (barrier numbers, pipeline fragments, data-movement rounds),
 * the ring and inline slots that fragments are published in, and the rule for reusing a
 * slot; the meaning of each published word is listed in docs/design.md ("The shared
 * segment").  Operations on a communicator run in call order on every rank (engine.h), so
 * taking numbers in program order gives every rank the same ones. */
#ifndef NC_LEDGER_H
#define NC_LEDGER_H

#include "frag.h"

/* The next barrier number (fan-in, fan-out and dissemination flags). */
static inline uint64_t nc_take_sync(nc_node *n) { return ++n->sync_seq; }

/* `count` pipeline fragments: the first one's number (fragment g uses ring segment g mod
 * nseg, or inline slot g mod NC_INLINE_SLOTS). */
static inline uint64_t nc_take_frags(nc_node *n, uint64_t count)
{
    uint64_t first = n->frag;
    n->frag += count;
    return first;
}

/* The next data-movement round (move_pub / move_done and the move area; coll/move.h). */
static inline uint64_t nc_take_round(nc_node *n) { return ++n->move_seq; }

struct nc_op;

/* ---- slots ---------------------------------------------------------------------------
 * A fragment is published in a slot of its publisher (a ring segment or an inline flag);
 * before the slot takes a new fragment, the readers of its previous one must be done (their
 * `cons` flags have passed it).  Who those readers were is recorded per slot when it is
 * taken: the children of a Bcast tree, or any rank of the node (reductions). */

/* For `ready` expressions (engine.h): whether my slot for fragment g may be refilled; else
 * op->wait names the reader not done yet, as a patient wait for an inline slot (engine.h).
 * (Inline up to the readers' check: every small Bcast and reduction asks.) */
int nc_slot_readers_done(struct nc_op *op, nc_node *n, const nc_slot_use *use, int patient);
static inline int nc_slot_free(struct nc_op *op, nc_node *n, nc_frag_place p, uint64_t g)
{
    const nc_slot_use *use = nc_frag_use(n, p, g);
    return use->frag_end <= n->cons_floor || nc_slot_readers_done(op, n, use, p.in_flag);
}
/* Takes my (free) slot for fragment g: its readers will be my children in the Bcast tree
 * `tree`, or any rank when tree is NULL.  Its data area. */
static inline char *nc_slot_take(nc_node *n, nc_frag_place p, uint64_t g, const nc_tree_pos *tree)
{
    nc_slot_use *use = nc_frag_use(n, p, g);
    use->frag_end = g + 1;
    use->any_reader = tree == NULL;
    if (tree) use->tree = *tree;
    return nc_frag_data(n, p, n->rank, g);
}

/* For `ready` expressions: whether node rank `rank` has consumed every fragment below
 * frag_end (its `cons`; the last value seen is remembered, so the remote line is read again
 * only when that value is not enough, about once per ring cycle). */
int nc_consumed(struct nc_op *op, nc_node *n, int rank, uint64_t frag_end);
/* The same for every other rank of the node. */
int nc_all_consumed(struct nc_op *op, nc_node *n, uint64_t frag_end);

#endif
