/* Barrier: n-ary dissemination on one node (Bierbaum et al.), in the pull form: in step s a
 * rank waits for the `dissem` flags of the n-1 ranks at distances j * n^s behind it to show
 * step s, then posts step s+1.  A rank that has posted step s has heard from n^s ranks
 * behind it, so after ceil(log_n P) steps everyone has heard from everyone.  Flags are read
 * where their owner wrote them, never written by others. */
#include "../algorithms.h"
#include "../ledger.h"

typedef struct dissemination_state {
    int pc;
    int radix, step, j;
    long dist;
    uint64_t seq;
} dissemination_state;
NC_STATE_FITS(dissemination_state);

/* Flag value meaning "finished every step before `step` of barrier `seq`". */
static uint64_t step_value(uint64_t seq, int step) { return seq * 64 + (uint64_t)step; }

/* Radix P itself up to 16 participants (one step: every rank reads the P-1 other flags),
 * about 6 above: the fastest in Bierbaum et al.'s measurements (docs/results-costs.md for
 * this machine's). */
static void plan(nc_op *op, void *state)
{
    dissemination_state *st = state;
    const nc_comm *c = op->c;
    if (c->cfg.barrier_radix >= 2) st->radix = (int)c->cfg.barrier_radix;
    else st->radix = c->node.size <= 16 ? (c->node.size < 2 ? 2 : c->node.size) : 6;
}

/* (distance < n->size: a subtraction, not two integer divisions, on the barrier's path) */
static int peer_behind(const nc_node *n, long distance)
{
    long peer = n->rank - distance;
    return (int)(peer < 0 ? peer + n->size : peer);
}

static nc_step progress(nc_op *op, void *state)
{
    dissemination_state *st = state;
    nc_node *n = &op->c->node;
    nc_flag *mine = &nc_node_ctl(n, n->rank)->dissem;
    NC_BEGIN(st);
    st->seq = nc_take_sync(n);
    st->step = 0;
    nc_flag_post(mine, step_value(st->seq, 0));
    for (st->dist = 1; st->dist < n->size; st->dist *= st->radix, st->step++) {
        for (st->j = 1; st->j < st->radix && st->j * st->dist < n->size; st->j++)
            NC_AWAIT(st, nc_flag_reached(op, &nc_node_ctl(n, peer_behind(n, st->j * st->dist))->dissem,
                                         step_value(st->seq, st->step)));
        nc_flag_post(mine, step_value(st->seq, st->step + 1));
    }
    NC_END(st);
}

/* Across nodes the leaders must hear from their whole node before the bridge step, which a
 * fan-in expresses directly: there the tree runs instead. */
static int one_node(const nc_comm *c, const nc_args *a) { return !nc_comm_multinode(c); }

const nc_algorithm nc_barrier_dissemination = {NC_ALG_DISSEMINATION, one_node, plan, progress, 0};
