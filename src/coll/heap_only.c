#include "heap_only.h"

#include "ledger.h"
#include "../core/fatal.h"
#include "../core/heap.h"
#include "../core/team.h"

char *nc_stage(nc_node *n, nc_stage_kind kind, size_t bytes)
{
    if (n->stage[kind] && n->stage_bytes[kind] >= bytes) return n->stage[kind];
    nc_heap_release(n->stage[kind]);
    n->stage[kind] = nc_heap_alloc(bytes ? bytes : 1);
    if (!n->stage[kind])
        nc_fatal("the shared heap has no room for a staging copy of %zu bytes of a buffer outside it "
                 "(raise NODECOLL_HEAP_SIZE, or put the buffer in the heap; docs/design.md, \"The shared heap\")",
                 bytes);
    n->stage_bytes[kind] = bytes;
    return n->stage[kind];
}

const char *nc_stage_reachable(nc_node *n, nc_stage_kind kind, const void *p, size_t len)
{
    if (!len || nc_node_reachable(n, p, len)) return p;
    char *copy = nc_stage(n, kind, len);
    nc_par_copy(copy, p, len);
    return copy;
}

void nc_stage_release_kind(nc_node *n, nc_stage_kind kind)
{
    nc_heap_release(n->stage[kind]);
    n->stage[kind] = NULL;
    n->stage_bytes[kind] = 0;
}

void nc_stage_release(nc_node *n)
{
    for (int k = 0; k < NC_STAGE_KINDS; k++) nc_stage_release_kind(n, (nc_stage_kind)k);
}

/* ---- the vote ----------------------------------------------------------------------------------- */

static const nc_frag_place ballot = {1, NC_INLINE_HEADER};

void nc_heap_vote_setup(nc_heap_vote *st, int mine)
{
    st->pc = 0;
    st->mine = mine;
}

nc_step nc_heap_vote_progress(nc_op *op, nc_heap_vote *st)
{
    nc_node *n = &op->c->node;
    NC_BEGIN(st);
    st->g = nc_take_frags(n, 1);
    NC_AWAIT(st, nc_slot_free(op, n, ballot, st->g));
    *nc_slot_take(n, ballot, st->g, NULL) = (char)st->mine;
    nc_flag_post(nc_frag_signal(n, ballot, n->rank, st->g), st->g + 1);
    st->all = st->mine;
    for (st->q = 0; st->q < n->size; st->q++) {
        if (st->q == n->rank) continue;
        NC_AWAIT(st, nc_flag_reached(op, nc_frag_signal(n, ballot, st->q, st->g), st->g + 1));
        st->all &= *nc_frag_data(n, ballot, st->q, st->g);
    }
    nc_flag_post(&nc_node_ctl(n, n->rank)->cons, st->g + 1); /* (every rank consumes every fragment) */
    NC_END(st);
}
