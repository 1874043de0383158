/* Scan / Exscan across nodes that hold consecutive ranks (else ordered.c runs): each node
 * scans its own ranks (the chain), its last rank's total goes to the leader through the
 * ring, the leaders exscan the totals through the host MPI, and every node but the first
 * broadcasts its offset, which each rank folds in front of its prefix.  Counted as the
 * chain, as on one node. */
#include "reduce.h"

typedef struct scan_hierarchy_state {
    int pc;
    char *total, *offset; /* my node's total; the totals of the nodes before mine */
    nc_bridge_req req;
    union {
        nc_scan_chain_step chain;
        nc_node_forward_step forward;
        nc_node_bcast_step bcast;
    } step;
} scan_hierarchy_state;
NC_STATE_FITS(scan_hierarchy_state);

/* The last rank's part in its node's total: its inclusive prefix (an exclusive one: folded
 * with its input, kept aside before an in-place chain overwrote it). */
static void take_total(const scan_hierarchy_state *st, const nc_node *n, const nc_args *a)
{
    int exclusive = a->coll == NC_COLL_EXSCAN;
    if (n->rank != n->size - 1 || n->rank == 0) return;
    if (exclusive) nc_fold(a->reduce.red, a->reduce.recv, st->total, a->reduce.count);
    else nc_copy_bytes(st->total, a->reduce.recv, a->reduce.count * a->reduce.red->elem_size);
}

/* My prefix across nodes: the offset in front of my node's prefix. */
static void apply_offset(const scan_hierarchy_state *st, const nc_node *n, const nc_args *a)
{
    if (a->coll == NC_COLL_EXSCAN && n->rank == 0) nc_copy_bytes(a->reduce.recv, st->offset, a->reduce.count * a->reduce.red->elem_size);
    else nc_fold(a->reduce.red, st->offset, a->reduce.recv, a->reduce.count);
}

static nc_step progress(nc_op *op, void *state)
{
    scan_hierarchy_state *st = state;
    nc_comm *c = op->c;
    nc_node *n = &c->node;
    const nc_args *a = op->args;
    size_t bytes = a->reduce.count * a->reduce.red->elem_size;
    NC_BEGIN(st);
    st->total = nc_reduce_scratch(n, NC_SCRATCH_VECTOR, 2 * bytes);
    st->offset = st->total + bytes;
    if (n->rank == n->size - 1) nc_copy_bytes(st->total, a->reduce.send, bytes); /* before an in-place chain overwrites it */
    if (n->size > 1) {
        nc_scan_chain_setup(&st->step.chain, a);
        NC_AWAIT_STEP(st, nc_scan_chain_progress(op, &st->step.chain));
    } else if (a->coll == NC_COLL_SCAN && a->reduce.send != a->reduce.recv) {
        nc_copy_bytes(a->reduce.recv, a->reduce.send, bytes);
    }
    take_total(st, n, a);
    if (n->size > 1) {
        nc_node_forward_setup(&st->step.forward, n->size - 1, 0, st->total, st->total, bytes);
        NC_AWAIT_STEP(st, nc_node_forward_progress(op, &st->step.forward));
    }
    if (nc_comm_is_leader(c)) {
        NC_BRIDGE_STEP(op, st, &st->req,
                       c->bridge.exscan(c->bridge.ctx, st->total, st->offset, a->reduce.count, a->reduce.red, op->bridge_req));
        nc_stats_count(a->coll, NC_ALG_BRIDGE, bytes);
    }
    if (c->node_of[c->rank] != 0) { /* the first node's prefixes are already global */
        if (n->size > 1) {
            nc_node_bcast_setup_bytes(&st->step.bcast, st->offset, bytes, 0);
            NC_AWAIT_STEP(st, nc_node_bcast_progress(op, &st->step.bcast));
        }
        apply_offset(st, n, a);
    }
    NC_END(st);
}

static int across_nodes(const nc_comm *c, const nc_args *a) { return nc_comm_multinode(c); }

const nc_algorithm nc_scan_hierarchy = {NC_ALG_CHAIN, across_nodes, NULL, progress, 0};
