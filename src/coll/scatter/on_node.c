/* Scatter(v) on one node: a small total travels through the root's slots (move.h's small
 * publications: a table of spans, then every block; the root returns at once, as after
 * eager sends); otherwise the root publishes a span table over its send buffer and every
 * receiver reads its own span straight from it, one single-copy call each, so the copies
 * run on all receivers at once.  Receivers of nothing never contact the root (Balaji et al.). */
#include "../algorithms.h"
#include "../move.h"

typedef struct scatter_state {
    int pc;
    int in_slot;
    uint64_t seq, g;
    size_t payload;
    nc_pub pub;
    nc_small small;
} scatter_state;
NC_STATE_FITS(scatter_state);

static void take_my_block(nc_comm *c, const nc_args *a, const nc_small *s)
{
    size_t len;
    const char *block = nc_small_my_block(c, s, c->node_rank_of[a->root], &len);
    nc_data_unpack(a->move.recv, 0, block, nc_fit(c, len, a->move.recv_bytes));
}

static nc_step progress(nc_op *op, void *state)
{
    scatter_state *st = state;
    nc_comm *c = op->c;
    nc_node *n = &c->node;
    const nc_args *a = op->args;
    NC_BEGIN(st);
    st->seq = nc_take_round(n);
    st->g = nc_take_frags(n, 1);
    st->in_slot = 1;
    if (c->rank == a->root) {
        st->payload = nc_small_blocks_bytes(c, a->move.send_vec);
        if (nc_small_fits(c, st->payload)) {
            NC_AWAIT(st, nc_small_free(op, n, st->g, st->payload));
            nc_small_put_blocks(c, st->g, a->move.send_vec, st->payload);
        } else {
            NC_AWAIT(st, nc_small_free(op, n, st->g, 0));
            NC_AWAIT(st, nc_move_readers_done(op, n));
            st->in_slot = nc_move_publish_blocks(c, st->seq, a->move.send_vec, a->root, 0);
            nc_small_put_in_round(n, st->g, 0);
        }
        nc_move_keep_own_block(c, a);
    } else if (a->move.recv_bytes) {
        NC_AWAIT(st, nc_small_published(op, c, c->node_rank_of[a->root], st->g, &st->small));
        if (st->small.data) {
            take_my_block(c, a, &st->small);
        } else {
            NC_AWAIT(st, nc_move_published(op, c, c->node_rank_of[a->root], st->seq, &st->pub));
            nc_move_read_span_data(c, &st->pub, c->rank, a->move.recv, a->move.recv_bytes);
        }
    }
    nc_move_done(n, st->seq);
    nc_small_done(n, st->g);
    if (!st->in_slot) NC_AWAIT(st, nc_move_readers_done(op, n));
    NC_END(st);
}

const nc_algorithm nc_scatter_on_node = {NC_ALG_CMA, nc_move_on_one_node, NULL, progress, 0};
