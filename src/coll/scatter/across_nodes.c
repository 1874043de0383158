/* Scatter(v) across nodes (Zhou et al.'s node-then-bridge shape).
 *
 * Root's node: the root publishes a span for every rank (empty ones included, so its leader
 * learns every length); its node's members read their own span, and the leader reads every
 * other node's blocks into a node-sorted buffer and sends each node its region over the
 * bridge.  Other nodes: the members tell their leader how much they expect (round 1), the
 * leader receives its node's region from the root's leader and publishes it with a span
 * per member (round 2), and the members read their part. */
#include "../algorithms.h"
#include "../move.h"
#include "../steps.h"

typedef struct scatter_state {
    int pc;
    int in_slot, r;
    uint64_t seq, seq2;
    size_t total;
    size_t *sorted;  /* the root's leader: node-sorted offsets of the root's blocks */
    nc_xfer *sends;  /* the root's leader: a region for each other node */
    char *region;    /* the root's leader: the other nodes' blocks; elsewhere: my node's */
    nc_pub pub;
    nc_move_offer_step offer;
    nc_bridge_req req;
} scatter_state;
NC_STATE_FITS(scatter_state);


/* The root's leader: every other node's blocks, node-sorted, read out of the root's
 * publication (after which the root may reuse its buffer while I talk to the other nodes). */
static void leader_takes_other_nodes(nc_comm *c, scatter_state *st, int root)
{
    size_t *lens = (size_t *)nc_move_scratch(c, NC_MOVE_TABLES, nc_carved(sizeof(size_t) * (size_t)c->size) +
                                                                     nc_carved(sizeof(size_t) * ((size_t)c->size + 1)) +
                                                                     nc_carved(sizeof(nc_xfer) * (size_t)c->bridge.size));
    char *at = (char *)lens + nc_carved(sizeof(size_t) * (size_t)c->size);
    st->sorted = nc_carve(&at, sizeof(size_t) * ((size_t)c->size + 1));
    st->sends = nc_carve(&at, sizeof(nc_xfer) * (size_t)c->bridge.size);
    for (int i = 0; i < c->size; i++) lens[i] = st->pub.table[i].len;
    nc_vec by_len = {.lens = lens};
    nc_move_sorted_offsets(c, &by_len, st->sorted);
    st->region = nc_move_scratch(c, NC_MOVE_DATA, st->sorted[c->size]);
    for (int i = 0; i < c->size; i++)
        if (c->node_of[i] != c->node_of[root]) nc_move_read_span(c, &st->pub, i, st->region + st->sorted[i], lens[i]);
    nc_move_done(&c->node, st->seq);
}

static int forward_regions(nc_comm *c, scatter_state *st, int root_node, nc_bridge_req *r)
{
    int nsend = 0;
    for (int k = 0; k < c->bridge.size; k++) {
        size_t bytes = nc_move_node_bytes(c, st->sorted, k);
        if (k != root_node && bytes) st->sends[nsend++] = (nc_xfer){k, st->region + nc_move_node_off(c, st->sorted, k), bytes};
    }
    return c->bridge.exchange(c->bridge.ctx, st->sends, nsend, NULL, 0, r);
}

/* Another node's leader, once every member has said how much it expects. */
static void leader_counts_node(nc_comm *c, const nc_args *a, scatter_state *st)
{
    st->total = a->move.recv_bytes;
    for (int r = 1; r < c->node.size; r++) st->total += nc_move_pub(c, r).bytes;
    nc_move_done(&c->node, st->seq);
    st->region = nc_move_scratch(c, NC_MOVE_DATA, st->total);
}

static int receive_region(nc_comm *c, scatter_state *st, int root_node, nc_bridge_req *r)
{
    nc_xfer from_root = {root_node, st->region, st->total};
    return c->bridge.exchange(c->bridge.ctx, NULL, 0, &from_root, 1, r);
}

/* ... and once it holds the region: a span for each member (lengths as the members
 * announced them in round 1, still on their flag lines), my own part, the publication. */
static int leader_offers_region(nc_comm *c, const nc_args *a, scatter_state *st)
{
    nc_node *n = &c->node;
    int first = c->node_start[c->node_of[c->rank]], nreaders = 0;
    char *slot;
    nc_span *table = nc_move_area(c, &slot);
    size_t at = 0;
    for (int r = 0; r < n->size; r++) {
        size_t len = r ? nc_move_pub(c, r).bytes : a->move.recv_bytes;
        table[c->node_members[first + r]] = (nc_span){at, len};
        at += len;
        if (r && len) n->move_readers[nreaders++] = r;
    }
    if (a->move.recv_bytes) nc_data_unpack(a->move.recv, 0, st->region, a->move.recv_bytes);
    int in_slot = nc_move_put(c, st->seq2, slot, st->region, st->total);
    nc_move_release(n, st->seq2, n->move_readers, nreaders);
    return in_slot;
}

static nc_step progress(nc_op *op, void *state)
{
    static const int leader_rank = 0;
    scatter_state *st = state;
    nc_comm *c = op->c;
    nc_node *n = &c->node;
    const nc_args *a = op->args;
    int is_root = c->rank == a->root, leader = nc_comm_is_leader(c), root_node = c->node_of[a->root];
    NC_BEGIN(st);
    st->seq = nc_take_round(n);
    if (c->node_of[c->rank] == root_node) {
        if (is_root) {
            NC_AWAIT(st, nc_move_readers_done(op, n));
            st->in_slot = nc_move_publish_blocks(c, st->seq, a->move.send_vec, a->root, 1);
            nc_move_keep_own_block(c, a);
        }
        if (a->move.recv_bytes || leader) {
            NC_AWAIT(st, nc_move_published(op, c, c->node_rank_of[a->root], st->seq, &st->pub));
            if (!is_root) nc_move_read_span_data(c, &st->pub, c->rank, a->move.recv, a->move.recv_bytes);
            if (leader) {
                leader_takes_other_nodes(c, st, a->root);
                NC_BRIDGE_STEP(op, st, &st->req, forward_regions(c, st, root_node, op->bridge_req));
            }
        }
        nc_move_done(n, st->seq);
        if (is_root && !st->in_slot) NC_AWAIT(st, nc_move_readers_done(op, n));
    } else if (!leader) {
        nc_move_offer_setup(&st->offer, st->seq, NULL, a->move.recv_bytes, &leader_rank, 1);
        NC_AWAIT_STEP(st, nc_move_offer_progress(op, &st->offer));
        st->seq2 = nc_take_round(n);
        if (a->move.recv_bytes) {
            NC_AWAIT(st, nc_move_published(op, c, leader_rank, st->seq2, &st->pub));
            nc_move_read_span_data(c, &st->pub, c->rank, a->move.recv, a->move.recv_bytes);
        }
        nc_move_done(n, st->seq2);
    } else {
        for (st->r = 1; st->r < n->size; st->r++) NC_AWAIT(st, nc_move_published(op, c, st->r, st->seq, NULL));
        leader_counts_node(c, a, st);
        if (st->total) NC_BRIDGE_STEP(op, st, &st->req, receive_region(c, st, root_node, op->bridge_req));
        st->seq2 = nc_take_round(n);
        NC_AWAIT(st, nc_move_readers_done(op, n));
        st->in_slot = leader_offers_region(c, a, st);
        if (!st->in_slot) NC_AWAIT(st, nc_move_readers_done(op, n));
    }
    if (leader) nc_stats_count(a->coll, NC_ALG_BRIDGE, a->move.recv_bytes);
    NC_END(st);
}

const nc_algorithm nc_scatter_across_nodes = {NC_ALG_CMA, nc_move_across_nodes, NULL, progress, 0};
