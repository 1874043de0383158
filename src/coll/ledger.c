/* The node's accounting (ledger.h): slot reuse. */
#include "ledger.h"

#include "engine.h"
#include "../core/hier.h"

int nc_consumed(nc_op *op, nc_node *n, int rank, uint64_t frag_end)
{
    if (n->cons_seen[rank] >= frag_end) return 1;
    const nc_flag *cons = &nc_node_ctl(n, rank)->cons;
    n->cons_seen[rank] = nc_flag_read(cons);
    return n->cons_seen[rank] >= frag_end || nc_flag_reached(op, cons, frag_end);
}

/* (Once all have, the lowest value seen is a floor that answers the next checks inline.) */
int nc_all_consumed(nc_op *op, nc_node *n, uint64_t frag_end)
{
    uint64_t floor = UINT64_MAX;
    for (int r = 0; r < n->size; r++) {
        if (r == n->rank) continue;
        if (!nc_consumed(op, n, r, frag_end)) return 0;
        if (n->cons_seen[r] < floor) floor = n->cons_seen[r];
    }
    if (floor != UINT64_MAX && floor > n->cons_floor) n->cons_floor = floor;
    return 1;
}

/* The readers of a slot's last fragment: my children in that Bcast's tree. */
static int tree_children_consumed(nc_op *op, nc_node *n, const nc_tree_pos *t, uint64_t frag_end)
{
    for (int i = 0; i < t->children; i++)
        if (!nc_consumed(op, n, nc_tree_child(n->hier, n->size, t, i), frag_end)) return 0;
    return 1;
}

int nc_slot_readers_done(nc_op *op, nc_node *n, const nc_slot_use *use, int patient)
{
    int done = use->any_reader ? nc_all_consumed(op, n, use->frag_end)
                               : tree_children_consumed(op, n, &use->tree, use->frag_end);
    if (!done) op->wait.patient = patient;
    return done;
}
