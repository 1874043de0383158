/* MPI_Alltoall, MPI_Alltoallv, MPI_Alltoallw on one node (seed 001's binning).
 *
 * Every rank publishes a span table: where in its send buffer each receiver's block is
 * (small totals are copied into its slot).  Every rank then reads, straight from each
 * sender, only the blocks it receives something from: zero-size peers are skipped entirely
 * (no flag read, no wait, no message), and small blocks are read before large ones so a
 * peer with little to give is not kept waiting behind big copies.  A rank whose buffer is
 * read directly waits, before returning, only for the ranks it sent something to.  With
 * single-copy reads one transfer is in flight per rank; the copies of different ranks run
 * in parallel.  Across several nodes these calls use the host MPI for now (select.c). */
#include <stdlib.h>
#include <string.h>

#include "move.h"
#include "select.h"

static size_t min_size(size_t a, size_t b) { return a < b ? a : b; }

/* In place: my send data is my receive buffer, which my own reads overwrite; publish a
 * compact copy instead (spans then refer to it). */
static char *copy_for_in_place(const nc_comm *c, const nc_vec *recv, size_t *offs, size_t *lens)
{
    size_t total = 0;
    for (int i = 0; i < c->size; i++) total += i == c->rank ? 0 : nc_vec_len(recv, i);
    char *copy = nc_move_alloc(total);
    size_t at = 0;
    for (int i = 0; i < c->size; i++) {
        lens[i] = i == c->rank ? 0 : nc_vec_len(recv, i);
        offs[i] = at;
        if (lens[i]) memcpy(copy + at, nc_vec_at(recv, i), lens[i]);
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
    for (int i = 0; i < c->size; i++) total += i == c->rank ? 0 : nc_vec_len(send, i);
    int in_slot = nc_move_use_slot(c, total);
    *nreaders = 0;
    for (int i = 0; i < c->size; i++) {
        size_t len = nc_vec_len(send, i);
        if (i == c->rank || !len) continue;
        table[i] = (nc_span){in_slot ? at : nc_vec_off(send, i), len};
        if (in_slot) memcpy(slot + at, nc_vec_at(send, i), len);
        at += len;
        n->move_readers[(*nreaders)++] = c->node_rank_of[i];
    }
    nc_move_publish(n, seq, send->base, in_slot, total);
    return in_slot;
}

/* Seed 001's bins: zero (skipped), small (read first), large. */
static void read_bin(nc_comm *c, uint64_t seq, const nc_vec *recv, int small)
{
    size_t limit = (size_t)c->cfg.alltoall_small;
    for (int j = 1; j < c->size; j++) {
        int i = (c->rank + j) % c->size;
        size_t len = nc_vec_len(recv, i);
        if (!len || (len <= limit) != small) continue;
        nc_pub p = nc_move_await(c, c->node_rank_of[i], seq);
        nc_move_read_span(c, &p, c->rank, nc_vec_at(recv, i), len);
    }
}

int nc_alltoallv(nc_comm *c, nc_coll_id coll, const nc_vec *send, const nc_vec *recv)
{
    nc_node *n = &c->node;
    nc_alg_id alg = nc_select(c, coll, 0);
    uint64_t seq = nc_move_round(n);
    size_t *in_place = NULL;
    nc_vec copy = {0};
    if (!send) {
        in_place = nc_move_alloc(sizeof(size_t) * 2 * (size_t)c->size);
        copy = (nc_vec){.lens = in_place + c->size, .offs = in_place};
        copy.base = copy_for_in_place(c, recv, in_place, in_place + c->size);
        send = &copy;
    }
    int nreaders;
    int in_slot = publish_spans(c, seq, send, &nreaders);
    read_bin(c, seq, recv, 1);
    read_bin(c, seq, recv, 0);
    if (!in_place)
        memcpy(nc_vec_at(recv, c->rank), nc_vec_at(send, c->rank), min_size(nc_vec_len(recv, c->rank), nc_vec_len(send, c->rank)));
    nc_move_done(n, seq);
    nc_move_release(n, seq, in_slot, n->move_readers, nreaders);
    if (in_place) {
        free(copy.base);
        free(in_place);
    }
    size_t bytes = 0;
    for (int i = 0; i < c->size; i++) bytes += nc_vec_len(recv, i);
    nc_stats_count(coll, alg, bytes);
    return 0;
}
