/* Allgather(v) across nodes: each leader collects its node's blocks (node-sorted), the
 * leaders spread the node regions among themselves over the bridge (spread.c), and every
 * rank reads the blocks it lacks from its leader.
 *
 * The spread is Balaji et al.'s nonuniform-volume logic: which pattern suits depends on the node
 * volumes (every leader knows every count, so all agree), a parameter of this algorithm
 * that its plan asks the registry for (nc_registry_spread). */
#include <stdlib.h>

#include "../algorithms.h"
#include "../move.h"
#include "../registry.h"
#include "../steps.h"
#include "../../core/fatal.h"
#include "spread.h"

typedef struct allgather_state {
    int pc;
    nc_alg_id pattern; /* the leaders' spread (plan) */
    int in_slot;
    uint64_t seq, seq2;
    size_t *sorted;    /* node-sorted offsets of every block (size + 1) */
    nc_regions g;      /* the leaders' whole */
    nc_pub pub;
    nc_move_collect_step collect;
    nc_spread_step spread;
} allgather_state;
NC_STATE_FITS(allgather_state);

static void plan(nc_op *op, void *state)
{
    allgather_state *st = state;
    const nc_comm *c = op->c;
    const nc_vec *recv = op->args->move.recv_vec;
    if (!nc_comm_is_leader(c)) return;
    int nodes = c->bridge.size;
    uint64_t *volumes = nc_calloc_or_die((size_t)nodes, sizeof *volumes); /* (every leader must decide alike) */
    for (int r = 0; r < c->size; r++) volumes[c->node_of[r]] += nc_vec_len(recv, r);
    st->pattern = nc_registry_spread(c, volumes, nodes);
    free(volumes);
}

/* Tables, the leader's whole, and the collection of my node's blocks into it. */
static void start(nc_comm *c, const nc_args *a, allgather_state *st)
{
    int nodes = c->bridge.size, my_node = c->node_of[c->rank], in_place = a->move.send == NC_IN_PLACE;
    const nc_vec *recv = a->move.recv_vec;
    char *at = nc_move_scratch(c, NC_MOVE_TABLES, nc_carved(sizeof(size_t) * ((size_t)c->size + 1)) +
                                                      nc_carved(sizeof(size_t) * ((size_t)nodes + 1)));
    st->sorted = nc_carve(&at, sizeof(size_t) * ((size_t)c->size + 1));
    nc_move_sorted_offsets(c, recv, st->sorted);
    st->seq = nc_take_round(&c->node);
    st->g = (nc_regions){NULL, NULL, nodes};
    if (nc_comm_is_leader(c)) {
        st->g.off = nc_carve(&at, sizeof(size_t) * ((size_t)nodes + 1));
        for (int k = 0; k <= nodes; k++) st->g.off[k] = nc_move_node_off(c, st->sorted, k);
        st->g.all = nc_move_scratch(c, NC_MOVE_DATA, st->sorted[c->size]);
    }
    char *region = st->g.all ? st->g.all + st->g.off[my_node] : NULL;
    nc_move_collect_setup(&st->collect, st->seq, in_place ? nc_vec_at(recv, c->rank) : a->move.send,
                          in_place ? nc_vec_len(recv, c->rank) : a->move.send_bytes, region,
                          region ? st->g.off[my_node + 1] - st->g.off[my_node] : 0);
}

static int leader_publishes_whole(nc_comm *c, allgather_state *st)
{
    nc_node *n = &c->node;
    char *slot;
    nc_move_area(c, &slot);
    int in_slot = nc_move_put(c, st->seq2, slot, st->g.all, st->sorted[c->size]);
    for (int r = 1; r < n->size; r++) n->move_readers[r - 1] = r;
    nc_move_release(n, st->seq2, n->move_readers, n->size - 1);
    return in_slot;
}

static void read_whole(nc_comm *c, const nc_args *a, allgather_state *st)
{
    const nc_vec *recv = a->move.recv_vec;
    for (int j = 1; j < c->size; j++) {
        int i = (c->rank + j) % c->size;
        nc_move_read_block(c, &st->pub, st->sorted[i], recv, i, nc_vec_len(recv, i));
    }
    if (a->move.send != NC_IN_PLACE && a->move.send_bytes)
        nc_vec_unpack(recv, c->rank, a->move.send, nc_fit(c, a->move.send_bytes, nc_vec_len(recv, c->rank)));
    nc_move_done(&c->node, st->seq2);
}

static nc_step progress(nc_op *op, void *state)
{
    static const int leader_rank = 0;
    allgather_state *st = state;
    nc_comm *c = op->c;
    const nc_args *a = op->args;
    int leader = nc_comm_is_leader(c);
    NC_BEGIN(st);
    start(c, a, st);
    NC_AWAIT_STEP(st, nc_move_collect_progress(op, &st->collect));
    if (leader) {
        nc_stats_count(a->coll, st->pattern, st->g.off[st->g.nodes]);
        nc_spread_setup(&st->spread, st->pattern, &st->g);
        NC_AWAIT_STEP(st, nc_spread_progress(op, &st->spread));
    }
    st->seq2 = nc_take_round(&c->node);
    if (leader) {
        NC_AWAIT(st, nc_move_readers_done(op, &c->node));
        st->in_slot = leader_publishes_whole(c, st);
    }
    NC_AWAIT(st, nc_move_published(op, c, leader_rank, st->seq2, &st->pub));
    read_whole(c, a, st);
    if (leader) {
        if (!st->in_slot) NC_AWAIT(st, nc_move_readers_done(op, &c->node));
        nc_stats_count(a->coll, NC_ALG_BRIDGE, a->move.send_bytes);
    }
    NC_END(st);
}

const nc_algorithm nc_allgather_across_nodes = {NC_ALG_CMA, nc_move_across_nodes, plan, progress, 0};
