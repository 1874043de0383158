/* Bcast across nodes: the root's node first, then the leaders over the bridge, then every
 * other node from its leader.  On one node it is the node step alone.  A leader hands the
 * bridge contiguous bytes: it stages a derived datatype. */
#include <stdlib.h>

#include "bcast.h"
#include "../../core/fatal.h"

typedef struct hierarchy_state {
    int pc;
    int root_node, node_root, on_root_node, staged;
    nc_data flat;
    nc_data *data; /* the data the steps move: the caller's, or `flat` */
    nc_bridge_req req;
    nc_node_bcast_step node;
} hierarchy_state;
NC_STATE_FITS(hierarchy_state);

static void plan(nc_op *op, void *state)
{
    hierarchy_state *st = state;
    const nc_comm *c = op->c;
    int root = op->args->root;
    st->root_node = c->node_of[root];
    st->on_root_node = c->node_of[c->rank] == st->root_node;
    st->node_root = st->on_root_node ? c->node_rank_of[root] : 0;
    st->staged = !nc_data_is_bytes(op->args->bcast.data) && nc_comm_multinode(c) && nc_comm_is_leader(c);
}

static nc_step node_step(nc_op *op, hierarchy_state *st)
{
    nc_step s = nc_node_bcast_progress(op, &st->node);
    if (s == NC_DONE) nc_stats_count(NC_COLL_BCAST, st->node.alg->id, op->args->bcast.bytes);
    return s;
}

static nc_step progress(nc_op *op, void *state)
{
    hierarchy_state *st = state;
    nc_comm *c = op->c;
    const nc_args *a = op->args;
    size_t bytes = a->bcast.bytes;
    if (!bytes) return NC_DONE; /* (a nonblocking call of nothing) */
    NC_BEGIN(st);
    st->data = a->bcast.data;
    if (st->staged) {
        st->flat = nc_data_bytes(nc_alloc_or_die(bytes));
        if (c->rank == a->root) nc_data_pack(a->bcast.data, 0, st->flat.base, bytes);
        st->data = &st->flat;
    }
    /* On the root's node the data flows node -> bridge, elsewhere bridge -> node. */
    if (st->on_root_node && c->node.size > 1) {
        nc_node_bcast_setup(&st->node, st->data, bytes, st->node_root);
        NC_AWAIT_STEP(st, node_step(op, st));
    }
    if (nc_comm_multinode(c) && nc_comm_is_leader(c)) {
        NC_BRIDGE_STEP(op, st, &st->req, c->bridge.bcast(c->bridge.ctx, st->data->base, bytes, st->root_node, op->bridge_req));
        nc_stats_count(NC_COLL_BCAST, NC_ALG_BRIDGE, bytes);
    }
    if (!st->on_root_node && c->node.size > 1) {
        nc_node_bcast_setup(&st->node, st->data, bytes, st->node_root);
        NC_AWAIT_STEP(st, node_step(op, st));
    }
    if (st->staged) {
        if (c->rank != a->root) nc_data_unpack(a->bcast.data, 0, st->flat.base, bytes);
        free(st->flat.base);
    }
    NC_END(st);
}

static int always(const nc_comm *c, const nc_args *a) { return 1; }

const nc_algorithm nc_bcast_hierarchy = {NC_ALG_HIERARCHY, always, plan, progress, 1};

int nc_bcast(nc_comm *c, nc_data *l, size_t bytes, int root)
{
    if (!bytes) return 0;
    nc_args a = {.coll = NC_COLL_BCAST, .root = root, .bcast = {l, bytes}};
    return nc_collective(c, &a, bytes);
}
