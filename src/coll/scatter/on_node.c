/* Scatter(v) on one node: the root publishes a span table over its send buffer (small
 * totals copied into its slot) and every receiver reads its own span straight from it, one
 * single-copy call each, so the copies run on all receivers at once.  Receivers of nothing
 * never contact the root (seed 001). */
#include <string.h>

#include "../algorithms.h"
#include "../move.h"

typedef struct scatter_state {
    int pc;
    int in_slot;
    uint64_t seq;
    nc_pub pub;
} scatter_state;
NC_STATE_FITS(scatter_state);

/* The root's span table: block i of `send` for every rank i that gets data (slot copies
 * compacted), its own block unpacked, and its readers released.  Returns whether the data went
 * into the slot. */
static int root_publishes(nc_comm *c, const nc_args *a, uint64_t seq)
{
    nc_node *n = &c->node;
    const nc_vec *send = a->move.send_vec;
    char *slot;
    nc_span *table = nc_move_area(c, &slot);
    size_t total = 0, at = 0;
    int nreaders = 0;
    for (int i = 0; i < c->size; i++)
        if (i != a->root) total += nc_vec_len(send, i);
    int in_slot = nc_move_use_slot(c, total);
    for (int i = 0; i < c->size; i++) {
        size_t len = nc_vec_len(send, i);
        if (i == a->root || !len) continue;
        table[i] = (nc_span){in_slot ? at : nc_vec_off(send, i), len};
        if (in_slot) memcpy(slot + at, nc_vec_at(send, i), len);
        at += len;
        n->move_readers[nreaders++] = c->node_rank_of[i];
    }
    nc_move_publish(n, seq, send->base, in_slot, total);
    if (a->move.recv)
        nc_data_unpack(a->move.recv, 0, nc_vec_at(send, a->root), nc_fit(c, nc_vec_len(send, a->root), a->move.recv_bytes));
    nc_move_done(n, seq);
    nc_move_release(n, seq, n->move_readers, nreaders);
    return in_slot;
}

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
        st->in_slot = root_publishes(c, a, st->seq);
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

const nc_algorithm nc_scatter_on_node = {NC_ALG_CMA, nc_move_on_one_node, NULL, progress};
