/* MPI_Gather(v) and MPI_Scatter(v) (seed 002's node-then-bridge shape, seed 001's rule that
 * zero-size peers are never contacted).
 *
 * One node: every sender writes its block straight into the root's receive buffer (gather),
 * or every receiver reads its block straight from the root's buffer (scatter), one
 * single-copy call per block, so the copies run on all ranks at once; small blocks go
 * through a slot (move.h).
 *
 * Several nodes: each node's blocks are collected at its leader (node-sorted), the leaders
 * exchange node blocks over the bridge with the root's leader, and the root (gather) or
 * every receiver (scatter) reads its data from its leader. */
#include <stdlib.h>
#include <string.h>

#include "move.h"
#include "select.h"
#include "../core/fatal.h"
#include "../core/team.h"

/* ---- one node ------------------------------------------------------------------------ */

/* Small blocks travel through the sender's slot and the root copies them out; a large
 * block is written by its sender straight into the root's receive buffer (the root
 * publishes a span table over it), so the senders' copies run in parallel with each other
 * and with the root's copy of its own block.  The sender alone decides by its own length;
 * the root learns which way each block came from its publication. */
static void gather_on_node(nc_comm *c, const void *send, size_t send_bytes, const nc_vec *recv, int root)
{
    nc_node *n = &c->node;
    uint64_t seq = nc_move_round(n);
    int root_nr = c->node_rank_of[root];
    if (c->rank != root) {
        if (!send_bytes) return;
        if (nc_move_use_slot(c, send_bytes)) {
            nc_move_publish_block(c, seq, send, send_bytes, &root_nr, 1);
            return;
        }
        nc_move_claim(c, NULL); /* my flag line is rewritten below: my last readers must be done */
        nc_pub p = nc_move_await(c, root_nr, seq);
        if (!p.base) { /* the root's receive layout is its datatype's: it reads my block itself */
            nc_move_offer(c, seq, NULL, send, send_bytes, &root_nr, 1);
            return;
        }
        nc_span s = p.table[c->rank];
        nc_move_write(c, &p, s.off, send, send_bytes < s.len ? send_bytes : s.len);
        nc_move_publish(n, seq, NULL, NC_PUB_PUSHED, send_bytes); /* the root judges the fit */
        /* My flag line must keep this publication until the root has read it: my next
         * claim waits for the root, as after a slot publication. */
        nc_move_release(n, seq, 1, &root_nr, 1);
        return;
    }
    nc_span *table = nc_move_claim(c, NULL);
    if (!recv->blocks) /* a typed vector has no single buffer to read into: senders publish */
        for (int i = 0; i < c->size; i++) table[i] = (nc_span){nc_vec_off(recv, i), nc_vec_len(recv, i)};
    nc_move_publish(n, seq, recv->blocks ? NULL : recv->base, 0, 0);
    if (send != NC_IN_PLACE) nc_vec_unpack(recv, root, send, nc_fit(c, send_bytes, nc_vec_len(recv, root)));
    for (int i = 0; i < c->size; i++) {
        size_t len = nc_vec_len(recv, i);
        if (!len || i == root) continue;
        nc_pub p = nc_move_await(c, c->node_rank_of[i], seq);
        size_t fit = nc_fit(c, p.bytes, len);
        if (p.in_slot != NC_PUB_PUSHED) nc_move_read_block(c, &p, 0, recv, i, fit);
    }
    nc_move_done(n, seq);
}

/* The root's span table: block i of `send` for every rank i that gets data (slot copies
 * compacted).  Returns whether the data went into the slot; lists the readers. */
static int publish_blocks(nc_comm *c, uint64_t seq, const nc_vec *send, int skip, int *readers, int *nreaders)
{
    char *slot;
    nc_span *table = nc_move_claim(c, &slot);
    size_t total = 0;
    *nreaders = 0;
    for (int i = 0; i < c->size; i++)
        if (i != skip) total += nc_vec_len(send, i);
    int in_slot = nc_move_use_slot(c, total);
    size_t at = 0;
    for (int i = 0; i < c->size; i++) {
        size_t len = nc_vec_len(send, i);
        if (i == skip || !len) continue;
        table[i] = (nc_span){in_slot ? at : nc_vec_off(send, i), len};
        if (in_slot) memcpy(slot + at, nc_vec_at(send, i), len);
        at += len;
        readers[(*nreaders)++] = c->node_rank_of[i];
    }
    nc_move_publish(&c->node, seq, send->base, in_slot, total);
    return in_slot;
}

static void scatter_on_node(nc_comm *c, const nc_vec *send, nc_data *recv, size_t recv_bytes, int root)
{
    nc_node *n = &c->node;
    uint64_t seq = nc_move_round(n);
    if (c->rank == root) {
        int nreaders;
        int in_slot = publish_blocks(c, seq, send, root, n->move_readers, &nreaders);
        if (recv) nc_data_unpack(recv, 0, nc_vec_at(send, root), nc_fit(c, nc_vec_len(send, root), recv_bytes));
        nc_move_done(n, seq);
        nc_move_release(n, seq, in_slot, n->move_readers, nreaders);
        return;
    }
    if (recv_bytes) {
        nc_pub p = nc_move_await(c, c->node_rank_of[root], seq);
        nc_move_read_span_data(c, &p, c->rank, recv, recv_bytes);
    }
    nc_move_done(n, seq);
}

/* ---- several nodes ------------------------------------------------------------------- */

/* Root's node, round 1: the root publishes its block for its leader together with every
 * node's total (its span table, indexed by node), which only the root knows. */
static void root_offers_block_and_totals(nc_comm *c, uint64_t seq, const void *mine, size_t bytes, const nc_vec *recv)
{
    char *slot;
    nc_span *table = nc_move_claim(c, &slot);
    size_t *sorted = nc_move_sorted_offsets(c, recv);
    for (int k = 0; k < c->bridge.size; k++)
        table[k] = (nc_span){nc_move_node_off(c, sorted, k), nc_move_node_bytes(c, sorted, k)};
    free(sorted);
    static const int leader = 0;
    nc_move_offer(c, seq, slot, mine, bytes, &leader, 1);
}

/* The root's leader: receives every other node's region into the node-sorted buffer. */
static int receive_node_regions(nc_comm *c, char *all, const nc_span *totals, int root_node)
{
    int nodes = c->bridge.size, nrecv = 0;
    nc_xfer *recvs = nc_alloc_or_die(sizeof(nc_xfer) * (size_t)nodes);
    for (int k = 0; k < nodes; k++)
        if (k != root_node && totals[k].len) recvs[nrecv++] = (nc_xfer){k, all + totals[k].off, totals[k].len};
    int err = c->bridge.exchange(c->bridge.ctx, NULL, 0, recvs, nrecv, NULL);
    free(recvs);
    return err;
}

/* Round 2 on the root's node: the root reads every other rank's block from its leader. */
static void root_reads_from_leader(nc_comm *c, uint64_t seq, const nc_vec *recv, int root)
{
    nc_pub p = nc_move_await(c, 0, seq);
    size_t *sorted = nc_move_sorted_offsets(c, recv);
    for (int i = 0; i < c->size; i++)
        if (i != root) nc_move_read_block(c, &p, sorted[i], recv, i, nc_vec_len(recv, i));
    free(sorted);
    nc_move_done(&c->node, seq);
}

static int gather_across_nodes(nc_comm *c, const void *send, size_t send_bytes, const nc_vec *recv, int root)
{
    nc_node *n = &c->node;
    int root_node = c->node_of[root], is_root = c->rank == root, err = 0;
    /* In place (at the root only): the root's block travels from where it already is, at
     * its full length, so every node region keeps the layout the offsets describe. */
    int in_place = send == NC_IN_PLACE; /* (the root's alone) */
    const void *mine = in_place ? nc_vec_at(recv, root) : send;
    if (in_place) send_bytes = nc_vec_len(recv, root);
    uint64_t seq = nc_move_round(n);
    if (c->node_of[c->rank] != root_node) {
        char *region = NULL;
        size_t bytes = nc_move_collect(c, seq, send, send_bytes, &region, 0);
        nc_xfer to_root = {root_node, region, bytes};
        if (nc_comm_is_leader(c) && bytes) err = c->bridge.exchange(c->bridge.ctx, &to_root, 1, NULL, 0, NULL);
        free(region);
        return err;
    }
    if (is_root && !nc_comm_is_leader(c)) root_offers_block_and_totals(c, seq, mine, send_bytes, recv);
    if (nc_comm_is_leader(c)) {
        nc_span *totals = nc_alloc_or_die(sizeof(nc_span) * (size_t)c->bridge.size);
        if (is_root) {
            size_t *sorted = nc_move_sorted_offsets(c, recv);
            for (int k = 0; k < c->bridge.size; k++)
                totals[k] = (nc_span){nc_move_node_off(c, sorted, k), nc_move_node_bytes(c, sorted, k)};
            free(sorted);
        } else {
            nc_pub rp = nc_move_await(c, c->node_rank_of[root], seq);
            memcpy(totals, rp.table, sizeof(nc_span) * (size_t)c->bridge.size);
        }
        size_t all_bytes = totals[c->bridge.size - 1].off + totals[c->bridge.size - 1].len;
        char *all = nc_alloc_or_die(all_bytes), *mine_region = all + totals[root_node].off;
        nc_move_collect(c, seq, mine, send_bytes, &mine_region, totals[root_node].len);
        err = receive_node_regions(c, all, totals, root_node);
        free(totals);
        uint64_t seq2 = nc_move_round(n);
        int root_nr = c->node_rank_of[root];
        nc_move_claim(c, NULL);
        nc_move_publish(n, seq2, all, 0, all_bytes);
        if (is_root) root_reads_from_leader(c, seq2, recv, root);
        nc_move_release(n, seq2, 0, &root_nr, 1);
        free(all);
    } else {
        if (!is_root) nc_move_collect(c, seq, send, send_bytes, NULL, 0);
        uint64_t seq2 = nc_move_round(n);
        if (is_root) root_reads_from_leader(c, seq2, recv, root);
    }
    if (is_root && !in_place) nc_vec_unpack(recv, root, send, nc_fit(c, send_bytes, nc_vec_len(recv, root)));
    return err;
}

/* Root's node, scatter: the root publishes a span for every rank (empty ones included, so
 * its leader learns every length); its node's members read their own span, the leader reads
 * every other node's blocks into a node-sorted buffer and sends each node its region. */
static int root_publishes_all_spans(nc_comm *c, uint64_t seq, const nc_vec *send, int root)
{
    nc_node *n = &c->node;
    char *slot;
    nc_span *table = nc_move_claim(c, &slot);
    size_t total = 0, at = 0;
    for (int i = 0; i < c->size; i++) total += i == root ? 0 : nc_vec_len(send, i);
    int in_slot = nc_move_use_slot(c, total), nreaders = 0;
    for (int i = 0; i < c->size; i++) {
        size_t len = i == root ? 0 : nc_vec_len(send, i);
        table[i] = (nc_span){in_slot ? at : nc_vec_off(send, i), len};
        if (in_slot && len) memcpy(slot + at, nc_vec_at(send, i), len);
        at += len;
        /* Readers: my node's receivers, and my leader, which serves the other nodes. */
        int local = c->node_of[i] == c->node_of[root];
        if (i != root && local && (len || c->node_rank_of[i] == 0)) n->move_readers[nreaders++] = c->node_rank_of[i];
    }
    nc_move_publish(n, seq, send->base, in_slot, total);
    n->move_nreaders = nreaders;
    return in_slot;
}

/* The root's leader: every other node's blocks, node-sorted, sent to each node's leader. */
static int leader_forwards_regions(nc_comm *c, uint64_t seq, const nc_pub *p, int root)
{
    size_t *lens = nc_alloc_or_die(sizeof(size_t) * (size_t)c->size);
    for (int i = 0; i < c->size; i++) lens[i] = p->table[i].len;
    nc_vec by_len = {.lens = lens};
    size_t *sorted = nc_move_sorted_offsets(c, &by_len);
    char *all = nc_alloc_or_die(sorted[c->size]);
    int nodes = c->bridge.size, nsend = 0, root_node = c->node_of[root];
    for (int i = 0; i < c->size; i++)
        if (c->node_of[i] != root_node) nc_move_read_span(c, p, i, all + sorted[i], lens[i]);
    nc_move_done(&c->node, seq); /* the root may reuse its buffer while I talk to the other nodes */
    nc_xfer *sends = nc_alloc_or_die(sizeof(nc_xfer) * (size_t)nodes);
    for (int k = 0; k < nodes; k++) {
        size_t bytes = nc_move_node_bytes(c, sorted, k);
        if (k != root_node && bytes) sends[nsend++] = (nc_xfer){k, all + nc_move_node_off(c, sorted, k), bytes};
    }
    int err = c->bridge.exchange(c->bridge.ctx, sends, nsend, NULL, 0, NULL);
    free(sends);
    free(all);
    free(sorted);
    free(lens);
    return err;
}

static int scatter_from_root_node(nc_comm *c, uint64_t seq, const nc_vec *send, nc_data *recv, size_t recv_bytes, int root)
{
    nc_node *n = &c->node;
    int err = 0, in_slot = 0;
    if (c->rank == root) {
        in_slot = root_publishes_all_spans(c, seq, send, root);
        if (recv) nc_data_unpack(recv, 0, nc_vec_at(send, root), nc_fit(c, nc_vec_len(send, root), recv_bytes));
    }
    if (recv_bytes || nc_comm_is_leader(c)) {
        nc_pub p = nc_move_await(c, c->node_rank_of[root], seq);
        if (c->rank != root) nc_move_read_span_data(c, &p, c->rank, recv, recv_bytes);
        if (nc_comm_is_leader(c)) err = leader_forwards_regions(c, seq, &p, root);
    }
    nc_move_done(n, seq);
    if (c->rank == root) nc_move_release(n, seq, in_slot, n->move_readers, n->move_nreaders);
    return err;
}

/* Other nodes: the members tell the leader how much they expect, the leader receives its
 * node's region from the root's leader and the members read their part from it. */
static int scatter_to_other_node(nc_comm *c, uint64_t seq, nc_data *recv, size_t recv_bytes, int root)
{
    nc_node *n = &c->node;
    static const int leader = 0;
    int err = 0;
    if (!nc_comm_is_leader(c)) {
        nc_move_publish_block(c, seq, NULL, recv_bytes, &leader, 1);
        uint64_t seq2 = nc_move_round(n);
        if (recv_bytes) {
            nc_pub p = nc_move_await(c, 0, seq2);
            nc_move_read_span_data(c, &p, c->rank, recv, recv_bytes);
        }
        nc_move_done(n, seq2);
        return 0;
    }
    int first = c->node_start[c->node_of[c->rank]];
    size_t total = recv_bytes;
    for (int r = 1; r < n->size; r++) total += nc_move_await(c, r, seq).bytes;
    nc_move_done(n, seq);
    char *region = nc_alloc_or_die(total);
    nc_xfer from_root = {c->node_of[root], region, total};
    if (total) err = c->bridge.exchange(c->bridge.ctx, NULL, 0, &from_root, 1, NULL);
    uint64_t seq2 = nc_move_round(n);
    char *slot;
    nc_span *table = nc_move_claim(c, &slot);
    size_t at = 0;
    int nreaders = 0;
    for (int r = 0; r < n->size; r++) {
        int who = c->node_members[first + r];
        size_t len = r ? nc_move_await(c, r, seq).bytes : recv_bytes;
        table[who] = (nc_span){at, len};
        at += len;
        if (r && len) n->move_readers[nreaders++] = r;
    }
    if (recv_bytes) nc_data_unpack(recv, 0, region, recv_bytes);
    nc_move_offer(c, seq2, slot, region, total, n->move_readers, nreaders);
    free(region);
    return err;
}

static int scatter_across_nodes(nc_comm *c, const nc_vec *send, nc_data *recv, size_t recv_bytes, int root)
{
    uint64_t seq = nc_move_round(&c->node);
    if (c->node_of[c->rank] == c->node_of[root]) return scatter_from_root_node(c, seq, send, recv, recv_bytes, root);
    return scatter_to_other_node(c, seq, recv, recv_bytes, root);
}

int nc_gatherv(nc_comm *c, nc_coll_id coll, const void *send, size_t send_bytes, const nc_vec *recv, int root)
{
    nc_alg_id alg = nc_select(c, coll, send_bytes);
    int err = 0;
    if (nc_comm_multinode(c)) {
        err = gather_across_nodes(c, send, send_bytes, recv, root);
        if (nc_comm_is_leader(c)) nc_stats_count(coll, NC_ALG_BRIDGE, send_bytes);
    } else {
        gather_on_node(c, send, send_bytes, recv, root);
    }
    nc_stats_count(coll, alg, send_bytes);
    return nc_call_result(c, err);
}

int nc_scatterv(nc_comm *c, nc_coll_id coll, const nc_vec *send, nc_data *recv, size_t recv_bytes, int root)
{
    nc_alg_id alg = nc_select(c, coll, recv_bytes);
    int err = 0;
    if (nc_comm_multinode(c)) {
        err = scatter_across_nodes(c, send, recv, recv_bytes, root);
        if (nc_comm_is_leader(c)) nc_stats_count(coll, NC_ALG_BRIDGE, recv_bytes);
    } else {
        scatter_on_node(c, send, recv, recv_bytes, root);
    }
    nc_stats_count(coll, alg, recv_bytes);
    return nc_call_result(c, err);
}
