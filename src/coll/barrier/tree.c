/* Barrier: check-in/check-out and the fan-in/fan-out tree (Bierbaum et al.; the flat form is
 * the tree whose radix is the node size).  The tree follows the node's topology groups
 * (core/hier.h: each group's leader gathers its group, then meets the leaders of the level
 * above), the flat form excepted.  A parent waits for its children's `fanin`, then
 * posts its own; across nodes the leaders meet through the bridge between the node's fan-in
 * and fan-out; a child waits for its parent's `fanout`, then posts its own.  No rank leaves
 * before a release for its sequence number, which is posted only after the poster saw its
 * whole subtree arrive; values only grow, so a later release implies this one. */
#include "../algorithms.h"
#include "../ledger.h"
#include "../registry.h"

typedef struct tree_state {
    int pc;
    int i;
    const nc_hier *hier;
    nc_tree_pos in, out; /* my place in the fan-in and in the fan-out tree (root: node rank 0) */
    uint64_t seq;
    nc_bridge_req req;
} tree_state;
NC_STATE_FITS(tree_state);

static void plan_trees(nc_op *op, tree_state *st, const nc_hier *hier, int fanin, int fanout)
{
    nc_node *n = &op->c->node;
    st->hier = hier;
    st->in = nc_node_tree(n, hier, 0, fanin, NC_TREE_HEAP);
    st->out = nc_node_tree(n, hier, 0, fanout, NC_TREE_HEAP);
}

static void plan_tree(nc_op *op, void *state)
{
    const nc_comm *c = op->c;
    plan_trees(op, state, c->node.hier, nc_registry_radix(c, NC_COLL_BARRIER, 0, c->cfg.barrier_fanin),
               nc_registry_radix(c, NC_COLL_BARRIER, 0, c->cfg.barrier_fanout));
}

static void plan_flat(nc_op *op, void *state) { plan_trees(op, state, NULL, op->c->node.size, op->c->node.size); }

static nc_step progress(nc_op *op, void *state)
{
    tree_state *st = state;
    nc_comm *c = op->c;
    nc_node *n = &c->node;
    NC_BEGIN(st);
    st->seq = nc_take_sync(n);
    for (st->i = 0; st->i < st->in.children; st->i++)
        NC_AWAIT(st, nc_flag_reached(op, &nc_node_ctl(n, nc_tree_child(st->hier, n->size, &st->in, st->i))->fanin,
                                     st->seq));
    if (n->rank) nc_flag_post(&nc_node_ctl(n, n->rank)->fanin, st->seq);
    if (nc_comm_multinode(c) && nc_comm_is_leader(c)) {
        NC_BRIDGE_STEP(op, st, &st->req, c->bridge.barrier(c->bridge.ctx, op->bridge_req));
        nc_stats_count(NC_COLL_BARRIER, NC_ALG_BRIDGE, 0);
    }
    if (n->rank) NC_AWAIT(st, nc_flag_reached(op, &nc_node_ctl(n, st->out.parent)->fanout, st->seq));
    if (st->out.children) nc_flag_post(&nc_node_ctl(n, n->rank)->fanout, st->seq);
    NC_END(st);
}

static int always(const nc_comm *c, const nc_args *a) { return 1; }

const nc_algorithm nc_barrier_tree = {NC_ALG_TREE, always, plan_tree, progress, 0};
const nc_algorithm nc_barrier_flat = {NC_ALG_FLAT, always, plan_flat, progress, 0};
