/* The neighbourhood collectives' progress skeleton (neighbor.h). */
#include "neighbor.h"

#include <string.h>

#include "../algorithms.h"

int nc_neighbor_applies(const nc_comm *c, const nc_args *a) { return c->neighbors && nc_move_anywhere(c, a); }

void nc_neighbor_read_block(nc_comm *c, const nc_pub *p, int in_slot, uint64_t off, const nc_vec *recv, int k, size_t len)
{
    if (in_slot) {
        nc_vec_unpack(recv, k, (const char *)p->table + off, len);
        return;
    }
    nc_pub from_buffer = *p;
    from_buffer.in_slot = 0;
    nc_move_read_block(c, &from_buffer, off, recv, k, len);
}

/* Working memory (the communicator's scratch, taken in progress) and the round. */
static void start(nc_comm *c, const nc_args *a, nc_neighbor_state *st)
{
    const nc_neighbors *nb = c->neighbors;
    size_t in = (size_t)nb->indegree, out = (size_t)nb->outdegree, node = (size_t)c->node.size;
    char *at = nc_move_scratch(c, NC_MOVE_TABLES,
                               2 * nc_carved(sizeof(int) * in) + nc_carved(sizeof(nc_xfer) * (in + out)) +
                                   nc_carved(node) + nc_carved(out));
    st->edges = nc_carve(&at, sizeof(int) * in);
    st->recv_edges = nc_carve(&at, sizeof(int) * in);
    st->xfers = nc_carve(&at, sizeof(nc_xfer) * (in + out));
    st->readers = nc_carve(&at, node);
    st->small_send = nc_carve(&at, out);
    memset(st->readers, 0, node);
    st->landing = NULL;
    const nc_vec *recv = a->move.recv_vec;
    size_t landing = 0;
    for (int k = 0; recv->blocks && nc_comm_multinode(c) && k < nb->indegree; k++)
        if (nb->in[k] >= 0 && !nc_neighbor_local(c, nb->in[k])) landing += nc_vec_len(recv, k);
    if (landing) st->landing = nc_move_scratch(c, NC_MOVE_DATA, landing);
    st->seq = nc_take_round(&c->node);
    st->g = nc_take_frags(&c->node, 1);
}

/* Node rank `peer`'s publication of this call, if posted. */
static int posted(nc_comm *c, const nc_neighbor_state *st, const nc_neighbor_kind *kind, int peer, nc_pub *p)
{
    nc_small s;
    if (!nc_small_posted(c, peer, st->g, &s)) return 0;
    if (s.data) kind->slot_pub(&s, peer, p);
    else *p = nc_move_pub(c, peer);
    return 1;
}

/* In-edges from myself: my own out-block that feeds each (nc_neighbors.in_match). */
static void copy_own(nc_comm *c, const nc_args *a, const nc_neighbor_kind *kind)
{
    const nc_neighbors *nb = c->neighbors;
    const nc_vec *recv = a->move.recv_vec;
    for (int k = 0; k < nb->indegree; k++) {
        size_t room = nc_vec_len(recv, k), len;
        if (nb->in[k] != c->rank || !room || nb->in_match[k] < 0) continue;
        const void *src = kind->block(a, nb->in_match[k], &len);
        nc_vec_unpack(recv, k, src, nc_fit(c, len, room));
    }
}

/* Balaji et al.'s bins: the in-edges from other ranks of my node with something to receive, those
 * of at most NODECOLL_NEIGHBOR_SMALL bytes first; how many. */
static int bin(const nc_comm *c, const nc_args *a, int *edges)
{
    const nc_neighbors *nb = c->neighbors;
    size_t limit = (size_t)c->cfg.neighbor_small;
    int count = 0;
    for (int small = 1; small >= 0; small--)
        for (int k = 0; k < nb->indegree; k++) {
            int r = nb->in[k];
            size_t len = nc_vec_len(a->move.recv_vec, k);
            if (len && r != c->rank && nc_neighbor_local(c, r) && (len <= limit) == small) edges[count++] = k;
        }
    return count;
}

/* Reads, in bin order, edges whose senders have published, keeping the others (in order),
 * and stops after a large block (meanwhile a small one may have become ready); how many are
 * left, and in st->progressed whether it read any.  So a small block is read before a large
 * one whenever both can be, and a large block that can be is not kept waiting behind a small
 * one that cannot. */
static int read_published(nc_comm *c, const nc_args *a, nc_neighbor_state *st, const nc_neighbor_kind *kind)
{
    const nc_neighbors *nb = c->neighbors;
    size_t limit = (size_t)c->cfg.neighbor_small;
    int left = 0, i = 0;
    st->progressed = 0;
    while (i < st->count) {
        int k = st->edges[i++];
        nc_pub p;
        if (!posted(c, st, kind, c->node_rank_of[nb->in[k]], &p)) {
            st->edges[left++] = k;
            continue;
        }
        kind->read(c, a, &p, k);
        st->progressed = 1;
        if (nc_vec_len(a->move.recv_vec, k) > limit) break;
    }
    while (i < st->count) st->edges[left++] = st->edges[i++];
    return left;
}

/* The remote part.  Receives, all posted first, in the order their senders send: MPI keeps
 * the messages of one sender (same tag and communicator) in order, and a sender sends its
 * blocks to one rank in its out-edge order, so the receives from each sender go in the order
 * of the out-edges that feed them: on a Cartesian grid in-edge k^1 before k (k is fed by
 * out-edge k^1), in a graph in list order (the m-th edge from a sender is fed by its m-th
 * edge to me).  Sends: small blocks first, but never a block before an earlier one to the
 * same rank (an edge joins the small pass only if every earlier edge to its rank did). */
static void list_remote(nc_comm *c, const nc_args *a, nc_neighbor_state *st, const nc_neighbor_kind *kind)
{
    const nc_neighbors *nb = c->neighbors;
    const nc_vec *recv = a->move.recv_vec;
    size_t limit = (size_t)c->cfg.neighbor_small;
    nc_xfer *sends = st->xfers, *recvs = st->xfers + nb->outdegree;
    char *at = st->landing;
    for (int i = 0; i < nb->indegree; i++) {
        int k = nb->cartesian ? i ^ 1 : i, r = nb->in[k];
        size_t len = nc_vec_len(recv, k);
        if (r < 0 || !len || nc_neighbor_local(c, r)) continue;
        st->recv_edges[st->nrecvs] = k;
        recvs[st->nrecvs++] = (nc_xfer){r, at ? at : nc_vec_at(recv, k), len};
        at += at ? len : 0;
    }
    for (int small = 1; small >= 0; small--)
        for (int j = 0; j < nb->outdegree; j++) {
            int r = nb->out[j], before = nb->out_previous[j];
            size_t len;
            const void *src = kind->block(a, j, &len);
            if (small) st->small_send[j] = len <= limit && (before < 0 || st->small_send[before]);
            if (r >= 0 && len && !nc_neighbor_local(c, r) && st->small_send[j] == small)
                sends[st->nsends++] = (nc_xfer){r, (void *)(uintptr_t)src, len};
        }
}

static int exchange_remote(nc_comm *c, const nc_neighbor_state *st, nc_bridge_req *r)
{
    return c->bridge.comm_exchange(c->bridge.comm_ctx, st->xfers, st->nsends, st->xfers + c->neighbors->outdegree,
                                   st->nrecvs, (int)c->cfg.alltoall_window, r);
}

/* Remote blocks for a receive vector with a layout arrived in the landing area. */
static void unpack_landed(const nc_comm *c, const nc_args *a, const nc_neighbor_state *st)
{
    const nc_xfer *recvs = st->xfers + c->neighbors->outdegree;
    for (int i = 0; i < st->nrecvs; i++)
        nc_vec_unpack(a->move.recv_vec, st->recv_edges[i], recvs[i].buf, recvs[i].bytes);
}

/* For `ready`: whether the remote edges are done.  A blocking call waiting in place first
 * tests them as often as the node's policy spins on a flag (each test progresses the host),
 * and only then lets the engine yield between tests. */
static int remote_done(nc_op *op, nc_neighbor_state *st)
{
    int spin = nc_op_waits_here(op) ? op->c->node.wait.spin : 0;
    for (int i = 0; i < spin; i++)
        if (nc_bridge_done(op, &st->req)) return 1;
    return nc_bridge_done(op, &st->req);
}

/* The remote edges go first, as host requests that complete while the node's edges are
 * read and copied (point-to-point requests match whatever form the peers use, so a blocking
 * call may start them too); a node's readers still never wait on another node, since the
 * node part does not wait for them. */
nc_step nc_neighbor_progress(nc_op *op, nc_neighbor_state *st, const nc_neighbor_kind *kind)
{
    nc_comm *c = op->c;
    const nc_args *a = op->args;
    NC_BEGIN(st);
    start(c, a, st);
    st->nsends = st->nrecvs = 0;
    if (nc_comm_multinode(c)) list_remote(c, a, st, kind);
    if (st->nsends || st->nrecvs) {
        NC_AWAIT(st, nc_host_allowed(op));
        nc_op_fail(op, exchange_remote(c, st, &st->req));
    }
    st->payload = kind->slot_bytes(c, a);
    st->awaits_readers = 0;
    if (nc_small_fits(c, st->payload)) {
        NC_AWAIT(st, nc_small_free(op, &c->node, st->g, st->payload));
        kind->fill_slot(c, a, nc_small_take(&c->node, st->g, st->payload));
        nc_small_post(&c->node, st->g, st->payload);
    } else {
        NC_AWAIT(st, nc_small_free(op, &c->node, st->g, 0));
        NC_AWAIT(st, nc_move_readers_done(op, &c->node));
        st->awaits_readers = kind->publish(c, a, st->seq, st->readers);
        nc_small_put_in_round(&c->node, st->g, 0);
    }
    copy_own(c, a, kind);
    for (st->count = bin(c, a, st->edges); st->count > 0;) {
        st->count = read_published(c, a, st, kind);
        if (st->count && !st->progressed)
            NC_AWAIT(st, nc_small_published(op, c, c->node_rank_of[c->neighbors->in[st->edges[0]]], st->g, NULL));
    }
    nc_move_done(&c->node, st->seq);
    nc_small_done(&c->node, st->g);
    if (st->nsends || st->nrecvs) {
        NC_AWAIT(st, remote_done(op, st));
        if (st->landing && !op->err) unpack_landed(c, a, st);
    }
    if (st->awaits_readers) NC_AWAIT(st, nc_move_readers_done(op, &c->node));
    NC_END(st);
}
