/* MPI_Allgather(v).
 *
 * One node: every rank publishes its block once and reads every other non-empty block
 * straight from its owner (one single-copy call per block, or a copy from the owner's slot
 * for small blocks); nothing is forwarded, so no volume skew can serialise it.
 *
 * Several nodes: each leader collects its node's blocks (node-sorted), the leaders
 * allgather the node regions over the bridge, and every rank reads the blocks it lacks
 * from its leader.  The bridge step is where seed 001's nonuniform-volume logic applies:
 * the node volumes are tested for outliers with the k-select ratio, and a skewed set is
 * spread by recursive doubling (power-of-two node count) or dissemination instead of a
 * ring, so one large region travels along a binomial tree instead of N-1 ring steps. */
#include <stdlib.h>
#include <string.h>

#include "move.h"
#include "../core/fatal.h"
#include "select.h"
#include "../core/kselect.h"

/* ---- one node ------------------------------------------------------------------------ */

static void allgather_on_node(nc_comm *c, const void *send, size_t send_bytes, const nc_vec *recv)
{
    nc_node *n = &c->node;
    uint64_t seq = nc_move_round(n);
    int in_place = send == NC_IN_PLACE;
    const void *mine = in_place ? nc_vec_at(recv, c->rank) : send;
    size_t my_len = in_place ? nc_vec_len(recv, c->rank) : send_bytes;
    int in_slot = 0, nreaders = 0;
    if (my_len) {
        char *slot;
        nc_move_claim(c, &slot);
        in_slot = nc_move_put(c, seq, slot, mine, my_len);
        for (int r = 0; r < n->size; r++)
            if (r != n->rank) n->move_readers[nreaders++] = r;
    }
    /* Start after myself so the ranks do not all read the same owner first. */
    for (int j = 1; j < c->size; j++) {
        int i = (c->rank + j) % c->size;
        size_t len = nc_vec_len(recv, i);
        if (!len) continue;
        nc_pub p = nc_move_await(c, c->node_rank_of[i], seq);
        nc_move_read_block(c, &p, 0, recv, i, nc_fit(c, p.bytes, len));
    }
    if (!in_place && send_bytes) nc_vec_unpack(recv, c->rank, send, nc_fit(c, send_bytes, nc_vec_len(recv, c->rank)));
    nc_move_done(n, seq);
    if (my_len) nc_move_release(n, seq, in_slot, n->move_readers, nreaders);
}

/* ---- bridge: ring, recursive doubling, dissemination ---------------------------------- */

typedef struct regions {
    char *all;
    size_t *off; /* node k's region is [off[k], off[k+1]) of all */
    int nodes;
} regions;

/* Appends the circular run of `count` regions starting at `first` (mod nodes) as at most two
 * messages; empty ones are left out (both sides compute the same sizes). */
static void add_run(nc_xfer *x, int *nx, int peer, const regions *g, int first, int count)
{
    first = ((first % g->nodes) + g->nodes) % g->nodes;
    int head = count < g->nodes - first ? count : g->nodes - first;
    size_t bytes = g->off[first + head] - g->off[first];
    if (bytes) x[(*nx)++] = (nc_xfer){peer, g->all + g->off[first], bytes};
    bytes = g->off[count - head] - g->off[0];
    if (count > head && bytes) x[(*nx)++] = (nc_xfer){peer, g->all, bytes};
}

static int exchange_runs(nc_comm *c, const regions *g, int to, int send_first, int from, int recv_first, int count)
{
    nc_xfer sends[2], recvs[2];
    int ns = 0, nr = 0;
    add_run(sends, &ns, to, g, send_first, count);
    add_run(recvs, &nr, from, g, recv_first, count);
    return c->bridge.exchange(c->bridge.ctx, sends, ns, recvs, nr, NULL);
}

/* N-1 steps; in step s each node passes on the region it received in step s-1. */
static int bridge_ring(nc_comm *c, const regions *g, int me)
{
    int right = (me + 1) % g->nodes, left = (me + g->nodes - 1) % g->nodes, err = 0;
    for (int s = 0; s < g->nodes - 1 && !err; s++) err = exchange_runs(c, g, right, me - s, left, me - s - 1, 1);
    return err;
}

/* log2 N steps; at distance d a node and its partner swap their aligned groups of d regions. */
static int bridge_doubling(nc_comm *c, const regions *g, int me)
{
    int err = 0;
    for (int d = 1; d < g->nodes && !err; d <<= 1) {
        int partner = me ^ d;
        err = exchange_runs(c, g, partner, me & ~(d - 1), partner, partner & ~(d - 1), d);
    }
    return err;
}

/* ceil(log2 N) steps for any N; at distance d a node holds the d regions ending at its own
 * and sends them d ahead (only the N-d still missing there in the last step). */
static int bridge_dissemination(nc_comm *c, const regions *g, int me)
{
    int err = 0;
    for (int d = 1; d < g->nodes && !err; d <<= 1) {
        int count = d < g->nodes - d ? d : g->nodes - d;
        err = exchange_runs(c, g, (me + d) % g->nodes, me - count + 1, (me - d + g->nodes) % g->nodes,
                            me - d - count + 1, count);
    }
    return err;
}

/* Seed 001, equation 1: max volume over the volume at the `fraction` quantile.  A few
 * nodes far above the bulk make the set skewed. */
static int volumes_skewed(const nc_comm *c, const size_t *off, int nodes)
{
    uint64_t *v = nc_alloc_or_die(sizeof(uint64_t) * (size_t)nodes); /* every leader must decide alike */
    for (int k = 0; k < nodes; k++) v[k] = off[k + 1] - off[k];
    size_t k = ((size_t)nodes * (size_t)c->cfg.allgatherv_outlier_fraction + 99) / 100;
    k = k < 1 ? 1 : k > (size_t)nodes ? (size_t)nodes : k;
    uint64_t bulk = nc_kselect(v, (size_t)nodes, k - 1);
    uint64_t top = nc_kselect(v, (size_t)nodes, (size_t)nodes - 1);
    free(v);
    return top > 0 && top / (uint64_t)c->cfg.allgatherv_outlier_ratio >= bulk;
}

static int bridge_allgatherv(nc_comm *c, nc_coll_id coll, const regions *g)
{
    int me = c->bridge.rank;
    nc_alg_id alg = nc_select_spread(c, g->off[g->nodes], volumes_skewed(c, g->off, g->nodes));
    nc_stats_count(coll, alg, g->off[g->nodes]);
    if (alg == NC_ALG_RING) return bridge_ring(c, g, me);
    if (alg == NC_ALG_RECURSIVE_DOUBLING) return bridge_doubling(c, g, me);
    return bridge_dissemination(c, g, me);
}

/* ---- several nodes ------------------------------------------------------------------- */

static int allgather_across_nodes(nc_comm *c, nc_coll_id coll, const void *send, size_t send_bytes, const nc_vec *recv)
{
    nc_node *n = &c->node;
    int my_node = c->node_of[c->rank], nodes = c->bridge.size, err = 0;
    int in_place = send == NC_IN_PLACE;
    const void *mine = in_place ? nc_vec_at(recv, c->rank) : send;
    size_t my_len = in_place ? nc_vec_len(recv, c->rank) : send_bytes;
    size_t *sorted = nc_move_sorted_offsets(c, recv);
    regions g = {NULL, NULL, nodes};
    uint64_t seq = nc_move_round(n);
    if (nc_comm_is_leader(c)) {
        g.all = nc_alloc_or_die(sorted[c->size]);
        g.off = nc_alloc_or_die(sizeof(size_t) * ((size_t)nodes + 1));
        for (int k = 0; k <= nodes; k++) g.off[k] = nc_move_node_off(c, sorted, k);
    }
    char *region = g.all ? g.all + g.off[my_node] : NULL;
    nc_move_collect(c, seq, mine, my_len, &region, region ? g.off[my_node + 1] - g.off[my_node] : 0);
    if (nc_comm_is_leader(c)) err = bridge_allgatherv(c, coll, &g);

    uint64_t seq2 = nc_move_round(n);
    int in_slot = 0;
    if (nc_comm_is_leader(c)) {
        char *slot;
        nc_move_claim(c, &slot);
        in_slot = nc_move_put(c, seq2, slot, g.all, sorted[c->size]);
    }
    nc_pub p = nc_move_await(c, 0, seq2);
    for (int j = 1; j < c->size; j++) {
        int i = (c->rank + j) % c->size;
        nc_move_read_block(c, &p, sorted[i], recv, i, nc_vec_len(recv, i));
    }
    if (!in_place && send_bytes) nc_vec_unpack(recv, c->rank, send, nc_fit(c, send_bytes, nc_vec_len(recv, c->rank)));
    nc_move_done(n, seq2);
    if (nc_comm_is_leader(c)) {
        for (int r = 1; r < n->size; r++) n->move_readers[r - 1] = r;
        nc_move_release(n, seq2, in_slot, n->move_readers, n->size - 1);
        free(g.all);
        free(g.off);
    }
    free(sorted);
    return err;
}

int nc_allgatherv(nc_comm *c, nc_coll_id coll, const void *send, size_t send_bytes, const nc_vec *recv)
{
    nc_alg_id alg = nc_select(c, coll, send_bytes);
    int err = 0;
    if (nc_comm_multinode(c)) {
        err = allgather_across_nodes(c, coll, send, send_bytes, recv);
        if (nc_comm_is_leader(c)) nc_stats_count(coll, NC_ALG_BRIDGE, send_bytes);
    } else {
        allgather_on_node(c, send, send_bytes, recv);
    }
    nc_stats_count(coll, alg, send_bytes);
    return nc_call_result(c, err);
}
