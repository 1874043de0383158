/* Scatter(v) on one node: the root publishes a span table over its send buffer (small
 * totals copied into its slot) and every receiver reads its own span straight from it, one
 * single-copy call each, so the copies run on all receivers at once.  Receivers of nothing
 * never contact the root (Balaji et al.). */
#include "../algorithms.h"
#include "../move.h"

typedef struct scatter_state {
    int pc;
    int in_slot;
    uint64_t seq;
    nc_pub pub;
} scatter_state;
NC_STATE_FITS(scatter_state);

static nc_step progress(nc_op *op, void *state)
{
    scatter_state *st = state;
    nc_comm *c = op->c;
    nc_node *n = &c->node;
    const nc_args *a = op->args;
    NC_BEGIN(st);
    st->seq = nc_take_round(n);
    if (c->rank == a->root) {
        NC_AWAIT(st, nc_move_readers_done(op, n));
        st->in_slot = nc_move_publish_blocks(c, st->seq, a->move.send_vec, a->root, 0);
        nc_move_keep_own_block(c, a);
        nc_move_done(n, st->seq);
        if (!st->in_slot) NC_AWAIT(st, nc_move_readers_done(op, n));
    } else {
        if (a->move.recv_bytes) {
            NC_AWAIT(st, nc_move_published(op, c, c->node_rank_of[a->root], st->seq, &st->pub));
            nc_move_read_span_data(c, &st->pub, c->rank, a->move.recv, a->move.recv_bytes);
        }
        nc_move_done(n, st->seq);
    }
    NC_END(st);
}

const nc_algorithm nc_scatter_on_node = {NC_ALG_CMA, nc_move_on_one_node, NULL, progress, 0};
