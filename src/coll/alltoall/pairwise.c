/* Alltoall, Alltoallv, Alltoallw: pairwise exchange (Balaji et al.'s binning).
 *
 * On the node every rank publishes a span table: where in its send buffer each receiver's
 * block is; a small total travels with its table through the rank's slots instead (move.h's
 * small publications, which no rank waits for its readers to be done with).  Every rank then reads, straight from
 * each sender, only the blocks it receives something from: zero-size peers are skipped
 * entirely (no flag read, no wait, no message), and small blocks are read before large
 * ones so a peer with little to give is not kept waiting behind big copies.  A rank whose
 * buffer is read directly waits, before it finishes, only for the ranks it sent something
 * to.  With single-copy reads one transfer is in flight per rank; the copies of different
 * ranks run in parallel.
 *
 * Across nodes every rank exchanges its blocks with the remote ranks it has data for, point
 * to point through the host MPI, with the same bins: zero-size peers get no message at all
 * (the PETSc neighbour pattern costs the neighbours, not the communicator size), small
 * blocks are sent before large ones, with at most NODECOLL_ALLTOALL_WINDOW sends in flight.
 * The leaders do not aggregate here: how much a node receives from another is known to no
 * single rank of it without an extra exchange of counts. */
#include <string.h>

#include "../algorithms.h"
#include "../move.h"
#include "../../core/team.h"

typedef struct pairwise_state {
    int pc;
    int in_slot, small, next, end, count, kept, nsends, nrecvs;
    uint64_t seq, g;
    size_t payload;
    nc_small from_slot;
    const nc_vec *send;
    nc_vec copy;       /* in place: a compact copy of what I send (my reads overwrite it) */
    int *peers;        /* the bin being read */
    nc_xfer *xfers;    /* remote sends, then receives */
    char *landing;     /* remote blocks with a layout arrive here, to be unpacked */
    nc_bridge_req req;
} pairwise_state;
NC_STATE_FITS(pairwise_state);

static int on_my_node(const nc_comm *c, int i) { return c->node_of[i] == c->node_of[c->rank]; }

/* What in place sends, and what arrives from the host with a layout, in one data scratch. */
static size_t in_place_bytes(const nc_comm *c, const nc_vec *recv)
{
    size_t total = 0;
    for (int i = 0; i < c->size; i++) total += i == c->rank ? 0 : nc_vec_len(recv, i);
    return total;
}

static size_t landing_bytes(const nc_comm *c, const nc_vec *recv)
{
    size_t total = 0;
    for (int i = 0; recv->blocks && nc_comm_multinode(c) && i < c->size; i++)
        if (!on_my_node(c, i)) total += nc_vec_len(recv, i);
    return total;
}

/* In place: my send data is my receive buffer, which my own reads overwrite; publish a
 * compact copy instead (spans then refer to it). */
static void copy_for_in_place(const nc_comm *c, const nc_vec *recv, char *copy, size_t *lens, size_t *offs)
{
    size_t at = 0;
    for (int i = 0; i < c->size; i++) {
        lens[i] = i == c->rank ? 0 : nc_vec_len(recv, i);
        offs[i] = at;
        if (lens[i]) nc_vec_pack(recv, i, copy + at, lens[i]);
        at += lens[i];
    }
}

static void start(nc_comm *c, const nc_args *a, pairwise_state *st)
{
    const nc_vec *recv = a->move.recv_vec;
    size_t n = (size_t)c->size, lens_offs = a->move.send_vec ? 0 : 2 * nc_carved(sizeof(size_t) * n);
    char *at = nc_move_scratch(c, NC_MOVE_TABLES, nc_carved(sizeof(int) * n) + nc_carved(sizeof(nc_xfer) * 2 * n) + lens_offs);
    st->peers = nc_carve(&at, sizeof(int) * n);
    st->xfers = nc_carve(&at, sizeof(nc_xfer) * 2 * n);
    size_t copy = a->move.send_vec ? 0 : in_place_bytes(c, recv), landing = landing_bytes(c, recv);
    char *data = copy + landing ? nc_move_scratch(c, NC_MOVE_DATA, copy + landing) : NULL;
    st->landing = landing ? data + copy : NULL;
    st->send = a->move.send_vec;
    if (!st->send) {
        size_t *lens = nc_carve(&at, sizeof(size_t) * n), *offs = nc_carve(&at, sizeof(size_t) * n);
        copy_for_in_place(c, recv, data, lens, offs);
        st->copy = (nc_vec){.base = data, .lens = lens, .offs = offs};
        st->send = &st->copy;
    }
    st->seq = nc_take_round(&c->node);
    st->g = nc_take_frags(&c->node, 1);
}

/* My span table for every receiver on my node with a non-empty block; returns whether the
 * data went into the slot. */
static int publish_spans(nc_comm *c, const pairwise_state *st)
{
    nc_node *n = &c->node;
    const nc_vec *send = st->send;
    char *slot;
    nc_span *table = nc_move_area(c, &slot);
    size_t total = 0, at = 0, end = 0;
    for (int i = 0; i < c->size; i++) total += i == c->rank || !on_my_node(c, i) ? 0 : nc_vec_len(send, i);
    int in_slot = nc_move_use_slot(c, total), nreaders = 0;
    for (int i = 0; i < c->size; i++) {
        size_t len = nc_vec_len(send, i);
        if (i == c->rank || !len || !on_my_node(c, i)) {
            if (!in_slot) table[i] = (nc_span){0, 0}; /* (nc_move_reachable_blocks reads it) */
            continue;
        }
        table[i] = (nc_span){in_slot ? at : nc_vec_off(send, i), len};
        if (in_slot) memcpy(slot + at, nc_vec_at(send, i), len);
        at += len;
        if (table[i].off + len > end) end = table[i].off + len;
        n->move_readers[nreaders++] = c->node_rank_of[i];
    }
    const char *base = in_slot ? send->base : nc_move_reachable_blocks(c, send->base, table, c->size, end, total);
    nc_move_publish(n, st->seq, base, in_slot, total);
    nc_move_release(n, st->seq, n->move_readers, nreaders);
    return in_slot;
}

/* Balaji et al.'s bins: zero (skipped), small (read first), large; in a rotated order so the
 * ranks of a node do not all start with the same peer.  The bin's node peers; how many. */
static int bin_peers(const nc_comm *c, const nc_vec *recv, int small, int *peers)
{
    size_t limit = (size_t)c->cfg.alltoall_small;
    int count = 0;
    for (int j = 1, i = c->rank; j < c->size; j++) {
        i = i + 1 == c->size ? 0 : i + 1; /* (rank + j mod size, without a division per peer) */
        size_t len = nc_vec_len(recv, i);
        if (len && (len <= limit) == small && on_my_node(c, i)) peers[count++] = i;
    }
    return count;
}

typedef struct bin_reads {
    nc_comm *c;
    const nc_vec *recv;
    const int *peers;
} bin_reads;

static void read_peer(void *ctx, size_t k)
{
    bin_reads *b = ctx;
    int i = b->peers[k];
    nc_pub p = nc_move_pub(b->c, b->c->node_rank_of[i]);
    nc_move_read_span_block(b->c, &p, b->recv, i);
}

/* Peer i's block from its slots. */
static void read_slot_block(nc_comm *c, const nc_vec *recv, const nc_small *s, int i)
{
    size_t len;
    const char *block = nc_small_my_block(c, s, c->node_rank_of[i], &len);
    nc_vec_unpack(recv, i, block, nc_fit(c, len, nc_vec_len(recv, i)));
}

/* Reads the bin's peers from st->next on that have published (st->next has), a thread team
 * dividing them among its threads (Luo et al.'s "Group"); where to go on from. */
static int read_published(nc_comm *c, const nc_vec *recv, const pairwise_state *st)
{
    size_t bytes = 0;
    int end = st->next;
    while (end < st->count && (end == st->next || nc_move_has_published(c, c->node_rank_of[st->peers[end]], st->seq)))
        bytes += nc_vec_len(recv, st->peers[end++]);
    bin_reads b = {c, recv, st->peers + st->next};
    nc_par_each(read_peer, &b, (size_t)(end - st->next), bytes);
    return end;
}

/* The remote part: every receive posted at once, then the sends, small bin first, in a
 * rotated order so the ranks of a node do not all start with the same peer. */
static void list_remote(const nc_comm *c, const nc_vec *recv, pairwise_state *st)
{
    size_t limit = (size_t)c->cfg.alltoall_small;
    nc_xfer *sends = st->xfers, *recvs = st->xfers + c->size;
    char *at = st->landing;
    st->nsends = st->nrecvs = 0;
    for (int small = 1; small >= 0; small--)
        for (int j = 1; j < c->size; j++) {
            int i = (c->rank + j) % c->size;
            size_t len = nc_vec_len(st->send, i);
            if (len && (len <= limit) == small && !on_my_node(c, i))
                sends[st->nsends++] = (nc_xfer){i, nc_vec_at(st->send, i), len};
        }
    for (int i = 0; i < c->size; i++) {
        size_t len = nc_vec_len(recv, i);
        if (!len || on_my_node(c, i)) continue;
        recvs[st->nrecvs++] = (nc_xfer){i, at ? at : nc_vec_at(recv, i), len};
        at += at ? len : 0;
    }
}

static int exchange_remote(nc_comm *c, const pairwise_state *st, nc_bridge_req *r)
{
    return c->bridge.comm_exchange(c->bridge.comm_ctx, st->xfers, st->nsends, st->xfers + c->size, st->nrecvs,
                                   (int)c->cfg.alltoall_window, r);
}

/* The host receives bytes: blocks with a layout are unpacked from where they landed. */
static void finish(nc_comm *c, const nc_args *a, const pairwise_state *st, int err)
{
    const nc_vec *recv = a->move.recv_vec;
    const nc_xfer *recvs = st->xfers + c->size;
    for (int r = 0; st->landing && !err && r < st->nrecvs; r++) nc_vec_unpack(recv, recvs[r].peer, recvs[r].buf, recvs[r].bytes);
    if (a->move.send_vec)
        nc_vec_unpack(recv, c->rank, nc_vec_at(st->send, c->rank),
                      nc_fit(c, nc_vec_len(st->send, c->rank), nc_vec_len(recv, c->rank)));
}

static nc_step progress(nc_op *op, void *state)
{
    pairwise_state *st = state;
    nc_comm *c = op->c;
    const nc_args *a = op->args;
    const nc_vec *recv = a->move.recv_vec;
    NC_BEGIN(st);
    start(c, a, st);
    st->in_slot = 1;
    st->payload = nc_small_blocks_bytes(c, st->send);
    if (nc_small_fits(c, st->payload)) {
        NC_AWAIT(st, nc_small_free(op, &c->node, st->g, st->payload));
        nc_small_put_blocks(c, st->g, st->send, st->payload);
    } else {
        NC_AWAIT(st, nc_small_free(op, &c->node, st->g, 0));
        NC_AWAIT(st, nc_move_readers_done(op, &c->node));
        st->in_slot = publish_spans(c, st);
        nc_small_put_in_round(&c->node, st->g, 0);
    }
    for (st->small = 1; st->small >= 0; st->small--) {
        st->count = bin_peers(c, recv, st->small, st->peers);
        /* Blocks in the peers' slots first; the peers that published in the round stay. */
        for (st->next = st->kept = 0; st->next < st->count; st->next++) {
            NC_AWAIT(st, nc_small_published(op, c, c->node_rank_of[st->peers[st->next]], st->g, &st->from_slot));
            if (st->from_slot.data) read_slot_block(c, recv, &st->from_slot, st->peers[st->next]);
            else st->peers[st->kept++] = st->peers[st->next];
        }
        st->count = st->kept;
        for (st->next = 0; st->next < st->count; st->next = st->end) {
            NC_AWAIT(st, nc_move_published(op, c, c->node_rank_of[st->peers[st->next]], st->seq, NULL));
            st->end = read_published(c, recv, st);
        }
    }
    /* My readers never wait on a remote rank: my reads are done before the remote part. */
    nc_move_done(&c->node, st->seq);
    nc_small_done(&c->node, st->g);
    if (nc_comm_multinode(c)) {
        list_remote(c, recv, st);
        if (st->nsends || st->nrecvs) NC_BRIDGE_STEP(op, st, &st->req, exchange_remote(c, st, op->bridge_req));
    }
    finish(c, a, st, op->err);
    if (!st->in_slot) NC_AWAIT(st, nc_move_readers_done(op, &c->node));
    NC_END(st);
}

const nc_algorithm nc_alltoall_pairwise = {NC_ALG_CMA, nc_move_anywhere, NULL, progress, 0};
