/* MPI_Alltoall, MPI_Alltoallv, MPI_Alltoallw on one node (seed 001's binning).
 *
 * Every rank publishes a span table: where in its send buffer each receiver's block is
 * (small totals are copied into its slot).  Every rank then reads, straight from each
 * sender, only the blocks it receives something from: zero-size peers are skipped entirely
 * (no flag read, no wait, no message), and small blocks are read before large ones so a
 * peer with little to give is not kept waiting behind big copies.  A rank whose buffer is
 * read directly waits, before returning, only for the ranks it sent something to.  With
 * single-copy reads one transfer is in flight per rank; the copies of different ranks run
 * in parallel.
 *
 * Across nodes every rank exchanges its blocks with the remote ranks it has data for, point
 * to point through the host MPI, with the same bins: zero-size peers get no message at all
 * (the PETSc neighbour pattern costs the neighbours, not the communicator size), small
 * blocks are sent before large ones, with at most NODECOLL_ALLTOALL_WINDOW sends in flight.
 * The leaders do not aggregate here: how much a node receives from another is known to no
 * single rank of it without an extra exchange of counts. */
#include <stdlib.h>
#include <string.h>

#include "move.h"
#include "../core/fatal.h"
#include "../core/team.h"
#include "select.h"

static int on_my_node(const nc_comm *c, int i) { return c->node_of[i] == c->node_of[c->rank]; }

/* In place: my send data is my receive buffer, which my own reads overwrite; publish a
 * compact copy instead (spans then refer to it). */
static char *copy_for_in_place(const nc_comm *c, const nc_vec *recv, size_t *offs, size_t *lens)
{
    size_t total = 0;
    for (int i = 0; i < c->size; i++) total += i == c->rank ? 0 : nc_vec_len(recv, i);
    char *copy = nc_alloc_or_die(total);
    size_t at = 0;
    for (int i = 0; i < c->size; i++) {
        lens[i] = i == c->rank ? 0 : nc_vec_len(recv, i);
        offs[i] = at;
        nc_vec_pack(recv, i, copy + at, lens[i]);
        at += lens[i];
    }
    return copy;
}

/* My span table for every receiver with a non-empty block; returns whether in the slot. */
static int publish_spans(nc_comm *c, uint64_t seq, const nc_vec *send, int *nreaders)
{
    nc_node *n = &c->node;
    char *slot;
    nc_span *table = nc_move_claim(c, &slot);
    size_t total = 0, at = 0;
    for (int i = 0; i < c->size; i++) total += i == c->rank || !on_my_node(c, i) ? 0 : nc_vec_len(send, i);
    int in_slot = nc_move_use_slot(c, total);
    *nreaders = 0;
    for (int i = 0; i < c->size; i++) {
        size_t len = nc_vec_len(send, i);
        if (i == c->rank || !len || !on_my_node(c, i)) continue;
        table[i] = (nc_span){in_slot ? at : nc_vec_off(send, i), len};
        if (in_slot) memcpy(slot + at, nc_vec_at(send, i), len);
        at += len;
        n->move_readers[(*nreaders)++] = c->node_rank_of[i];
    }
    nc_move_publish(n, seq, send->base, in_slot, total);
    return in_slot;
}

typedef struct bin_reads {
    nc_comm *c;
    uint64_t seq;
    const nc_vec *recv;
    int *peers;
} bin_reads;

static void read_peer(void *ctx, size_t k)
{
    bin_reads *b = ctx;
    int i = b->peers[k];
    nc_pub p = nc_move_await(b->c, b->c->node_rank_of[i], b->seq);
    nc_move_read_span_block(b->c, &p, b->recv, i);
}

/* Seed 001's bins: zero (skipped), small (read first), large.  A thread team divides the
 * peers of a bin among its threads (seed 004's "Group"). */
static void read_bin(nc_comm *c, uint64_t seq, const nc_vec *recv, int small, int *peers)
{
    size_t limit = (size_t)c->cfg.alltoall_small, bytes = 0;
    int count = 0;
    for (int j = 1; j < c->size; j++) {
        int i = (c->rank + j) % c->size;
        size_t len = nc_vec_len(recv, i);
        if (!len || (len <= limit) != small || !on_my_node(c, i)) continue;
        peers[count++] = i;
        bytes += len;
    }
    bin_reads b = {c, seq, recv, peers};
    nc_par_each(read_peer, &b, (size_t)count, bytes);
}

/* The remote part: every receive posted at once, then the sends, small bin first, in a
 * rotated order so the ranks of a node do not all start with the same peer. */
static int exchange_remote(nc_comm *c, const nc_vec *send, const nc_vec *recv)
{
    nc_xfer *sends = nc_alloc_or_die(sizeof(nc_xfer) * 2 * (size_t)c->size), *recvs = sends + c->size;
    size_t limit = (size_t)c->cfg.alltoall_small;
    int nsends = 0, nrecvs = 0;
    for (int small = 1; small >= 0; small--)
        for (int j = 1; j < c->size; j++) {
            int i = (c->rank + j) % c->size;
            size_t len = nc_vec_len(send, i);
            if (len && (len <= limit) == small && !on_my_node(c, i))
                sends[nsends++] = (nc_xfer){i, nc_vec_at(send, i), len};
        }
    /* The host receives bytes: blocks with a layout arrive in one scratch and are unpacked. */
    size_t scratch_bytes = 0;
    for (int i = 0; recv->blocks && i < c->size; i++)
        if (!on_my_node(c, i)) scratch_bytes += nc_vec_len(recv, i);
    char *scratch = scratch_bytes ? nc_alloc_or_die(scratch_bytes) : NULL, *at = scratch;
    for (int i = 0; i < c->size; i++) {
        size_t len = nc_vec_len(recv, i);
        if (!len || on_my_node(c, i)) continue;
        recvs[nrecvs++] = (nc_xfer){i, scratch ? at : nc_vec_at(recv, i), len};
        at += scratch ? len : 0;
    }
    int err = nsends || nrecvs ? c->bridge.comm_exchange(c->bridge.comm_ctx, sends, nsends, recvs, nrecvs,
                                                         (int)c->cfg.alltoall_window, NULL)
                               : 0;
    for (int r = 0; scratch && !err && r < nrecvs; r++) nc_vec_unpack(recv, recvs[r].peer, recvs[r].buf, recvs[r].bytes);
    free(scratch);
    free(sends);
    return err;
}

int nc_alltoallv(nc_comm *c, nc_coll_id coll, const nc_vec *send, const nc_vec *recv)
{
    nc_node *n = &c->node;
    nc_alg_id alg = nc_select(c, coll, 0);
    uint64_t seq = nc_move_round(n);
    size_t *in_place = NULL;
    nc_vec copy = {0};
    if (!send) {
        in_place = nc_alloc_or_die(sizeof(size_t) * 2 * (size_t)c->size);
        copy = (nc_vec){.lens = in_place + c->size, .offs = in_place};
        copy.base = copy_for_in_place(c, recv, in_place, in_place + c->size);
        send = &copy;
    }
    int nreaders;
    int in_slot = publish_spans(c, seq, send, &nreaders);
    int *peers = nc_alloc_or_die(sizeof(int) * (size_t)c->size);
    read_bin(c, seq, recv, 1, peers);
    read_bin(c, seq, recv, 0, peers);
    free(peers);
    /* My readers never wait on a remote rank: my reads are done before the remote part. */
    nc_move_done(n, seq);
    int err = nc_comm_multinode(c) ? exchange_remote(c, send, recv) : 0;
    if (!in_place)
        nc_vec_unpack(recv, c->rank, nc_vec_at(send, c->rank), nc_fit(c, nc_vec_len(send, c->rank), nc_vec_len(recv, c->rank)));
    nc_move_release(n, seq, in_slot, n->move_readers, nreaders);
    if (in_place) {
        free(copy.base);
        free(in_place);
    }
    size_t bytes = 0;
    for (int i = 0; i < c->size; i++) bytes += nc_vec_len(recv, i);
    nc_stats_count(coll, alg, bytes);
    return nc_call_result(c, err);
}
