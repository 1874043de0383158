/* Gather(v) on one node: small blocks travel through their sender's slots (move.h's small
 * publications: the sender returns at once, as after an eager send) and the root copies them
 * out; a large block is written by its sender straight into the root's receive buffer (the
 * root publishes a span table over it), so the senders' copies run in parallel with each
 * other and with the root's copy of its own block.  The sender alone decides by its own
 * length; the root learns which way each block came from the sender's flag.  Senders the
 * root expects nothing from are never waited for (Balaji et al.). */
#include "../algorithms.h"
#include "../move.h"

typedef struct gather_state {
    int pc;
    int root_nr, i, in_round;
    uint64_t seq, g;
    nc_pub pub;
    nc_small small;
} gather_state;
NC_STATE_FITS(gather_state);

/* A large block into the root's buffer, where its span table says (the root judges the fit
 * from my full length).  My flag line must keep this publication until the root has read
 * it: my next claim waits for the root, as after a slot publication. */
static void push_block(nc_comm *c, gather_state *st, const void *send, size_t bytes)
{
    nc_span s = st->pub.table[c->rank];
    nc_move_write(c, &st->pub, s.off, send, bytes < s.len ? bytes : s.len);
    nc_move_publish(&c->node, st->seq, NULL, NC_PUB_PUSHED, bytes);
    nc_move_release(&c->node, st->seq, &st->root_nr, 1);
}

/* A large block the root reads itself (its receive buffer cannot be written into). */
static void offer_block(nc_comm *c, gather_state *st, const void *send, size_t bytes)
{
    char *slot;
    nc_move_area(c, &slot);
    st->in_round = !nc_move_put(c, st->seq, slot, send, bytes);
    nc_move_release(&c->node, st->seq, &st->root_nr, 1);
}

/* The root: a span table over its receive buffer for the large senders, and its own block.
 * A typed vector has no single buffer to write into, nor can senders write outside my heap
 * on a node without CMA: the senders then publish their blocks instead, and I read them. */
static void root_publishes(nc_comm *c, const nc_args *a, uint64_t seq)
{
    const nc_vec *recv = a->move.recv_vec;
    nc_span *table = nc_move_area(c, NULL);
    size_t end = 0;
    for (int i = 0; !recv->blocks && i < c->size; i++) {
        table[i] = (nc_span){nc_vec_off(recv, i), nc_vec_len(recv, i)};
        if (table[i].len && table[i].off + table[i].len > end) end = table[i].off + table[i].len;
    }
    int writable = !recv->blocks && nc_node_reachable(&c->node, recv->base, end);
    nc_move_publish(&c->node, seq, writable ? recv->base : NULL, 0, 0);
    if (a->move.send != NC_IN_PLACE)
        nc_vec_unpack(recv, a->root, a->move.send, nc_fit(c, a->move.send_bytes, nc_vec_len(recv, a->root)));
}

static void root_takes(nc_comm *c, const nc_args *a, const gather_state *st, int i)
{
    const nc_vec *recv = a->move.recv_vec;
    if (st->small.data) {
        nc_vec_unpack(recv, i, st->small.data, nc_fit(c, st->small.bytes, nc_vec_len(recv, i)));
        return;
    }
    size_t fit = nc_fit(c, st->pub.bytes, nc_vec_len(recv, i));
    if (st->pub.in_slot != NC_PUB_PUSHED) nc_move_read_block(c, &st->pub, 0, recv, i, fit);
}

static nc_step progress(nc_op *op, void *state)
{
    gather_state *st = state;
    nc_comm *c = op->c;
    nc_node *n = &c->node;
    const nc_args *a = op->args;
    NC_BEGIN(st);
    st->seq = nc_take_round(n);
    st->g = nc_take_frags(n, 1);
    st->root_nr = c->node_rank_of[a->root];
    st->in_round = 0;
    if (c->rank == a->root) {
        NC_AWAIT(st, nc_move_readers_done(op, n));
        root_publishes(c, a, st->seq);
        for (st->i = 0; st->i < c->size; st->i++)
            if (st->i != a->root && nc_vec_len(a->move.recv_vec, st->i)) {
                NC_AWAIT(st, nc_small_published(op, c, c->node_rank_of[st->i], st->g, &st->small));
                if (!st->small.data)
                    NC_AWAIT(st, nc_move_published(op, c, c->node_rank_of[st->i], st->seq, &st->pub));
                root_takes(c, a, st, st->i);
            }
        nc_move_done(n, st->seq);
    } else if (nc_small_fits(c, a->move.send_bytes)) {
        NC_AWAIT(st, nc_small_free(op, n, st->g, a->move.send_bytes));
        nc_small_put(n, st->g, a->move.send, a->move.send_bytes);
    } else {
        NC_AWAIT(st, nc_small_free(op, n, st->g, 0));
        NC_AWAIT(st, nc_move_readers_done(op, n)); /* my flag line is rewritten below */
        NC_AWAIT(st, nc_move_published(op, c, st->root_nr, st->seq, &st->pub));
        if (st->pub.base) push_block(c, st, a->move.send, a->move.send_bytes);
        else offer_block(c, st, a->move.send, a->move.send_bytes);
        nc_small_put_in_round(n, st->g, 0);
    }
    nc_small_done(n, st->g);
    if (st->in_round) NC_AWAIT(st, nc_move_readers_done(op, n));
    NC_END(st);
}

const nc_algorithm nc_gather_on_node = {NC_ALG_CMA, nc_move_on_one_node, NULL, progress, 0};
