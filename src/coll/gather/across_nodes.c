/* Gather(v) across nodes (Zhou et al.'s node-then-bridge shape): each node's blocks are
 * collected at its leader (node-sorted), the other nodes' leaders send their node regions
 * over the bridge to the root's leader, and the root reads every block from its leader.
 *
 * Root's node, round 1: the root (when it is not the leader) publishes its block for its
 * leader together with every node's region (its span table, indexed by node), which only
 * the root knows; round 2: the leader publishes the node-sorted whole for the root. */
#include <string.h>

#include "../algorithms.h"
#include "../move.h"
#include "../steps.h"

typedef struct gather_state {
    int pc;
    int root_node, root_nr;
    const void *mine;    /* the root's block: from where it already is, in place */
    size_t mine_bytes;
    uint64_t seq, seq2;
    size_t *sorted;      /* node-sorted offsets of the root's blocks (size + 1) */
    nc_span *regions;    /* the root's leader: each node's region of the whole */
    nc_xfer *recvs;      /* the root's leader: the other nodes' regions */
    char *all;
    nc_pub pub;
    nc_move_collect_step collect;
    nc_move_offer_step offer;
    nc_bridge_req req;
} gather_state;
NC_STATE_FITS(gather_state);

/* In place (at the root only): the root's block travels from where it already is, at its
 * full length, so every node region keeps the layout the offsets describe. */
static void start(nc_comm *c, const nc_args *a, gather_state *st)
{
    int in_place = a->move.send == NC_IN_PLACE, nodes = c->bridge.size;
    st->root_node = c->node_of[a->root];
    st->root_nr = c->node_rank_of[a->root];
    st->mine = in_place ? nc_vec_at(a->move.recv_vec, a->root) : a->move.send;
    st->mine_bytes = in_place ? nc_vec_len(a->move.recv_vec, a->root) : a->move.send_bytes;
    st->seq = nc_take_round(&c->node);
    if (c->node_of[c->rank] != st->root_node || (c->rank != a->root && !nc_comm_is_leader(c))) return;
    char *at = nc_move_scratch(c, NC_MOVE_TABLES, nc_carved(sizeof(size_t) * ((size_t)c->size + 1)) +
                                                      nc_carved(sizeof(nc_span) * (size_t)nodes) +
                                                      nc_carved(sizeof(nc_xfer) * (size_t)nodes));
    st->sorted = nc_carve(&at, sizeof(size_t) * ((size_t)c->size + 1));
    st->regions = nc_carve(&at, sizeof(nc_span) * (size_t)nodes);
    st->recvs = nc_carve(&at, sizeof(nc_xfer) * (size_t)nodes);
    if (c->rank == a->root) nc_move_sorted_offsets(c, a->move.recv_vec, st->sorted);
}

static void node_regions(const nc_comm *c, const size_t *sorted, nc_span *regions)
{
    for (int k = 0; k < c->bridge.size; k++)
        regions[k] = (nc_span){nc_move_node_off(c, sorted, k), nc_move_node_bytes(c, sorted, k)};
}

static int send_region(nc_comm *c, int to, char *region, size_t bytes, nc_bridge_req *r)
{
    nc_xfer to_root = {to, region, bytes};
    return c->bridge.exchange(c->bridge.ctx, &to_root, 1, NULL, 0, r);
}

static int receive_regions(nc_comm *c, gather_state *st, nc_bridge_req *r)
{
    int nrecv = 0;
    for (int k = 0; k < c->bridge.size; k++)
        if (k != st->root_node && st->regions[k].len)
            st->recvs[nrecv++] = (nc_xfer){k, st->all + st->regions[k].off, st->regions[k].len};
    return c->bridge.exchange(c->bridge.ctx, NULL, 0, st->recvs, nrecv, r);
}

/* The root's leader: learns the regions (from the root's table, or as the root), and
 * collects its own node's blocks into the whole. */
static void leader_prepares(nc_comm *c, const nc_args *a, gather_state *st)
{
    int nodes = c->bridge.size;
    if (c->rank == a->root) node_regions(c, st->sorted, st->regions);
    else memcpy(st->regions, st->pub.table, sizeof(nc_span) * (size_t)nodes);
    st->all = nc_move_scratch(c, NC_MOVE_DATA, st->regions[nodes - 1].off + st->regions[nodes - 1].len);
    nc_move_collect_setup(&st->collect, st->seq, st->mine, st->mine_bytes, st->all + st->regions[st->root_node].off,
                          st->regions[st->root_node].len);
}

static void leader_publishes_whole(nc_comm *c, gather_state *st)
{
    int nodes = c->bridge.size;
    size_t whole = st->regions[nodes - 1].off + st->regions[nodes - 1].len;
    nc_move_publish(&c->node, st->seq2, nc_move_reachable(c, st->all, whole), 0, whole);
    nc_move_release(&c->node, st->seq2, &st->root_nr, 1);
}

/* The root: every other block from its leader's whole, and its own. */
static void root_reads_whole(nc_comm *c, const nc_args *a, gather_state *st)
{
    const nc_vec *recv = a->move.recv_vec;
    for (int i = 0; i < c->size; i++)
        if (i != a->root) nc_move_read_block(c, &st->pub, st->sorted[i], recv, i, nc_vec_len(recv, i));
    nc_move_done(&c->node, st->seq2);
    if (a->move.send != NC_IN_PLACE)
        nc_vec_unpack(recv, a->root, a->move.send, nc_fit(c, a->move.send_bytes, nc_vec_len(recv, a->root)));
}

static nc_step progress(nc_op *op, void *state)
{
    static const int leader_rank = 0;
    gather_state *st = state;
    nc_comm *c = op->c;
    nc_node *n = &c->node;
    const nc_args *a = op->args;
    int is_root = c->rank == a->root, leader = nc_comm_is_leader(c);
    NC_BEGIN(st);
    start(c, a, st);
    if (c->node_of[c->rank] != st->root_node) {
        nc_move_collect_setup(&st->collect, st->seq, a->move.send, a->move.send_bytes, NULL, 0);
        NC_AWAIT_STEP(st, nc_move_collect_progress(op, &st->collect));
        if (leader && st->collect.at)
            NC_BRIDGE_STEP(op, st, &st->req, send_region(c, st->root_node, st->collect.dst, st->collect.at, op->bridge_req));
    } else {
        if (is_root && !leader) {
            NC_AWAIT(st, nc_move_readers_done(op, n));
            node_regions(c, st->sorted, nc_move_area(c, NULL));
            nc_move_offer_setup(&st->offer, st->seq, st->mine, st->mine_bytes, &leader_rank, 1);
            NC_AWAIT_STEP(st, nc_move_offer_progress(op, &st->offer));
        }
        if (leader) {
            if (!is_root) NC_AWAIT(st, nc_move_published(op, c, st->root_nr, st->seq, &st->pub));
            leader_prepares(c, a, st);
            NC_AWAIT_STEP(st, nc_move_collect_progress(op, &st->collect));
            NC_BRIDGE_STEP(op, st, &st->req, receive_regions(c, st, op->bridge_req));
            st->seq2 = nc_take_round(n);
            NC_AWAIT(st, nc_move_readers_done(op, n));
            leader_publishes_whole(c, st);
        } else {
            if (!is_root) {
                nc_move_collect_setup(&st->collect, st->seq, a->move.send, a->move.send_bytes, NULL, 0);
                NC_AWAIT_STEP(st, nc_move_collect_progress(op, &st->collect));
            }
            st->seq2 = nc_take_round(n);
        }
        if (is_root) {
            NC_AWAIT(st, nc_move_published(op, c, leader_rank, st->seq2, &st->pub));
            root_reads_whole(c, a, st);
        }
        if (leader) NC_AWAIT(st, nc_move_readers_done(op, n)); /* the root has read the whole */
    }
    if (leader) nc_stats_count(a->coll, NC_ALG_BRIDGE, a->move.send_bytes);
    NC_END(st);
}

const nc_algorithm nc_gather_across_nodes = {NC_ALG_CMA, nc_move_across_nodes, NULL, progress, 0};
