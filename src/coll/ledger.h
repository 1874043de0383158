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

#endif
