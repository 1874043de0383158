/* Node-shared Bcast, Allgather(v) and Allreduce (Zhou et al.): every rank of a node reads the
 * result from one region; only node leaders move data between nodes.  The protocol is in
 * shared.h; why it is safe, in docs/design.md ("Node-shared results").
 *
 * Where Zhou et al. put a node barrier before and after each call, here a writer waits only
 * for the releases of the previous result (usually long done), and a reader only for the
 * one flag that announces the new result. */
#include "shared.h"

#include <stdlib.h>
#include <string.h>

#include "../core/fatal.h"

/* ---- flags ---------------------------------------------------------------------------- */

static int has_peers(const nc_shared *h) { return h->comm->node.size > 1; }

static nc_shared_flags *flags_of(const nc_shared *h, int node_rank)
{
    return &nc_node_ctl(&h->comm->node, node_rank)->shared[h->slot];
}

static void post_state(nc_shared *h, uint64_t v)
{
    if (!has_peers(h) || v <= h->state_posted) return;
    nc_flag_post(&flags_of(h, h->comm->node.rank)->state, v);
    h->state_posted = v;
}

/* The signature of call k sits in aux[k % 2]: a rank may arrive at call k+1 while a slow
 * peer still compares call k's, but it cannot arrive at k+2 before everyone released k. */
static uint64_t signature_of(const nc_flag *state, uint64_t k)
{
    return atomic_load_explicit(&state->aux[k & 1], memory_order_relaxed);
}

/* I arrived at call k with these sizes (which also releases result k-1). */
static void arrive(nc_shared *h, uint64_t k, uint64_t signature)
{
    if (!has_peers(h)) return;
    nc_flag *state = &flags_of(h, h->comm->node.rank)->state;
    atomic_store_explicit(&state->aux[k & 1], signature, memory_order_relaxed);
    post_state(h, 2 * k);
}

/* Waits until every other rank of the node has posted a state >= v. */
static void wait_states(const nc_shared *h, uint64_t v)
{
    const nc_node *n = &h->comm->node;
    for (int r = 0; r < n->size; r++)
        if (r != n->rank) nc_wait_ge(&flags_of(h, r)->state, v, &n->wait);
}

/* A rank that completes result k tells the node, with what its readers check (the verdict on
 * the arguments, or for Bcast the writer's sizes) and the bridge's error code. */
static void post_ready(nc_shared *h, uint64_t k, uint64_t check, uint64_t check2, int err)
{
    if (!has_peers(h)) return;
    nc_flag *ready = &flags_of(h, h->comm->node.rank)->ready;
    atomic_store_explicit(&ready->aux[0], check, memory_order_relaxed);
    atomic_store_explicit(&ready->aux[1], (uint64_t)(int64_t)err, memory_order_relaxed);
    atomic_store_explicit(&ready->aux[2], check2, memory_order_relaxed);
    nc_flag_post(ready, k);
}

typedef struct ready_news {
    uint64_t check, check2;
    int err;
} ready_news;

/* Waits for result k from `node_rank`.  Its aux words stay put until every rank of the node
 * has released result k, which I have not. */
static ready_news wait_ready(const nc_shared *h, int node_rank, uint64_t k)
{
    const nc_flag *ready = &flags_of(h, node_rank)->ready;
    nc_wait_ge(ready, k, &h->comm->node.wait);
    return (ready_news){atomic_load_explicit(&ready->aux[0], memory_order_relaxed),
                        atomic_load_explicit(&ready->aux[2], memory_order_relaxed),
                        (int)(int64_t)atomic_load_explicit(&ready->aux[1], memory_order_relaxed)};
}

/* Across nodes the leader completes the result: it tells its node the verdict on the node's
 * arguments and the bridge's error, which the others read from its ready flag. */
static int share_leader_outcome(nc_shared *h, uint64_t k, int *mismatch, int err)
{
    if (nc_comm_is_leader(h->comm)) {
        post_ready(h, k, (uint64_t)*mismatch, 0, err);
        return err;
    }
    ready_news news = wait_ready(h, 0, k);
    *mismatch = news.check != 0;
    return news.err;
}

/* ---- handle life ---------------------------------------------------------------------- */

int nc_shared_open(nc_shared *h, nc_comm *c, char *data, size_t capacity)
{
    nc_node *n = &c->node;
    int slot = 0;
    while (slot < NC_SHARED_SLOTS && n->shared_used[slot]) slot++;
    if (slot == NC_SHARED_SLOTS) return -1;
    n->shared_used[slot] = 1;
    *h = (nc_shared){.comm = c, .slot = slot, .data = data, .capacity = capacity, .seq = n->shared_seq[slot]};
    h->prepared_for = h->seq;
    if (has_peers(h)) h->state_posted = nc_flag_read(&flags_of(h, n->rank)->state);
    return 0;
}

void nc_shared_close(nc_shared *h)
{
    nc_node *n = &h->comm->node;
    post_state(h, 2 * h->seq + 1);
    /* The next handle in this slot continues the numbering: flags never go back. */
    n->shared_seq[h->slot] = h->seq;
    n->shared_used[h->slot] = 0;
    free(h->fold_tmp);
    h->fold_tmp = NULL;
}

/* Releases my result k-1 and waits until every rank of the node has released it. */
static void make_writable(nc_shared *h, uint64_t k)
{
    if (h->prepared_for == k) return;
    h->holding = 0;
    post_state(h, 2 * k - 1);
    wait_states(h, 2 * k - 1);
    h->prepared_for = k;
}

char *nc_shared_prepare(nc_shared *h)
{
    make_writable(h, h->seq + 1);
    return h->data;
}

int nc_shared_release(nc_shared *h)
{
    if (!h->holding) return -1;
    h->holding = 0;
    post_state(h, 2 * h->seq + 1);
    return 0;
}

/* A call releases the previous result implicitly. */
static uint64_t begin_call(nc_shared *h)
{
    h->holding = 0;
    return ++h->seq;
}

static void end_call(nc_shared *h) { h->holding = 1; }

/* ---- Bcast ---------------------------------------------------------------------------- */

/* The writer is the root on its node and the leader elsewhere (it receives from the bridge);
 * everybody else waits for the writer's ready flag alone. */
int nc_shared_bcast(nc_shared *h, const void *src, size_t bytes, int root, int *mismatch)
{
    nc_comm *c = h->comm;
    uint64_t k = begin_call(h);
    int on_root_node = c->node_of[c->rank] == c->node_of[root];
    int writer = on_root_node ? c->node_rank_of[root] : 0;
    int bridge = nc_comm_multinode(c) && nc_comm_is_leader(c);
    int err = 0;
    *mismatch = 0;
    arrive(h, k, 0);
    if (c->node.rank == writer) {
        make_writable(h, k);
        if (!on_root_node) {
            err = c->bridge.bcast(c->bridge.ctx, h->data, bytes, c->node_of[root], NULL);
            nc_stats_count(NC_COLL_BCAST, NC_ALG_BRIDGE, bytes);
        } else if (src) {
            memcpy(h->data, src, bytes);
        }
        /* The writer's sizes travel with the result: each reader compares its own. */
        post_ready(h, k, bytes, (uint64_t)root, err);
    } else {
        ready_news news = wait_ready(h, writer, k);
        err = news.err;
        *mismatch = news.check != bytes || news.check2 != (uint64_t)root;
    }
    if (bridge && on_root_node) {
        err = c->bridge.bcast(c->bridge.ctx, h->data, bytes, c->node_of[root], NULL);
        nc_stats_count(NC_COLL_BCAST, NC_ALG_BRIDGE, bytes);
    }
    end_call(h);
    return err;
}

/* ---- Allgather(v) --------------------------------------------------------------------- */

/* Waits for every rank of the node to arrive at call k; 1 if any passed other sizes. */
static int node_arguments_differ(const nc_shared *h, uint64_t k, uint64_t signature)
{
    const nc_node *n = &h->comm->node;
    int differ = 0;
    wait_states(h, 2 * k);
    for (int r = 0; r < n->size; r++)
        if (r != n->rank) differ |= signature_of(&flags_of(h, r)->state, k) != signature;
    return differ;
}

/* Every rank writes its block into the region (or already has), then the node's blocks are
 * complete once all arrived; across nodes the leaders exchange node blocks meanwhile. */
int nc_shared_allgather(nc_shared *h, nc_coll_id coll, const void *src, const nc_block *blocks, uint64_t signature,
                        int *mismatch)
{
    nc_comm *c = h->comm;
    uint64_t k = begin_call(h);
    int err = 0;
    if (src) {
        make_writable(h, k);
        memcpy(h->data + blocks[c->rank].offset, src, blocks[c->rank].bytes);
    }
    arrive(h, k, signature);
    if (!nc_comm_multinode(c) || nc_comm_is_leader(c)) *mismatch = node_arguments_differ(h, k, signature);
    if (nc_comm_multinode(c)) {
        if (nc_comm_is_leader(c)) {
            err = c->bridge.allgather_blocks(c->bridge.ctx, h->data, blocks, c->node_of, c->size, NULL);
            nc_stats_count(coll, NC_ALG_BRIDGE, 0);
        }
        err = share_leader_outcome(h, k, mismatch, err);
    }
    end_call(h);
    return err;
}

/* ---- Allreduce ------------------------------------------------------------------------ */

/* Chain flag values: call k in the high bits, the chunks folded so far in the low ones;
 * CHAIN_DONE means "all of mine", so a peer that was told fewer chunks cannot hang us. */
#define CHAIN_BITS 24
#define CHAIN_DONE ((UINT64_C(1) << CHAIN_BITS) - 1)
static uint64_t chain_value(uint64_t k, uint64_t chunks) { return (k << CHAIN_BITS) | chunks; }

/* acc = acc op mine, where acc holds the lower node ranks (MPI's order). */
static void fold(nc_shared *h, const nc_reduction *r, int first, char *acc, const char *mine, size_t count,
                 size_t bytes)
{
    if (first) {
        memcpy(acc, mine, bytes);
    } else if (r->commutative) {
        r->fn(mine, acc, count, r->ctx);
    } else {
        if (h->fold_tmp_bytes < bytes) {
            free(h->fold_tmp);
            h->fold_tmp = malloc(bytes);
            if (!h->fold_tmp) nc_fatal("out of memory for a %zu-byte reduction chunk", bytes);
            h->fold_tmp_bytes = bytes;
        }
        memcpy(h->fold_tmp, acc, bytes);
        memcpy(acc, mine, bytes);
        r->fn(h->fold_tmp, acc, count, r->ctx);
    }
}

static size_t chunk_elements(const nc_comm *c, size_t count, size_t elem)
{
    size_t chunk = (size_t)c->cfg.shared_chunk / elem;
    if (chunk == 0) chunk = 1;
    if ((count + chunk - 1) / chunk >= CHAIN_DONE) chunk = count / (CHAIN_DONE - 1) + 1;
    return chunk;
}

/* The node's ranks fold their contributions into the region one after another, in a
 * pipeline of chunks: rank i folds chunk j once rank i-1 has.  Memory: the result, nothing
 * per rank.  The verdict on the arguments travels down the chain with the data. */
static int fold_node(nc_shared *h, uint64_t k, const char *src, size_t count, size_t tail_gap,
                     const nc_reduction *r, uint64_t signature)
{
    nc_node *n = &h->comm->node;
    size_t elem = r->elem_size, chunk = chunk_elements(h->comm, count, elem);
    nc_flag *mine = has_peers(h) ? &flags_of(h, n->rank)->chain : NULL;
    const nc_flag *prev = n->rank ? &flags_of(h, n->rank - 1)->chain : NULL;
    uint64_t mismatch = 0;
    if (prev) {
        nc_wait_ge(prev, chain_value(k, 1), &n->wait);
        mismatch = atomic_load_explicit(&prev->aux[0], memory_order_relaxed) ||
                   signature_of(&flags_of(h, n->rank - 1)->state, k) != signature;
    } else {
        make_writable(h, k); /* the first rank writes first: everyone must have released */
    }
    if (mine) atomic_store_explicit(&mine->aux[0], mismatch, memory_order_relaxed);
    uint64_t j = 0;
    for (size_t at = 0; at < count; at += chunk, j++) {
        size_t len = count - at < chunk ? count - at : chunk;
        size_t bytes = len * elem - (at + len == count ? tail_gap : 0);
        if (prev) nc_wait_ge(prev, chain_value(k, j + 1), &n->wait);
        fold(h, r, !prev, h->data + at * elem, src + at * elem, len, bytes);
        if (mine) nc_flag_post(mine, chain_value(k, j + 1));
    }
    if (mine) nc_flag_post(mine, chain_value(k, CHAIN_DONE));
    return (int)mismatch;
}

int nc_shared_allreduce(nc_shared *h, const void *src, size_t count, size_t tail_gap, const nc_reduction *r,
                        int *mismatch)
{
    nc_comm *c = h->comm;
    nc_node *n = &c->node;
    uint64_t k = begin_call(h);
    uint64_t signature = count * r->elem_size;
    int last = n->size - 1, err = 0;
    arrive(h, k, signature);
    *mismatch = fold_node(h, k, (const char *)src, count, tail_gap, r, signature);
    if (!nc_comm_multinode(c) || nc_comm_is_leader(c)) {
        if (n->rank != last) {
            const nc_flag *done = &flags_of(h, last)->chain;
            nc_wait_ge(done, chain_value(k, CHAIN_DONE), &n->wait);
            *mismatch = atomic_load_explicit(&done->aux[0], memory_order_relaxed) != 0;
        }
    }
    if (nc_comm_multinode(c)) {
        if (nc_comm_is_leader(c)) {
            err = c->bridge.allreduce(c->bridge.ctx, h->data, count, r, NULL);
            nc_stats_count(NC_COLL_ALLREDUCE, NC_ALG_BRIDGE, count * r->elem_size);
        }
        err = share_leader_outcome(h, k, mismatch, err);
    }
    end_call(h);
    return err;
}
