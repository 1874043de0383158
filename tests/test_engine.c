/* The engine without MPI: the fragment allocator's slot rules (ledger.h) on one thread, then
 * threads that play the ranks of one node over a segment in ordinary
 * memory, and run the registered Barrier and Bcast algorithms through the engine as blocking
 * calls and as nonblocking operations (several in flight, completed in random order), on a
 * ring small enough that every slot is reused many times.  Checks the registry's choices,
 * every byte delivered, and that the operations use the node's shared numbers alike on every
 * rank.  With `grouped`, the node's ranks are grouped by a modelled topology (two packages
 * of two NUMA nodes, ranks scattered over them), so the Barrier and Bcast trees follow the
 * groups (core/hier.h).  Usage: test_engine [ranks] [rounds] [seed] [grouped]. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/algorithms.h"
#include "coll/ledger.h"
#include "coll/registry.h"
#include "core/config.h"
#include "core/model.h"
#include "core/segment.h"

static int failures;
#define CHECK(cond, ...)                                   \
    do {                                                   \
        if (!(cond)) {                                     \
            fprintf(stderr, "FAIL: " __VA_ARGS__);         \
            fputc('\n', stderr);                           \
            __atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED); \
        }                                                  \
    } while (0)

static uint64_t next_random(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

typedef struct node_world {
    int size, rounds;
    uint64_t seed;
    nc_layout layout;
    void *base;
    nc_hier *hier;
} node_world;

static int zeros[64], identity[64];

/* A communicator of one node whose rank `rank` is this thread. */
static void make_comm(nc_comm *c, const node_world *w, int rank)
{
    memset(c, 0, sizeof *c);
    c->size = w->size;
    c->rank = rank;
    c->cfg = *nc_config_get();
    c->cfg.bcast_cma_min = INT64_MAX; /* (threads of one process: the rings) */
    c->node_of = zeros;
    c->node_rank_of = identity;
    c->bridge.size = 1;
    nc_node *n = &c->node;
    n->size = w->size;
    n->rank = rank;
    n->base = w->base;
    n->layout = w->layout;
    n->hier = w->hier;
    n->wait = nc_wait_policy_make(1000, 10, 50, 1);
    n->slot_use = calloc((size_t)w->layout.nseg, sizeof *n->slot_use);
    n->cons_seen = calloc((size_t)w->size, sizeof *n->cons_seen);
    n->peers = calloc((size_t)w->size, sizeof *n->peers);
}

/* Frees what make_comm allocated. */
static void free_comm(nc_comm *c)
{
    free(c->node.slot_use);
    free(c->node.cons_seen);
    free(c->node.peers);
}

/* One rank's communicator over a world of `size` ranks whose segment this thread alone uses
 * (two 4 KiB ring segments per rank); free_solo frees both. */
static void make_solo(nc_comm *c, node_world *w, int size, int rank)
{
    *w = (node_world){.size = size};
    w->layout = nc_layout_make(size, 4096, 2, 0);
    w->base = calloc(1, w->layout.total);
    make_comm(c, w, rank);
}
static void free_solo(nc_comm *c, node_world *w)
{
    free_comm(c);
    free(w->base);
}

static void fill(unsigned char *p, size_t bytes, int salt)
{
    for (size_t i = 0; i < bytes; i++) p[i] = (unsigned char)(i * 13 + (size_t)salt);
}

enum { IN_FLIGHT = 5, MAX_BYTES = 40000 };

typedef struct pending_bcast {
    nc_op op;
    nc_args args;
    nc_data data;
    unsigned char *buf;
    size_t bytes;
    int salt, root, used;
} pending_bcast;

static void check_delivered(const pending_bcast *p, int rank)
{
    unsigned char *expect = malloc(p->bytes + 1);
    fill(expect, p->bytes, p->salt);
    CHECK(!memcmp(p->buf, expect, p->bytes), "rank %d: Bcast of %zu bytes from %d (salt %d) differs", rank, p->bytes,
          p->root, p->salt);
    free(expect);
}

/* Draws a Bcast (size, root) and sets up its buffers and arguments. */
static void prepare_bcast(nc_comm *c, pending_bcast *p, uint64_t *rnd, int salt)
{
    static const size_t sizes[] = {1, 8, 100, 112, 113, 4096, 9000, MAX_BYTES};
    p->bytes = sizes[next_random(rnd) % (sizeof sizes / sizeof sizes[0])];
    p->root = (int)(next_random(rnd) % (uint64_t)c->size);
    p->salt = salt;
    p->buf = malloc(p->bytes);
    if (c->rank == p->root) fill(p->buf, p->bytes, salt);
    else memset(p->buf, 0xee, p->bytes);
    p->data = nc_data_bytes(p->buf);
    p->args = (nc_args){.coll = NC_COLL_BCAST, .root = p->root, .bcast = {&p->data, p->bytes}};
}

static void start_bcast(nc_comm *c, pending_bcast *p, uint64_t *rnd, int salt)
{
    prepare_bcast(c, p, rnd, salt);
    nc_op_prepare(&p->op, c, &p->args, p->bytes, 0);
    nc_op_start(&p->op);
    p->used = 1;
}

static void finish_bcast(pending_bcast *p, int rank)
{
    nc_op_wait(&p->op);
    CHECK(p->op.err == 0, "rank %d: Bcast error %d", rank, p->op.err);
    check_delivered(p, rank);
    free(p->buf);
    p->used = 0;
}

typedef struct rank_arg {
    node_world *w;
    int rank;
} rank_arg;

/* Every rank draws the same sequence of calls (same seed): blocking Bcasts and Barriers,
 * and nonblocking Bcasts kept in flight and completed in a drawn order. */
static void *run_rank(void *arg)
{
    rank_arg *a = arg;
    nc_comm c;
    make_comm(&c, a->w, a->rank);
    uint64_t rnd = a->w->seed;
    pending_bcast pending[IN_FLIGHT] = {0};
    for (int round = 0; round < a->w->rounds; round++) {
        int slot = (int)(next_random(&rnd) % IN_FLIGHT);
        switch (next_random(&rnd) % 4) {
        case 0: /* a blocking call among the pending ones */
            if (next_random(&rnd) % 2) {
                CHECK(nc_barrier(&c) == 0, "rank %d: barrier failed", a->rank);
            } else {
                pending_bcast now;
                prepare_bcast(&c, &now, &rnd, round);
                CHECK(nc_bcast(&c, &now.data, now.bytes, now.root) == 0, "rank %d: blocking Bcast failed", a->rank);
                check_delivered(&now, a->rank);
                free(now.buf);
            }
            break;
        default: /* start one (after completing whatever held its place) */
            if (pending[slot].used) finish_bcast(&pending[slot], a->rank);
            start_bcast(&c, &pending[slot], &rnd, round);
            break;
        }
    }
    for (int i = IN_FLIGHT - 1; i >= 0; i--)
        if (pending[i].used) finish_bcast(&pending[i], a->rank);
    nc_comm_drain(&c);
    /* Shared numbers taken alike by every rank: compare with rank 0's through the segment. */
    nc_rank_ctl *me = nc_node_ctl(&c.node, a->rank);
    atomic_store_explicit(&me->ready.aux[0], c.node.frag, memory_order_relaxed);
    atomic_store_explicit(&me->ready.aux[1], c.node.sync_seq, memory_order_relaxed);
    nc_flag_post(&me->ready, (uint64_t)1 << 40);
    for (int r = 0; r < c.size; r++) {
        const nc_flag *f = &nc_node_ctl(&c.node, r)->ready;
        nc_wait_ge(f, (uint64_t)1 << 40, &c.node.wait);
        CHECK(atomic_load_explicit(&f->aux[0], memory_order_relaxed) == c.node.frag &&
                  atomic_load_explicit(&f->aux[1], memory_order_relaxed) == c.node.sync_seq,
              "rank %d: fragments/barriers taken differ from rank %d's", a->rank, r);
    }
    free_comm(&c);
    return NULL;
}

static void check_registry(void)
{
    node_world w;
    nc_comm c;
    make_solo(&c, &w, 4, 0);
    nc_args barrier = {.coll = NC_COLL_BARRIER, .root = -1}, bcast = {.coll = NC_COLL_BCAST, .root = 0};
    CHECK(nc_registry_select(&c, &barrier, 0) == &nc_barrier_dissemination, "one node: Barrier by dissemination");
    CHECK(nc_registry_select(&c, &bcast, 8) == &nc_bcast_node, "a Bcast call on one node runs the node step");
    CHECK(nc_registry_select_step(&c, &bcast, 1 << 20) == &nc_bcast_shm, "no single copy: the rings");
    c.node.cma = 1;
    c.cfg.bcast_cma_min = 16384;
    CHECK(nc_registry_select_step(&c, &bcast, 16383) == &nc_bcast_shm, "below the CMA threshold: the rings");
    CHECK(nc_registry_select_step(&c, &bcast, 16384) == &nc_bcast_cma, "from the CMA threshold: single copy");
    c.cfg.bcast_alg = NC_BCAST_SHM;
    CHECK(nc_registry_select_step(&c, &bcast, 1 << 20) == &nc_bcast_shm, "forced shm");
    c.cfg.bcast_alg = NC_BCAST_CMA;
    c.node.cma = 0;
    CHECK(nc_registry_select_step(&c, &bcast, 8) == &nc_bcast_shm, "forced cma without single copy: the rings");
    c.bridge.size = 2;
    memset(c.chosen, 0, sizeof c.chosen); /* (another node layout: forget the kept choices) */
    CHECK(nc_registry_select(&c, &barrier, 0) == &nc_barrier_tree, "several nodes: the tree Barrier");
    CHECK(nc_registry_select(&c, &bcast, 8) == &nc_bcast_hierarchy, "several nodes: the Bcast hierarchy");
    c.cfg.barrier_alg = NC_BARRIER_FLAT;
    memset(c.chosen, 0, sizeof c.chosen);
    CHECK(nc_registry_select(&c, &barrier, 0) == &nc_barrier_flat, "forced flat");
    /* Topology groups: the tree Barrier follows them (dissemination ignores them), and so does
     * the reduction tree, which then comes before flat. */
    nc_topo_loc locs[4] = {{{0, 0, 0, 0}}, {{0, 0, 0, 1}}, {{1, 1, 1, 2}}, {{1, 1, 1, 3}}};
    c.cfg.barrier_alg = NC_BARRIER_AUTO;
    c.bridge.size = 1;
    c.node.hier = nc_hier_build(locs, 4, NC_TOPO_AUTO_LEVELS);
    memset(c.chosen, 0, sizeof c.chosen);
    CHECK(c.node.hier && c.node.hier->depth == 1, "two packages of two ranks: one level");
    CHECK(nc_registry_select(&c, &barrier, 0) == &nc_barrier_tree, "groups: the tree Barrier");
    nc_reduction sum = {.elem_size = 4, .commutative = 1};
    nc_args allreduce = {.coll = NC_COLL_ALLREDUCE, .root = -1, .reduce = {.red = &sum}};
    CHECK(nc_registry_select_step(&c, &allreduce, 8) == &nc_reduce_tree, "groups: a small Allreduce by the tree");
    nc_hier_free(c.node.hier);
    c.node.hier = NULL;
    memset(c.chosen, 0, sizeof c.chosen);
    CHECK(nc_registry_select_step(&c, &allreduce, 8) == &nc_reduce_flat, "no groups: a small Allreduce flat");
    free_solo(&c, &w);
}

/* Rank `r` of the node has consumed every fragment below frag_end. */
static void consume(nc_node *n, int r, uint64_t frag_end) { nc_flag_post(&nc_node_ctl(n, r)->cons, frag_end); }

/* The fragment allocator alone: numbers are taken in order, and a slot is free again only
 * when the readers recorded for its last fragment (a Bcast tree's children, or every rank)
 * have consumed it, whoever else has; a blocked check names the flag and value it needs. */
static void check_ledger(void)
{
    node_world w;
    nc_comm c;
    make_solo(&c, &w, 5, 1);
    nc_node *n = &c.node;
    nc_op op = {.c = &c};
    nc_frag_place ring = {0, 0}, inline_place = {1, NC_INLINE_HEADER};
    CHECK(nc_take_frags(n, 3) == 0 && nc_take_frags(n, 2) == 3 && n->frag == 5, "fragments numbered in order");
    CHECK(nc_take_sync(n) == 1 && nc_take_sync(n) == 2, "barrier numbers in order");
    CHECK(nc_take_round(n) == 1, "data-movement rounds from 1");
    CHECK(nc_slot_free(&op, n, ring, 0), "a slot never filled is free");
    /* Rank 1 in the radix-2 tree of root 1 over 5 ranks (vranks 0..4): children vranks 1, 2 = ranks 2, 3. */
    nc_tree_pos tree = nc_tree_place(NULL, 5, 1, 1, 2, NC_TREE_HEAP);
    CHECK(nc_slot_take(n, ring, 0, &tree) == nc_frag_data(n, ring, 1, 0), "a taken slot is my ring segment");
    uint64_t reuse = (uint64_t)w.layout.nseg; /* the next fragment in the same segment */
    consume(n, 4, 1);
    consume(n, 0, 1);
    CHECK(!nc_slot_free(&op, n, ring, reuse), "not free before the tree's children consumed it");
    CHECK(op.wait.flag == &nc_node_ctl(n, 2)->cons && op.wait.value == 1, "waits for the first child's cons at 1");
    consume(n, 2, 1);
    CHECK(!nc_slot_free(&op, n, ring, reuse) && op.wait.flag == &nc_node_ctl(n, 3)->cons, "then for the second child");
    consume(n, 3, 1);
    CHECK(nc_slot_free(&op, n, ring, reuse), "free once both children consumed it, whatever the others did");
    CHECK(n->cons_seen[3] == 1, "the last value seen is remembered");
    /* Any reader (reductions): every other rank must have consumed it. */
    nc_slot_take(n, inline_place, 7, NULL);
    for (int r = 0; r < 5; r++)
        if (r != 1) consume(n, r, r == 4 ? 7 : 8);
    CHECK(!nc_slot_free(&op, n, inline_place, 7 + NC_INLINE_SLOTS) && op.wait.flag == &nc_node_ctl(n, 4)->cons &&
              op.wait.value == 8,
          "an any-reader slot waits for the one rank behind");
    consume(n, 4, 8);
    CHECK(nc_slot_free(&op, n, inline_place, 7 + NC_INLINE_SLOTS), "an any-reader slot is free once all consumed it");
    CHECK(nc_slot_free(&op, n, inline_place, 8), "another inline slot is untouched");
    free_solo(&c, &w);
}

int main(int argc, char **argv)
{
    node_world w = {.size = argc > 1 ? atoi(argv[1]) : 4,
                    .rounds = argc > 2 ? atoi(argv[2]) : 400,
                    .seed = argc > 3 ? strtoull(argv[3], NULL, 10) : 20261124};
    for (int i = 0; i < 64; i++) identity[i] = i;
    if (w.size < 1 || w.size > 64) return 2;
    check_registry();
    check_ledger();
    /* Two ring segments of 4 KiB: a 40000-byte Bcast wraps the ring five times. */
    w.layout = nc_layout_make(w.size, 4096, 2, 0);
    if (argc > 4 && !strcmp(argv[4], "grouped")) {
        nc_model_machine m = {{2, 2, 1, (w.size + 3) / 4 + 1}};
        nc_topo_loc locs[64];
        nc_model_place(&m, NC_PLACE_SCATTER, w.size, locs);
        w.hier = nc_hier_build(locs, w.size, NC_TOPO_AUTO_LEVELS);
        if (!w.hier) return 2;
    }
    w.base = aligned_alloc(4096, (w.layout.total + 4095) & ~(size_t)4095);
    memset(w.base, 0, w.layout.total);
    nc_engine_share_queues(); /* (threads as the ranks: every queue is shared) */
    pthread_t threads[64];
    rank_arg args[64];
    for (int r = 0; r < w.size; r++) {
        args[r] = (rank_arg){&w, r};
        pthread_create(&threads[r], NULL, run_rank, &args[r]);
    }
    for (int r = 0; r < w.size; r++) pthread_join(threads[r], NULL);
    free(w.base);
    printf("test_engine: %s (%d ranks as threads%s, %d rounds)\n", failures ? "FAILED" : "passed", w.size,
           w.hier ? " in topology groups" : "", w.rounds);
    nc_hier_free(w.hier);
    return failures ? 1 : 0;
}
