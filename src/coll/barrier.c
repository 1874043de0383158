/* MPI_Barrier on shared memory (seed 003): flat check-in/check-out, fan-in/fan-out tree,
 * n-ary dissemination; across nodes the leaders meet through the bridge between a node
 * fan-in and a node fan-out. */
#include "comm.h"
#include "select.h"
#include "../core/tree.h"

/* Every child in the fan-in tree has arrived at `seq`; then tell my parent. */
static void fan_in(nc_node *n, int radix, uint64_t seq)
{
    int first = nc_tree_first_child(n->rank, radix);
    int count = nc_tree_child_count(n->rank, radix, n->size);
    for (int i = 0; i < count; i++) nc_wait_ge(&nc_node_ctl(n, first + i)->fanin, seq, &n->wait);
    if (n->rank) nc_flag_post(&nc_node_ctl(n, n->rank)->fanin, seq);
}

/* Wait for my parent's release of `seq`, then release my own children. */
static void fan_out(nc_node *n, int radix, uint64_t seq)
{
    if (n->rank) nc_wait_ge(&nc_node_ctl(n, nc_tree_parent(n->rank, radix))->fanout, seq, &n->wait);
    if (nc_tree_child_count(n->rank, radix, n->size)) nc_flag_post(&nc_node_ctl(n, n->rank)->fanout, seq);
}

/* Flag value meaning "finished every step before `step` of barrier `seq`". */
static uint64_t dissem_value(uint64_t seq, int step) { return seq * 64 + (uint64_t)step; }

/* Step s: hear from the n-1 ranks at distances j * radix^s behind me; each of them has
 * heard from radix^s ranks behind it, so after ceil(log_radix P) steps everyone has heard
 * from everyone.  Flags are read where their owner wrote them, never written by others. */
static void dissemination(nc_node *n, int radix, uint64_t seq)
{
    nc_flag *mine = &nc_node_ctl(n, n->rank)->dissem;
    int step = 0;
    nc_flag_post(mine, dissem_value(seq, 0));
    for (long dist = 1; dist < n->size; dist *= radix, step++) {
        for (long j = 1; j < radix && j * dist < n->size; j++) {
            int peer = (int)((n->rank - j * dist % n->size + n->size) % n->size);
            nc_wait_ge(&nc_node_ctl(n, peer)->dissem, dissem_value(seq, step), &n->wait);
        }
        nc_flag_post(mine, dissem_value(seq, step + 1));
    }
}

/* Seed 003 measured one all-to-all step (n = P) fastest up to 16 participants and a
 * radix near 6 above; on this project's 2-core machine n = P also won at 2-4 ranks. */
static int dissemination_radix(const nc_comm *c)
{
    if (c->cfg.barrier_radix >= 2) return (int)c->cfg.barrier_radix;
    return c->node.size <= 16 ? (c->node.size < 2 ? 2 : c->node.size) : 6;
}

int nc_barrier(nc_comm *c)
{
    nc_node *n = &c->node;
    nc_alg_id alg = n->size > 1 ? nc_select(c, NC_COLL_BARRIER, 0) : NC_ALG_COUNT;
    uint64_t seq = ++n->sync_seq;
    int fanin = alg == NC_ALG_FLAT ? n->size : (int)c->cfg.barrier_fanin;
    int fanout = alg == NC_ALG_FLAT ? n->size : (int)c->cfg.barrier_fanout;
    int err = 0;

    if (alg == NC_ALG_DISSEMINATION && !nc_comm_multinode(c)) {
        dissemination(n, dissemination_radix(c), seq);
    } else {
        /* Across nodes the leaders must hear from their whole node before the bridge step,
         * which a fan-in expresses directly; dissemination falls back to the tree there. */
        if (alg == NC_ALG_DISSEMINATION) alg = NC_ALG_TREE;
        if (n->size > 1) fan_in(n, fanin, seq);
        if (nc_comm_multinode(c) && nc_comm_is_leader(c)) {
            err = c->bridge.barrier(c->bridge.ctx);
            nc_stats_count(NC_COLL_BARRIER, NC_ALG_BRIDGE, 0);
        }
        if (n->size > 1) fan_out(n, fanout, seq);
    }
    if (alg != NC_ALG_COUNT) nc_stats_count(NC_COLL_BARRIER, alg, 0);
    return err;
}
