/*
 * Timing of one point (collective, datatype, root pattern, size).
 *
 * Both variants run in the same process, alternating: each round times a block of
 * back-to-back calls of each (k[v] calls of variant v), nodecoll first in even rounds and host first in odd ones, so
 * that whatever precedes a block (the other variant, a --check) weighs on both alike.  The
 * benchmark's own barrier (sync.c) precedes every block: neither library's code runs in the
 * separation, and neither library's waiting leaks into the other's block.  Afterwards
 * rank 0 takes, per round, the slowest rank (a collective is done when its last rank is)
 * and the median of that over rounds.
 *
 * A call is blocking, nonblocking (post, then wait) or persistent (start, then wait; the
 * requests are made before the first call and freed after the last).  --overlap adds a
 * second pass of rounds in which each call computes between post and wait.
 */
#include "bench.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define ROUND_TARGET_S 20e-6 /* k[v] makes a block of variant v at least this long */
/* ...and this long when ranks outnumber the cores: a rank that waits for one without a core
 * can lose a scheduler time slice (milliseconds) at the start of a block, which must not
 * weigh more on the faster variant than on the slower one. */
#define OVERSUB_ROUND_TARGET_S 4e-3
#define OVERSUB_BUDGET_SHARE 100
#define K_MAX 100000
#define MIN_ROUNDS 5 /* a median of 3 falls to two preempted rounds */
#define CALIBRATION_CALLS 2
#define CALIBRATION_BLOCKS 3
#define LONG_CALL_S 2e-3 /* calibrated with single calls */
#define POISON 0xA5
/* Off-cache sets are visited in steps of this prime, not in order: the hardware prefetcher
 * would otherwise pull the next set into cache while the current one is in use. */
#define SET_HOP 40503u

struct arena {
    char *base;
    size_t bytes;
    char *shadow; /* --check: the nodecoll result, compared with the host one */
    size_t pool;  /* --off-cache: bytes one rank rotates through */
    int *counts, *displs, *bdispls;
    MPI_Datatype *types;
    int nranks, rank;
    struct bench_sync *sync;
};

/* Everything a point's calls need; the timed loop only touches the call and a counter. */
struct run_state {
    struct arena *a;
    const struct point *pt;
    struct call call;
    size_t send_bytes, recv_bytes, rbuf_off, stride, nsets, cursor;
    int rotate, seq, sparse;
    int root_stride; /* calls of a nodecoll block: root sequences restart from round * this */
    /* persistent mode: one request per root with --root rotate, else one, per variant */
    MPI_Request *bound[VAR_COUNT];
    int nbound;
    /* --overlap: how long a call of each variant computes; the seconds a block computed,
     * [v * rounds + round] */
    double compute_s[VAR_COUNT];
    double *computed;
    int rounds;
    struct neighbors nb; /* the neighbourhood patterns' communicator and vectors */
};

static size_t set_bytes(const struct coll *c, int nranks, size_t n, size_t *rbuf_off)
{
    *rbuf_off = round_up(coll_blocks(c->send, nranks) * n, 64);
    size_t bytes = *rbuf_off + round_up(coll_blocks(c->recv, nranks) * n, 64);
    return bytes ? bytes : 64; /* barrier: no data, but a set still needs a place */
}

static size_t largest_set(const struct options *o, int nranks)
{
    size_t nmax = 8, best = 64, off;
    for (int i = 0; i < o->nsizes; i++) nmax = o->sizes[i] > nmax ? o->sizes[i] : nmax;
    for (int i = 0; i < coll_count(); i++) {
        size_t b = set_bytes(coll_at(i), nranks, nmax, &off);
        if ((o->colls >> i & 1) && b > best) best = b;
    }
    return best;
}

struct arena *arena_create(const struct options *o, int nranks)
{
    struct arena *a = calloc(1, sizeof *a);
    size_t set = largest_set(o, nranks);
    a->pool = o->off_cache ? 2 * llc_bytes() : 0;
    a->bytes = o->off_cache ? a->pool + 2 * set : set;
    a->base = xalloc_touched(a->bytes);
    a->shadow = o->check ? xalloc_touched(set) : NULL;
    a->nranks = nranks;
    PMPI_Comm_rank(MPI_COMM_WORLD, &a->rank);
    a->counts = calloc((size_t)nranks, sizeof(int));
    a->displs = calloc((size_t)nranks, sizeof(int));
    a->bdispls = calloc((size_t)nranks, sizeof(int));
    a->types = calloc((size_t)nranks, sizeof(MPI_Datatype));
    a->sync = sync_open();
    return a;
}

struct bench_sync *arena_sync(struct arena *a)
{
    return a->sync;
}

void arena_destroy(struct arena *a)
{
    if (!a) return;
    free(a->base);
    free(a->shadow);
    free(a->counts);
    free(a->displs);
    free(a->bdispls);
    free(a->types);
    sync_close(a->sync);
    free(a);
}

static int root_of(int pattern, int nranks, int seq)
{
    return pattern == ROOT_LAST ? nranks - 1 : pattern == ROOT_ROTATE ? seq % nranks : 0;
}

static void use_set(struct run_state *st, size_t set)
{
    st->call.sbuf = st->a->base + set * st->stride;
    st->call.rbuf = (char *)st->call.sbuf + st->rbuf_off;
}

static inline void next_call(struct run_state *st)
{
    if (st->rotate) st->call.root = st->seq++ % st->a->nranks;
    if (st->nsets > 1) use_set(st, st->cursor++ * SET_HOP % st->nsets);
}

static size_t pool_sets(const struct arena *a, size_t stride)
{
    if (!a->pool) return 1;
    size_t n = a->pool / stride;
    if (n < 2) n = 2;
    return n % SET_HOP ? n : n - 1; /* the hop must be coprime to the set count */
}

static int pattern_count(const struct point *pt, int nranks, int rank, int peer)
{
    switch (pt->coll->pattern) {
    case PAT_SKEWED: return peer == 0 ? pt->count : 1;
    case PAT_RING: {
        int right = (rank + 1) % nranks, left = (rank + nranks - 1) % nranks;
        return peer != rank && (peer == right || peer == left) ? pt->count : 0;
    }
    default: return pt->count;
    }
}

/* Blocks back to back; returns this rank's own send count (Allgatherv's differs by rank). */
static int setup_vectors(struct arena *a, const struct point *pt)
{
    size_t at = 0;
    for (int i = 0; i < a->nranks; i++) {
        a->counts[i] = pattern_count(pt, a->nranks, a->rank, i);
        a->displs[i] = (int)at;
        a->bdispls[i] = (int)(at * pt->dt->size);
        a->types[i] = pt->dt->type;
        at += (size_t)a->counts[i];
    }
    return pt->coll->pattern == PAT_SKEWED ? a->counts[a->rank] : pt->count;
}

static void fill_send(struct run_state *st, char *sbuf, unsigned seed)
{
    size_t count = st->send_bytes / st->pt->dt->size;
    st->pt->dt->fill(sbuf, count, seed + 13u * (unsigned)st->a->rank, st->sparse);
}

static void state_init(struct run_state *st, struct arena *a, const struct point *pt,
                       const struct options *o)
{
    const struct coll *c = pt->coll;
    memset(st, 0, sizeof *st);
    st->a = a;
    st->pt = pt;
    int count = setup_vectors(a, pt);
    st->call = (struct call){.count = count, .type = pt->dt->type, .op = o->op->op,
                             .root = root_of(pt->root_pattern, a->nranks, 0),
                             .comm = MPI_COMM_WORLD, .counts = a->counts, .displs = a->displs,
                             .bdispls = a->bdispls, .types = a->types};
    if (pattern_is_neighborhood(c->pattern)) {
        struct neighbors *nb = &st->nb;
        neighbors_create(nb, c->pattern, count, pt->dt->type);
        st->call.comm = nb->comm;
        st->call.counts = nb->counts, st->call.displs = nb->displs, st->call.adispls = nb->adispls;
        st->call.rcounts = nb->rcounts, st->call.rdispls = nb->rdispls, st->call.radispls = nb->radispls;
        st->call.types = nb->types;
    }
    st->stride = set_bytes(c, a->nranks, pt->bytes, &st->rbuf_off);
    st->send_bytes = coll_blocks(c->send, a->nranks) * pt->bytes;
    st->recv_bytes = coll_blocks(c->recv, a->nranks) * pt->bytes;
    st->nsets = pool_sets(a, st->stride);
    st->rotate = pt->root_pattern == ROOT_ROTATE;
    st->sparse = o->op->kind == OP_PROD;
    st->root_stride = 1;
    use_set(st, 0);
    for (size_t s = 0; s < st->nsets; s++) fill_send(st, a->base + s * st->stride, (unsigned)s);
}

static void restore_root(struct run_state *st)
{
    st->call.root = root_of(st->pt->root_pattern, st->a->nranks, 0);
}

static void call_failed(const struct run_state *st, enum variant v, const char *step)
{
    fprintf(stderr, "nodecoll-bench: %s %s failed (%s %s)\n", variant_name(v), st->pt->coll->name,
            mode_name(st->pt->mode), step);
    MPI_Abort(MPI_COMM_WORLD, 4);
}

/* Persistent mode: each variant's requests, made once per point outside the timed region,
 * in the same order on every rank (the *_init calls are collective).  They are bound to
 * buffer set 0, which is why --off-cache (several sets) is refused with this mode. */
static void bind_requests(struct run_state *st)
{
    if (st->pt->mode != MODE_PERSISTENT) return;
    st->nbound = st->rotate ? st->a->nranks : 1;
    for (int v = 0; v < VAR_COUNT; v++) {
        st->bound[v] = malloc(sizeof(MPI_Request) * (size_t)st->nbound);
        for (int i = 0; i < st->nbound; i++) {
            if (st->rotate) st->call.root = i;
            if (st->pt->coll->forms->init(coll_api((enum variant)v), &st->call, &st->bound[v][i]))
                call_failed(st, (enum variant)v, "init");
        }
    }
    restore_root(st);
}

static void free_requests(struct run_state *st)
{
    for (int v = 0; v < VAR_COUNT && st->nbound; v++) {
        for (int i = 0; i < st->nbound; i++)
            if (api_request_free(coll_api((enum variant)v), &st->bound[v][i]))
                call_failed(st, (enum variant)v, "request free");
        free(st->bound[v]);
    }
}

/* Starts a call of variant v: the nonblocking call into *fresh, or MPI_Start of the
 * persistent request for the current root.  Returns the request to wait for. */
static MPI_Request *post_call(struct run_state *st, enum variant v, MPI_Request *fresh)
{
    const struct mpi_api *api = coll_api(v);
    if (st->pt->mode == MODE_PERSISTENT) {
        MPI_Request *bound = &st->bound[v][st->rotate ? st->call.root : 0];
        if (api_start(api, bound)) call_failed(st, v, "start");
        return bound;
    }
    if (st->pt->coll->forms->post(api, &st->call, fresh)) call_failed(st, v, "post");
    return fresh;
}

static void wait_call(struct run_state *st, enum variant v, MPI_Request *req)
{
    if (api_wait(coll_api(v), req)) call_failed(st, v, "wait");
}

static void call_blocking(struct run_state *st, enum variant v)
{
    if (st->pt->coll->forms->run(coll_api(v), &st->call)) call_failed(st, v, "call");
}

static void call_once(struct run_state *st, enum variant v)
{
    if (st->pt->mode == MODE_BLOCKING) {
        call_blocking(st, v);
        return;
    }
    MPI_Request req;
    wait_call(st, v, post_call(st, v, &req));
}

/* Both variants of a round see the same input values and the same sequence of roots;
 * contents change from round to round. */
static void start_block(struct run_state *st, int round)
{
    if (st->nsets == 1) fill_send(st, st->call.sbuf, (unsigned)round * 7u);
    st->seq = (int)((long long)round * st->root_stride % st->a->nranks);
    sync_wait(st->a->sync);
}

/* Seconds for k calls on this rank. */
static double timed_block(struct run_state *st, enum variant v, int k, int round)
{
    start_block(st, round);
    double t0 = now_s();
    for (int j = 0; j < k; j++) {
        next_call(st);
        call_once(st, v);
    }
    return now_s() - t0;
}

/* --overlap: k calls of post, compute, wait.  Returns the block's seconds (t_total) and
 * logs the seconds it computed (t_compute) as the loop actually took: a preempted loop must
 * not count as communication the computation failed to hide. */
static double overlap_block(struct run_state *st, enum variant v, int k, int round)
{
    double computed = 0;
    start_block(st, round);
    double t0 = now_s();
    for (int j = 0; j < k; j++) {
        MPI_Request fresh;
        next_call(st);
        MPI_Request *req = post_call(st, v, &fresh);
        computed += compute_spin(st->compute_s[v]);
        wait_call(st, v, req);
    }
    st->computed[v * st->rounds + round] = computed;
    return now_s() - t0;
}

/* Per-call seconds of each variant's first call, maximum over ranks.  First calls pay for
 * setup (segments, page faults) and are kept out of the results. */
static void first_calls(struct run_state *st, double first[VAR_COUNT])
{
    for (int v = 0; v < VAR_COUNT; v++) first[v] = timed_block(st, (enum variant)v, 1, v);
    PMPI_Allreduce(MPI_IN_PLACE, first, VAR_COUNT, MPI_DOUBLE, MPI_MAX, st->call.comm);
}

/* Warm-up is capped at a fifth of the budget: at 16 MiB five calls can take seconds, and
 * the first call has warmed up already. */
static void warm_up(struct run_state *st, const struct options *o, const double first[VAR_COUNT])
{
    double fits = 0.2 * o->time_budget / dmax(first[0] + first[1], 1e-9);
    int calls = (int)dmin(o->warmup, fits);
    for (int i = 0; i < calls; i++)
        for (int v = 0; v < VAR_COUNT; v++) timed_block(st, (enum variant)v, 1, i);
}

/* k[v], the calls in a block of variant v, and the number of rounds, the same on every
 * rank (they are derived from maxima taken over ranks).  Each variant's cost is its best of
 * a few short blocks, so one preemption during calibration does not shrink the point to the
 * minimum number of rounds (calls long enough to be timed alone get one block of one call).
 * Each variant's block lasts at least the target, so that whatever delays the start of a
 * block weighs on both variants alike, relative to what they measure. */
static void plan(struct run_state *st, const struct options *o, double t_start,
                 const double first[VAR_COUNT], int k[VAR_COUNT], int *rounds)
{
    double t[4] = {first[0], first[1], 0, 0};
    int is_long = dmin(first[0], first[1]) > LONG_CALL_S;
    int blocks = is_long ? 1 : CALIBRATION_BLOCKS, calls = is_long ? 1 : CALIBRATION_CALLS;
    for (int i = 0; i < blocks; i++)
        for (int v = 0; v < VAR_COUNT; v++)
            t[v] = dmin(t[v], timed_block(st, (enum variant)v, calls, i) / calls);
    double t0 = now_s();
    fill_send(st, st->call.sbuf, 0); /* rounds refill the inputs before each block */
    sync_wait(st->a->sync);
    t[2] = now_s() - t0;
    t[3] = now_s() - t_start;
    PMPI_Allreduce(MPI_IN_PLACE, t, 4, MPI_DOUBLE, MPI_MAX, st->call.comm);
    /* Oversubscribed: at most a hundredth of the budget, since calls on a busy machine can
     * take many times what the (best-of) calibration saw, and the fewest rounds must fit. */
    double target = ROUND_TARGET_S;
    if (sync_oversubscribed(st->a->sync))
        target = dmax(ROUND_TARGET_S, dmin(OVERSUB_ROUND_TARGET_S, o->time_budget / OVERSUB_BUDGET_SHARE));
    double calls_s = 0;
    for (int v = 0; v < VAR_COUNT; v++) {
        k[v] = (int)dmin(ceil_pos(target / dmax(t[v], 1e-9)), K_MAX);
        calls_s += k[v] * t[v];
    }
    st->root_stride = k[VAR_NODECOLL];
    /* --overlap adds a pass of the same rounds whose calls also compute about as long */
    double pass_s = calls_s + 2 * t[2];
    double round_s = pass_s + (o->overlap ? pass_s + calls_s : 0) + (o->check ? 2 * (t[0] + t[1]) : 0);
    double left = o->time_budget - t[3], fit = left > 0 ? left / round_s : 0;
    *rounds = (int)dmax(MIN_ROUNDS, dmin(o->iters, fit));
}

/* Per round, the slowest, fastest and median rank of variant v, in microseconds per call
 * (arrays indexed by round). */
static void per_round(const double *all, int nranks, int rounds, int k, enum variant v,
                      double *mx, double *mn, double *md)
{
    double *rank_t = malloc(sizeof(double) * (size_t)nranks);
    for (int r = 0; r < rounds; r++) {
        for (int p = 0; p < nranks; p++)
            rank_t[p] = all[(size_t)p * VAR_COUNT * rounds + (size_t)v * rounds + r] * 1e6 / k;
        md[r] = median_of(rank_t, nranks); /* sorts rank_t */
        mn[r] = rank_t[0];
        mx[r] = rank_t[nranks - 1];
    }
    free(rank_t);
}

/* Median and quartiles of v (sorted in place). */
static void spread(double *v, int n, double *q1, double *med, double *q3)
{
    *med = median_of(v, n);
    *q1 = v[(n - 1) / 4];
    *q3 = v[3 * (n - 1) / 4];
}

/* The speedup is the median of per-round ratios: the two blocks of a round ran next to
 * each other, so when the machine changes speed between rounds (a virtual CPU moved, a
 * neighbour started) the ratio stays right even where the two medians would fall on
 * different sides of the change. */
static void summarize(const double *all, int nranks, int rounds, const int k[VAR_COUNT],
                      struct sample t[VAR_COUNT], double ratio[3])
{
    double *buf = malloc(sizeof(double) * (size_t)rounds * (3 * VAR_COUNT + 1));
    double *mx[VAR_COUNT], *per_ratio = buf + 3 * VAR_COUNT * rounds;
    for (int v = 0; v < VAR_COUNT; v++) {
        double *mn = buf + (3 * v + 1) * rounds, *md = mn + rounds;
        mx[v] = buf + 3 * v * rounds;
        per_round(all, nranks, rounds, k[v], (enum variant)v, mx[v], mn, md);
        t[v].min = median_of(mn, rounds);
        t[v].med = median_of(md, rounds);
    }
    for (int r = 0; r < rounds; r++) per_ratio[r] = mx[VAR_HOST][r] / mx[VAR_NODECOLL][r];
    spread(per_ratio, rounds, &ratio[0], &ratio[1], &ratio[2]);
    for (int v = 0; v < VAR_COUNT; v++) spread(mx[v], rounds, &t[v].q1, &t[v].max, &t[v].q3);
    free(buf);
}

/* On rank 0: each variant's sample, and host / nodecoll per round (q1, median, q3). */
static void gather_times(struct run_state *st, const double *mine, int rounds,
                         const int k[VAR_COUNT], struct sample t[VAR_COUNT], double ratio[3])
{
    int n = VAR_COUNT * rounds;
    double *all = st->a->rank == 0 ? malloc(sizeof(double) * (size_t)n * st->a->nranks) : NULL;
    PMPI_Gather(mine, n, MPI_DOUBLE, all, n, MPI_DOUBLE, 0, st->call.comm);
    if (all) summarize(all, st->a->nranks, rounds, k, t, ratio);
    free(all);
}

/* ---- --check ---------------------------------------------------------------------------- */

static int compares_here(const struct run_state *st)
{
    switch (st->pt->coll->out) {
    case OUT_ALL: return 1;
    case OUT_ROOT: return st->a->rank == st->call.root;
    case OUT_NOT_FIRST: return st->a->rank != 0;
    default: return 0;
    }
}

static char *output_of(const struct run_state *st, size_t *bytes)
{
    int in_send = (st->pt->coll->flags & COLL_OUT_SEND) != 0;
    *bytes = in_send ? st->send_bytes : st->recv_bytes;
    return in_send ? st->call.sbuf : st->call.rbuf;
}

/* Fresh inputs, and poison where the result will land, so that a call which writes
 * nothing cannot pass by leaving the previous variant's result in place. */
static void prepare_check(struct run_state *st, unsigned seed)
{
    size_t bytes;
    fill_send(st, st->call.sbuf, seed);
    char *out = output_of(st, &bytes);
    if (out != st->call.sbuf || st->a->rank != st->call.root) memset(out, POISON, bytes);
}

static void report_mismatch(const struct run_state *st, const char *got, const char *want,
                            size_t bytes)
{
    size_t i = 0;
    while (i < bytes && got[i] == want[i]) i++;
    char sz[32], root[32] = "";
    format_bytes(sz, sizeof sz, st->pt->bytes);
    if (st->pt->coll->flags & COLL_ROOTED) snprintf(root, sizeof root, " root=%d", st->call.root);
    fprintf(stderr,
            "nodecoll-bench: CHECK FAILED %s %s %s%s rank %d: byte %zu of %zu is 0x%02x, "
            "host MPI gives 0x%02x\n",
            st->pt->coll->name, st->pt->dt->name, sz, root, st->a->rank, i, bytes,
            (unsigned char)got[i], (unsigned char)want[i]);
}

/* Returns 1 when this rank's nodecoll result differs from the host's. */
static int check_round(struct run_state *st, int round, int tell)
{
    size_t bytes;
    unsigned seed = 1000u + (unsigned)round;
    use_set(st, 0);
    st->call.root = root_of(st->pt->root_pattern, st->a->nranks, round);
    prepare_check(st, seed);
    call_once(st, VAR_NODECOLL);
    char *out = output_of(st, &bytes);
    memcpy(st->a->shadow, out, bytes);
    prepare_check(st, seed);
    /* The oracle is the host's blocking call in every mode (MPICH 4.0.2's own persistent
     * collectives deliver nothing from their second start on), or for a neighbourhood pattern
     * MPI's definition (neighbors.c). */
    if (pattern_is_neighborhood(st->pt->coll->pattern)) {
        if (neighbors_oracle(&st->nb, &st->call)) call_failed(st, VAR_HOST, "oracle");
    } else {
        call_blocking(st, VAR_HOST);
    }
    if (!compares_here(st) || !memcmp(st->a->shadow, out, bytes)) return 0;
    if (tell) report_mismatch(st, st->a->shadow, out, bytes);
    return 1;
}

/* ---- one point ---------------------------------------------------------------------------- */

typedef double block_fn(struct run_state *st, enum variant v, int k, int round);

/* `rounds` rounds of one block of each variant, the first variant alternating; the block's
 * seconds go to mine[v * rounds + r].  With `check`, each round ends with a --check round
 * (on every rank: the check calls are collective too).  Returns the failed checks. */
static int run_rounds(struct run_state *st, block_fn *block, const int k[VAR_COUNT], int rounds,
                      double *mine, int check)
{
    int bad = 0;
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < VAR_COUNT; i++) {
            enum variant v = (enum variant)(r % 2 ? VAR_COUNT - 1 - i : i);
            mine[v * rounds + r] = block(st, v, k[v], r);
        }
        if (check) {
            bad += check_round(st, r, bad == 0);
            restore_root(st);
        }
    }
    return bad;
}

/* --overlap, after the plain rounds gave each variant's t_pure (post + wait, slowest rank,
 * median over rounds): the same rounds again, each call computing for its own variant's
 * t_pure between post and wait, as OSU's osu_i<coll> do.  The compute length is rank 0's
 * figure on every rank. */
static void measure_overlap(struct run_state *st, struct result *res, double *mine)
{
    double pure_s[VAR_COUNT], ratio[3];
    for (int v = 0; v < VAR_COUNT; v++) pure_s[v] = res->t[v].max * 1e-6;
    PMPI_Bcast(pure_s, VAR_COUNT, MPI_DOUBLE, 0, st->call.comm);
    for (int v = 0; v < VAR_COUNT; v++) {
        st->compute_s[v] = pure_s[v];
        res->compute_us[v] = pure_s[v] * 1e6;
    }
    st->rounds = res->rounds;
    st->computed = malloc(sizeof(double) * VAR_COUNT * (size_t)res->rounds);
    run_rounds(st, overlap_block, res->k, res->rounds, mine, 0);
    gather_times(st, mine, res->rounds, res->k, res->total, ratio);
    /* t_total - t_compute on each rank and round, before the slowest rank is taken */
    for (int i = 0; i < VAR_COUNT * res->rounds; i++) mine[i] -= st->computed[i];
    gather_times(st, mine, res->rounds, res->k, res->exposed, ratio);
    free(st->computed);
    res->overlap = 1;
}

void measure_point(struct arena *a, const struct options *o, const struct point *pt,
                   struct result *res)
{
    struct run_state st;
    double t_start = now_s();
    memset(res, 0, sizeof *res);
    res->pt = *pt;
    res->check = o->check ? 0 : -1;
    state_init(&st, a, pt, o);
    bind_requests(&st);
    struct stats_snap *before = stats_snapshot();
    double first[VAR_COUNT];
    first_calls(&st, first);
    warm_up(&st, o, first);
    plan(&st, o, t_start, first, res->k, &res->rounds);

    double *mine = malloc(sizeof(double) * VAR_COUNT * (size_t)res->rounds);
    double ratio[3];
    int bad = run_rounds(&st, timed_block, res->k, res->rounds, mine, o->check);
    gather_times(&st, mine, res->rounds, res->k, res->t, ratio);
    res->ratio_q1 = ratio[0], res->speedup = ratio[1], res->ratio_q3 = ratio[2];
    if (o->overlap) measure_overlap(&st, res, mine);
    free(mine);
    free_requests(&st);
    char call[32];
    coll_call_name(pt->coll, call, sizeof call);
    stats_moved(before, call, res->algs, sizeof res->algs);
    bad = bad > 0;
    if (o->check) PMPI_Allreduce(&bad, &res->check, 1, MPI_INT, MPI_SUM, st.call.comm);
    if (pattern_is_neighborhood(pt->coll->pattern)) neighbors_free(&st.nb);
}

/* Block displacements are ints in MPI; a point whose buffers they cannot address is
 * skipped rather than silently wrapped. */
int point_fits(const struct point *pt, int nranks)
{
    return (size_t)nranks * pt->bytes <= INT_MAX;
}
