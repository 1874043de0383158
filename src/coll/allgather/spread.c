/* The leaders' spread of Allgather(v)'s node regions (spread.h), a bridge exchange per
 * round:
 *   ring            N-1 rounds; in round s each node passes on what it received in s-1
 *   doubling        log2 N rounds (N a power of two); at distance d a node and its partner
 *                   swap their aligned groups of d regions
 *   dissemination   ceil(log2 N) rounds for any N; at distance d a node holds the d regions
 *                   ending at its own and sends them d ahead (only the N-d still missing
 *                   there in the last round) */
#include "spread.h"

/* Appends the circular run of `count` regions starting at `first` (mod nodes) as at most two
 * messages; empty ones are left out (both sides compute the same sizes). */
static void add_run(nc_xfer *x, int *nx, int peer, const nc_regions *g, int first, int count)
{
    first = ((first % g->nodes) + g->nodes) % g->nodes;
    int head = count < g->nodes - first ? count : g->nodes - first;
    size_t bytes = g->off[first + head] - g->off[first];
    if (bytes) x[(*nx)++] = (nc_xfer){peer, g->all + g->off[first], bytes};
    bytes = g->off[count - head] - g->off[0];
    if (count > head && bytes) x[(*nx)++] = (nc_xfer){peer, g->all, bytes};
}

static int exchange_runs(nc_comm *c, const nc_regions *g, int to, int send_first, int from, int recv_first, int count,
                         nc_bridge_req *r)
{
    nc_xfer sends[2], recvs[2];
    int ns = 0, nr = 0;
    add_run(sends, &ns, to, g, send_first, count);
    add_run(recvs, &nr, from, g, recv_first, count);
    return c->bridge.exchange(c->bridge.ctx, sends, ns, recvs, nr, r);
}

static int rounds(nc_alg_id pattern, int nodes)
{
    if (pattern == NC_ALG_RING) return nodes - 1;
    int count = 0;
    for (int d = 1; d < nodes; d <<= 1) count++;
    return count;
}

static int exchange_round(nc_comm *c, const nc_regions *g, nc_alg_id pattern, int round, nc_bridge_req *r)
{
    int me = c->bridge.rank, nodes = g->nodes, d = 1 << round;
    if (pattern == NC_ALG_RING)
        return exchange_runs(c, g, (me + 1) % nodes, me - round, (me + nodes - 1) % nodes, me - round - 1, 1, r);
    if (pattern == NC_ALG_RECURSIVE_DOUBLING)
        return exchange_runs(c, g, me ^ d, me & ~(d - 1), me ^ d, (me ^ d) & ~(d - 1), d, r);
    int count = d < nodes - d ? d : nodes - d;
    return exchange_runs(c, g, (me + d) % nodes, me - count + 1, (me - d + nodes) % nodes, me - d - count + 1, count, r);
}

void nc_spread_setup(nc_spread_step *st, nc_alg_id pattern, const nc_regions *g)
{
    st->pc = 0;
    st->pattern = pattern;
    st->g = g;
}

nc_step nc_spread_progress(nc_op *op, nc_spread_step *st)
{
    NC_BEGIN(st);
    for (st->round = 0; st->round < rounds(st->pattern, st->g->nodes) && !op->err; st->round++)
        NC_BRIDGE_STEP(op, st, &st->req, exchange_round(op->c, st->g, st->pattern, st->round, op->bridge_req));
    NC_END(st);
}
