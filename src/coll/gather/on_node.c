/* Gather(v) on one node: small blocks travel through the sender's slot and the root copies
 * them out; a large block is written by its sender straight into the root's receive buffer
 * (the root publishes a span table over it), so the senders' copies run in parallel with
 * each other and with the root's copy of its own block.  The sender alone decides by its
 * own length; the root learns which way each block came from its publication.  Zero-size
 * senders are never contacted (Balaji et al.). */
#include "../algorithms.h"
#include "../move.h"
#include "../steps.h"

typedef struct gather_state {
    int pc;
    int root_nr, i;
    uint64_t seq;
    nc_pub pub;
    nc_move_offer_step offer;
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

static void root_takes(nc_comm *c, const nc_args *a, const nc_pub *p, int i)
{
    const nc_vec *recv = a->move.recv_vec;
    size_t fit = nc_fit(c, p->bytes, nc_vec_len(recv, i));
    if (p->in_slot != NC_PUB_PUSHED) nc_move_read_block(c, p, 0, recv, i, fit);
}

static nc_step progress(nc_op *op, void *state)
{
    gather_state *st = state;
    nc_comm *c = op->c;
    const nc_args *a = op->args;
    NC_BEGIN(st);
    st->seq = nc_take_round(&c->node);
    st->root_nr = c->node_rank_of[a->root];
    if (c->rank == a->root) {
        NC_AWAIT(st, nc_move_readers_done(op, &c->node));
        root_publishes(c, a, st->seq);
        for (st->i = 0; st->i < c->size; st->i++)
            if (st->i != a->root && nc_vec_len(a->move.recv_vec, st->i)) {
                NC_AWAIT(st, nc_move_published(op, c, c->node_rank_of[st->i], st->seq, &st->pub));
                root_takes(c, a, &st->pub, st->i);
            }
        nc_move_done(&c->node, st->seq);
    } else if (a->move.send_bytes && nc_move_use_slot(c, a->move.send_bytes)) {
        nc_move_offer_setup(&st->offer, st->seq, a->move.send, a->move.send_bytes, &st->root_nr, 1);
        NC_AWAIT_STEP(st, nc_move_offer_progress(op, &st->offer));
    } else if (a->move.send_bytes) {
        NC_AWAIT(st, nc_move_readers_done(op, &c->node)); /* my flag line is rewritten below */
        NC_AWAIT(st, nc_move_published(op, c, st->root_nr, st->seq, &st->pub));
        if (st->pub.base) {
            push_block(c, st, a->move.send, a->move.send_bytes);
        } else { /* the root's receive buffer cannot be written into: it reads my block itself */
            nc_move_offer_setup(&st->offer, st->seq, a->move.send, a->move.send_bytes, &st->root_nr, 1);
            NC_AWAIT_STEP(st, nc_move_offer_progress(op, &st->offer));
        }
    }
    NC_END(st);
}

const nc_algorithm nc_gather_on_node = {NC_ALG_CMA, nc_move_on_one_node, NULL, progress, 0};
