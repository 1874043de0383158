/* Allgather(v) on one node: every rank publishes its block once and reads every other
 * non-empty block straight from its owner (one single-copy call per block, or a copy from
 * the owner's slots for small blocks: move.h's small publications, which no rank waits for
 * its readers to be done with); nothing is forwarded, so no volume skew can serialise it.
 * Each rank starts after itself, so the ranks do not all read the same owner first.
 *
 * Large Allgather blocks go the other way when they can: each rank writes its block into
 * every rank's result, a chunk at a time, so that one read of each chunk (kept in cache)
 * feeds all of them: P reads and P^2 writes of a block size in all, where reading every
 * block from its owner copies P^2 blocks (at 2 ranks 4 block copies against 3, and the
 * gap grows with P).  The receive buffers must be writable by the others (contiguous, and
 * reachable: CMA, or the shared heaps) and the blocks alike, which only the ranks together
 * know: each says so in its flag of the call's fragment, and all read all flags before
 * publishing either their receive buffer (push) or their block (read). */
#include "../algorithms.h"
#include "../move.h"
#include "../../core/team.h"

typedef struct allgather_state {
    int pc;
    int in_slot, j;
    int push; /* 1: every rank writes its block into every result */
    uint64_t seq, g, writable;
    nc_pub pub;
    nc_small small;
} allgather_state;
NC_STATE_FITS(allgather_state);

/* My block (in place: where it already is in my receive vector), for every other rank. */
static const void *my_block(const nc_comm *c, const nc_args *a, size_t *len)
{
    int in_place = a->move.send == NC_IN_PLACE;
    *len = in_place ? nc_vec_len(a->move.recv_vec, c->rank) : a->move.send_bytes;
    return in_place ? nc_vec_at(a->move.recv_vec, c->rank) : a->move.send;
}

/* My publication of round seq is read (or written into) by every other rank of the node. */
static void release_to_the_others(nc_node *n, uint64_t seq)
{
    int nreaders = 0;
    for (int r = 0; r < n->size; r++)
        if (r != n->rank) n->move_readers[nreaders++] = r;
    nc_move_release(n, seq, n->move_readers, nreaders);
}

static int publish_mine(nc_comm *c, const nc_args *a, uint64_t seq)
{
    nc_node *n = &c->node;
    size_t len;
    const void *mine = my_block(c, a, &len);
    char *slot;
    nc_move_area(c, &slot);
    int in_slot = nc_move_put(c, seq, slot, mine, len);
    release_to_the_others(n, seq);
    return in_slot;
}

static void put_mine(nc_comm *c, const nc_args *a, uint64_t g)
{
    size_t len;
    const void *mine = my_block(c, a, &len);
    nc_small_put(&c->node, g, mine, len);
}

/* The j-th rank after me: each rank starts after itself. */
/* (For 0 <= j < size; without a division, which every small call paid per peer.) */
static int after_me(const nc_comm *c, int j) { return c->rank + j < c->size ? c->rank + j : c->rank + j - c->size; }

/* Whether the node's other ranks may write my block's length into each of my result's blocks:
 * a large Allgather block, a contiguous result they reach, every block of it that long.  My
 * block's length, or 0. */
static uint64_t writable_for_push(const nc_comm *c, const nc_args *a, size_t my_len)
{
    const nc_vec *recv = a->move.recv_vec;
    if (a->coll != NC_COLL_ALLGATHER || recv->blocks || my_len < (size_t)c->cfg.allgather_push_min) return 0;
    size_t end = 0;
    for (int i = 0; i < c->size; i++) {
        if (nc_vec_len(recv, i) != my_len) return 0;
        if (nc_vec_off(recv, i) + my_len > end) end = nc_vec_off(recv, i) + my_len;
    }
    return nc_node_reachable(&c->node, recv->base, end) ? my_len : 0;
}

/* My result's blocks for the others to write into (a span table over it), released to them. */
static void publish_result(nc_comm *c, const nc_args *a, uint64_t seq)
{
    nc_node *n = &c->node;
    const nc_vec *recv = a->move.recv_vec;
    nc_span *table = nc_move_area(c, NULL);
    for (int i = 0; i < c->size; i++) table[i] = (nc_span){nc_vec_off(recv, i), nc_vec_len(recv, i)};
    nc_move_publish(n, seq, recv->base, 0, 0);
    release_to_the_others(n, seq);
}

/* My block into every result, a chunk at a time (each chunk read once, then written P times). */
static void push_mine(nc_comm *c, const nc_args *a)
{
    const nc_vec *recv = a->move.recv_vec;
    size_t len, chunk = (size_t)c->cfg.allgather_push_chunk;
    const char *mine = my_block(c, a, &len);
    char *own = (char *)recv->base + nc_vec_off(recv, c->rank);
    for (size_t off = 0; off < len; off += chunk) {
        size_t piece = len - off < chunk ? len - off : chunk;
        if (a->move.send != NC_IN_PLACE) nc_par_copy(own + off, mine + off, piece);
        for (int j = 1; j < c->size; j++) {
            nc_pub p = nc_move_pub(c, c->node_rank_of[after_me(c, j)]);
            nc_move_write(c, &p, p.table[c->rank].off + off, mine + off, piece);
        }
    }
}

static void read_block(nc_comm *c, const nc_args *a, const allgather_state *st, int i)
{
    const nc_vec *recv = a->move.recv_vec;
    if (st->small.data) nc_vec_unpack(recv, i, st->small.data, nc_fit(c, st->small.bytes, nc_vec_len(recv, i)));
    else nc_move_read_block(c, &st->pub, 0, recv, i, nc_fit(c, st->pub.bytes, nc_vec_len(recv, i)));
}

static void finish_reading(nc_comm *c, const nc_args *a, uint64_t seq)
{
    const nc_vec *recv = a->move.recv_vec;
    if (a->move.send != NC_IN_PLACE && a->move.send_bytes)
        nc_vec_unpack(recv, c->rank, a->move.send, nc_fit(c, a->move.send_bytes, nc_vec_len(recv, c->rank)));
    nc_move_done(&c->node, seq);
}

static nc_step progress(nc_op *op, void *state)
{
    allgather_state *st = state;
    nc_comm *c = op->c;
    const nc_args *a = op->args;
    size_t my_len;
    my_block(c, a, &my_len);
    NC_BEGIN(st);
    st->seq = nc_take_round(&c->node);
    st->g = nc_take_frags(&c->node, 1);
    st->in_slot = 1; /* (nothing published in the round: nothing to keep) */
    st->push = 0;
    if (nc_small_fits(c, my_len)) {
        NC_AWAIT(st, nc_small_free(op, &c->node, st->g, my_len));
        put_mine(c, a, st->g);
    } else {
        NC_AWAIT(st, nc_small_free(op, &c->node, st->g, 0));
        NC_AWAIT(st, nc_move_readers_done(op, &c->node));
        st->writable = writable_for_push(c, a, my_len);
        nc_small_put_in_round(&c->node, st->g, st->writable);
        /* (every rank sees the same flags: all push, or all read) */
        for (st->push = st->writable != 0, st->j = 1; st->push && st->j < c->size; st->j++) {
            NC_AWAIT(st, nc_small_published(op, c, c->node_rank_of[after_me(c, st->j)], st->g, &st->small));
            st->push = st->small.writable == st->writable;
        }
        if (st->push) {
            publish_result(c, a, st->seq);
            st->in_slot = 0;
            for (st->j = 1; st->j < c->size; st->j++)
                NC_AWAIT(st, nc_move_published(op, c, c->node_rank_of[after_me(c, st->j)], st->seq, NULL));
            push_mine(c, a);
            nc_move_done(&c->node, st->seq);
        } else {
            st->in_slot = publish_mine(c, a, st->seq);
        }
    }
    for (st->j = 1; !st->push && st->j < c->size; st->j++)
        if (nc_vec_len(a->move.recv_vec, after_me(c, st->j))) {
            NC_AWAIT(st, nc_small_published(op, c, c->node_rank_of[after_me(c, st->j)], st->g, &st->small));
            if (!st->small.data)
                NC_AWAIT(st, nc_move_published(op, c, c->node_rank_of[after_me(c, st->j)], st->seq, &st->pub));
            read_block(c, a, st, after_me(c, st->j));
        }
    if (!st->push) finish_reading(c, a, st->seq);
    nc_small_done(&c->node, st->g);
    if (!st->in_slot) NC_AWAIT(st, nc_move_readers_done(op, &c->node));
    NC_END(st);
}

const nc_algorithm nc_allgather_on_node = {NC_ALG_CMA, nc_move_on_one_node, NULL, progress, 0};
