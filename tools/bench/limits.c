/*
 * The machine's physical limits, measured in the same run as the collectives:
 *   - the round trip of one cache line between node ranks 0 and 1 (ping-pong on a line of
 *     a shared-memory window), at start-up and again after every point: on a virtual
 *     machine it changes several-fold when the hypervisor moves a virtual CPU, and the
 *     lowest value seen is the limit,
 *   - memcpy bandwidth per size on one core and on all usable cores at once, with the data
 *     in cache (hot) or not (cold),
 *   - single-copy reads per size: node rank 1 copying node rank 0's buffer with
 *     process_vm_readv (CMA) and with plain loads from a mapping both processes share (what
 *     nodecoll's shared heap does),
 * and the lower bound they imply for each collective (docs/benchmark.md derives it).
 *
 * Only the node of world rank 0 measures.  Ranks beyond the core count sleep meanwhile, so
 * an oversubscribed run still measures the hardware, not the scheduler.
 */
#include "bench.h"

#include <math.h>
#include <sched.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define COPY_TARGET_S 50e-6 /* one timed batch of copies lasts at least this long */
#define COPY_BATCHES 7       /* at least this many batches per measurement, the best counts */
#define COPY_BATCHES_MAX 50
#define COPY_SPEND_S 20e-3   /* ...and more, while a measurement stays within this time */
#define COPY_MIN ((size_t)8)
#define COPY_MAX ((size_t)64 << 20) /* beyond a few LLCs the bandwidth is flat (DRAM) */
#define RTT_BATCH 2000
#define RTT_BATCHES 15
/* The round trip again after a point: short batches, so that a partner preempted by
 * another job spoils one batch, not the probe, and no more batches once PROBE_CAP_S has
 * passed, so that a probe on a crowded machine costs about that, not a time slice per
 * round trip. */
#define PROBE_BATCH 50
#define PROBE_BATCHES 10
#define PROBE_CAP_S 0.5e-3
#define PROBE_COPY_MIN ((size_t)1 << 20) /* per copier: where the memory's rate bounds a point */
/* The start-up measurement ends after RTT_CAP_S too: where the two ranks cannot run at the
 * same time (a shared core, a virtual machine whose host runs one of its CPUs at a time)
 * each round trip costs a time slice, and 64,000 of them took minutes. */
#define RTT_CAP_S 0.5
#define RTT_STOP_POLLS 1024 /* polls of a waiting rank between looks at the clock or the stop line */
/* Polls before a waiting rank starts yielding its core: far beyond a round trip between
 * two running cores (a few hundred), so a measured batch never yields. */
#define SPIN_POLLS (1u << 16)
#define SLOT_HOP 40503u /* visit cold slots out of order, away from the prefetcher */
#define READ_MIN ((size_t)4096) /* smaller single-copy reads say nothing the round trip does not */

enum { L_PING, L_PONG, L_STOP, L_ARRIVE, L_DONE, L_K, L_BATCHES, L_ELAPSED /* one line per copier */ };

struct line {
    _Alignas(64) _Atomic uint64_t v;
};

struct node_ctx {
    MPI_Comm comm;
    MPI_Win win;
    int rank, size, is_main, copiers, open;
    struct line *l;
    uint64_t epoch;  /* spin_barrier's */
    uint64_t seq;    /* the last value the round trip wrote: every measurement writes new ones */
    uint64_t done;   /* measurements finished on the main node (L_DONE) */
};

/* Open from limits_measure to limits_close: the round trip is measured after every point. */
static struct node_ctx node;

struct copier {
    char *hot_src, *hot_dst, *cold_src, *cold_dst;
    size_t pool, cursor;
};

/* ---- synchronisation through the shared window ---------------------------------------- */

/* A waiting rank spins, then gives its core away: the rank it waits for may need it. */
static void pause_after(unsigned polls)
{
    if (polls >= SPIN_POLLS) sched_yield();
}

/* Between copiers only: a PMPI_Barrier leaves ranks microseconds apart, too much skew for
 * a 50 us batch whose copies are meant to run at the same time. */
static void spin_barrier(struct node_ctx *n)
{
    n->epoch++;
    atomic_fetch_add(&n->l[L_ARRIVE].v, 1);
    for (unsigned polls = 1; atomic_load(&n->l[L_ARRIVE].v) < n->epoch * (uint64_t)n->copiers; polls++)
        pause_after(polls);
}

/* Ranks that do not measure sleep meanwhile: an oversubscribed run measures the hardware,
 * not the scheduler. */
static void sleep_until_done(struct node_ctx *n)
{
    struct timespec ts = {0, 200000};
    while (atomic_load(&n->l[L_DONE].v) < n->done) nanosleep(&ts, NULL);
}

static void node_open(struct node_ctx *n, int cores)
{
    int world_rank, here;
    PMPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &n->comm);
    PMPI_Comm_rank(n->comm, &n->rank);
    PMPI_Comm_size(n->comm, &n->size);
    here = world_rank == 0;
    PMPI_Allreduce(MPI_IN_PLACE, &here, 1, MPI_INT, MPI_MAX, n->comm);
    n->is_main = here;
    n->copiers = n->size < cores ? n->size : cores;
    size_t lines = sizeof(struct line) * (size_t)(L_ELAPSED + n->copiers);
    /* Open MPI hands out window memory 8-byte aligned: ask for a spare line and align. */
    MPI_Aint bytes = n->rank == 0 ? (MPI_Aint)(lines + sizeof(struct line)) : 0;
    void *mine;
    char *base;
    PMPI_Win_allocate_shared(bytes, 1, MPI_INFO_NULL, n->comm, &mine, &n->win);
    MPI_Aint size;
    int disp;
    PMPI_Win_shared_query(n->win, 0, &size, &disp, &base);
    n->l = (struct line *)round_up((size_t)base, sizeof(struct line));
    if (n->rank == 0) memset(n->l, 0, lines);
    n->epoch = n->seq = n->done = 0;
    n->open = 1;
    PMPI_Barrier(n->comm);
}

static void node_close(struct node_ctx *n)
{
    if (!n->open) return;
    PMPI_Win_free(&n->win);
    PMPI_Comm_free(&n->comm);
    n->open = 0;
}

/* ---- cache-line round trip ------------------------------------------------------------ */

/* Rank 0 writes an odd value, rank 1 answers with the next even one.  On one shared line
 * each answer also has to take the line back for writing; with a line per writer (how
 * flag-based collectives are built) only the reads cross.  Minimum over batches: noise
 * only adds time.  Values continue from the previous measurement's, so a value left on a
 * line by an earlier one can never be taken for an answer.
 *
 * A measurement ends once `cap` seconds have passed, inside a batch too, where a partner
 * without a core would hold rank 0 for a time slice per round trip: rank 0 writes `stop`,
 * a value no measurement uses, on a line of its own that rank 1 looks at while it waits,
 * and waits for rank 1's stop + 1, or for rank 1's last answer (rank 1 finished and will
 * not look again).  The batches finished by then count, but not one in which a rank gave
 * its core away (a wait that long is the partner off its core: that batch measured the
 * scheduler, and a round trip taken from it made the latency bound too high to be one);
 * INFINITY if none did, and the bound then has no latency term.
 *
 * Release stores and acquire loads, as nodecoll's flags use: a sequentially consistent
 * store is a locked instruction on x86, whose cost in every round trip made the measured
 * round trip longer than two steps of nodecoll's Barrier (the limit must not be). */
static double measure_rtt_ns(struct node_ctx *n, int one_line, int batch, int batches, double cap)
{
    _Atomic uint64_t *ping = &n->l[L_PING].v, *pong = one_line ? ping : &n->l[L_PONG].v;
    _Atomic uint64_t *mine = n->rank == 0 ? ping : pong, *theirs = n->rank == 0 ? pong : ping;
    _Atomic uint64_t *stop_line = &n->l[L_STOP].v;
    uint64_t first = n->seq + (n->rank == 0 ? 1 : 2), wait = n->seq + (n->rank == 0 ? 2 : 1);
    uint64_t last_answer = n->seq + 2 * (uint64_t)batch * (uint64_t)(batches + 1), stop = last_answer + 1;
    double best = INFINITY, start = now_s();
    n->seq = stop + 1;
    for (int b = 0; b <= batches; b++) {
        double t0 = now_s();
        int yielded = 0; /* (then the batch timed the scheduler, not the machine) */
        for (int i = 0; i < batch; i++, first += 2, wait += 2) {
            if (n->rank == 0) atomic_store_explicit(mine, first, memory_order_release);
            for (unsigned polls = 1; atomic_load_explicit(theirs, memory_order_acquire) != wait; polls++) {
                yielded |= polls >= SPIN_POLLS;
                pause_after(polls);
                if (polls % RTT_STOP_POLLS) continue;
                if (n->rank == 1 && atomic_load_explicit(stop_line, memory_order_acquire) == stop) {
                    atomic_store_explicit(mine, stop + 1, memory_order_release);
                    return best;
                }
                if (n->rank == 0 && now_s() - start > cap) goto stopped;
            }
            if (n->rank == 1) atomic_store_explicit(mine, first, memory_order_release);
        }
        double t = (now_s() - t0) / batch * 1e9;
        if (b > 0 && !yielded && t < best) best = t; /* batch 0 warms up */
        if (n->rank == 0 && b < batches && now_s() - start > cap) goto stopped;
    }
    return best;
stopped:
    atomic_store_explicit(stop_line, stop, memory_order_release);
    for (unsigned polls = 1;; polls++) {
        uint64_t seen = atomic_load_explicit(theirs, memory_order_acquire);
        if (seen == stop + 1 || seen == last_answer) return best;
        pause_after(polls);
    }
}

/* ---- memcpy ------------------------------------------------------------------------------ */

/* (`cold`: with the pools cold copies use, two LLCs or more each, which take a good part of
 * a second to fill where the LLC is large) */
static void copier_init(struct copier *c, size_t largest, int cold)
{
    c->pool = cold ? 2 * (largest > llc_bytes() ? largest : llc_bytes()) : 0;
    c->hot_src = xalloc_touched(largest);
    c->hot_dst = xalloc_touched(largest);
    c->cold_src = cold ? xalloc_touched(c->pool) : NULL;
    c->cold_dst = cold ? xalloc_touched(c->pool) : NULL;
    c->cursor = 0;
}

static void copier_free(struct copier *c)
{
    free(c->hot_src);
    free(c->hot_dst);
    free(c->cold_src);
    free(c->cold_dst);
}

/* Seconds for k copies of s bytes.  Cold copies each use another slot of a source and a
 * destination pool of twice the LLC (or two slots), visited out of order: by the time a
 * slot comes back, at least four LLCs of other data have passed through the cache. */
static double copy_run(struct copier *c, size_t s, long k, int cold)
{
    size_t stride = round_up(s, 64), slots = cold ? c->pool / stride : 0;
    if (cold && slots % SLOT_HOP == 0) slots--;
    double t0 = now_s();
    for (long i = 0; i < k; i++) {
        size_t off = cold ? (c->cursor++ * SLOT_HOP % slots) * stride : 0;
        memcpy((cold ? c->cold_dst : c->hot_dst) + off, (cold ? c->cold_src : c->hot_src) + off, s);
        __asm__ volatile("" ::: "memory"); /* keep every copy */
    }
    return now_s() - t0;
}

/* Copies per batch and batches: a batch of at least COPY_TARGET_S, as many batches as fit
 * in COPY_SPEND_S (between the two limits).  More batches give the best one more chances
 * to miss a neighbour's burst of memory traffic. */
static void plan_copies(struct copier *c, size_t s, int cold, long *k, int *batches)
{
    copy_run(c, s, 1, cold);
    double t = dmax(copy_run(c, s, 4, cold) / 4, 1e-9);
    double kk = dmin(ceil_pos(COPY_TARGET_S / t), 1e6);
    *k = (long)kk;
    *batches = (int)dmax(COPY_BATCHES, dmin(COPY_BATCHES_MAX, COPY_SPEND_S / (kk * t)));
}

/* GB/s of one core: best batch. */
static double single_gbs(struct copier *c, size_t s, long k, int batches, int cold)
{
    double best = INFINITY;
    for (int b = 0; b < batches; b++) best = dmin(best, copy_run(c, s, k, cold));
    return (double)s * (double)k / best * 1e-9;
}

/* GB/s summed over all copiers copying at the same time: per batch the slowest copier
 * counts, then the best batch.  Every copier calls this; rank 0's result is the one used. */
static double all_gbs(struct node_ctx *n, struct copier *c, size_t s, long k, int batches,
                      int cold)
{
    double best = INFINITY;
    for (int b = 0; b < batches; b++) {
        spin_barrier(n);
        double t = copy_run(c, s, k, cold);
        atomic_store(&n->l[L_ELAPSED + n->rank].v, (uint64_t)(t * 1e9));
        spin_barrier(n);
        uint64_t slowest = 0;
        for (int i = 0; i < n->copiers; i++) {
            uint64_t e = atomic_load(&n->l[L_ELAPSED + i].v);
            slowest = e > slowest ? e : slowest;
        }
        best = dmin(best, (double)slowest * 1e-9);
    }
    return (double)n->copiers * (double)s * (double)k / best * 1e-9;
}

static void measure_size(struct node_ctx *n, struct copier *c, struct limits *l, int i, int cold)
{
    size_t s = l->size[i];
    if (n->rank == 0) {
        long k;
        int batches;
        plan_copies(c, s, cold, &k, &batches);
        (cold ? l->cold1 : l->hot1)[i] = single_gbs(c, s, k, batches, cold);
        atomic_store(&n->l[L_K].v, (uint64_t)k);
        atomic_store(&n->l[L_BATCHES].v, (uint64_t)batches);
    }
    spin_barrier(n);
    long k = (long)atomic_load(&n->l[L_K].v);
    int batches = (int)atomic_load(&n->l[L_BATCHES].v);
    double g = n->copiers > 1 ? all_gbs(n, c, s, k, batches, cold) : 0;
    (cold ? l->cold_all : l->hot_all)[i] = g;
}

/* What one core did, all cores can do, and what cold data allowed, hot data allows: a
 * limit is the best rate seen.  Without this, a copier preempted in every batch on a busy
 * machine would lower the bandwidth and raise the bound above what is reachable. */
static void floor_limits(struct limits *l)
{
    for (int i = 0; i < l->nsizes; i++) {
        l->hot1[i] = dmax(l->hot1[i], l->cold1[i]);
        l->cold_all[i] = dmax(l->cold_all[i], l->cold1[i]);
        l->hot_all[i] = dmax(dmax(l->hot_all[i], l->hot1[i]), l->cold_all[i]);
    }
}

/* The first measured size of `chunk` bytes or more (the last one if none is). */
static int first_size_from(const struct limits *l, double chunk)
{
    int i = 0;
    while (i < l->nsizes - 1 && (double)l->size[i] < chunk) i++;
    return i;
}

static void set_sizes(struct limits *l, size_t largest)
{
    l->nsizes = 0;
    for (size_t s = COPY_MIN; s <= largest && l->nsizes < LIMIT_SIZES; s *= 2) l->size[l->nsizes++] = s;
}

/* Node ranks 0 and 1 measure the round trip both ways; rank 0 keeps the lowest values seen
 * so far (the limit) and the median of all measurements (what the run mostly saw: the
 * highest would be a probe spoiled by another job). */
static void round_trip(struct node_ctx *n, struct limits *l, int batch, int batches, double cap,
                       int both)
{
    static double *seen, *sorted;
    static int room;
    double one = both ? measure_rtt_ns(n, 1, batch, batches, cap) : INFINITY;
    double two = measure_rtt_ns(n, 0, batch, batches, cap);
    double rtt = dmin(one, two);
    if (n->rank != 0 || !(rtt < INFINITY)) return; /* a probe that finished no batch */
    if (l->rtt_probes == room) {
        room = room ? 2 * room : 64;
        seen = realloc(seen, sizeof *seen * (size_t)room);
        sorted = realloc(sorted, sizeof *sorted * (size_t)room);
    }
    seen[l->rtt_probes++] = rtt;
    memcpy(sorted, seen, sizeof *seen * (size_t)l->rtt_probes);
    l->rtt_median_ns = median_of(sorted, l->rtt_probes);
    l->rtt_one_line_ns = l->rtt_probes > 1 ? dmin(l->rtt_one_line_ns, one) : one;
    l->rtt_ns = l->rtt_probes > 1 ? dmin(l->rtt_ns, rtt) : rtt;
}

/* ---- single-copy reads ------------------------------------------------------------------- */

/* How node rank 1 reads node rank 0's buffer `src` (at `remote` in process `pid`). */
struct reader {
    char *dst, *src;
    const char *remote;
    int pid;
    int cma;
};

/* Seconds for k reads of s bytes; a negative time when CMA is not permitted. */
static double read_run(const struct reader *r, size_t s, long k)
{
    double t0 = now_s();
    for (long i = 0; i < k; i++) {
        if (r->cma) {
            struct iovec local = {r->dst, s}, remote = {(void *)(uintptr_t)r->remote, s};
            if (process_vm_readv(r->pid, &local, 1, &remote, 1, 0) != (ssize_t)s) return -1;
        } else {
            memcpy(r->dst, r->src, s);
        }
        __asm__ volatile("" ::: "memory");
    }
    return now_s() - t0;
}

/* GB/s of the best batch (batches planned as for memcpy); 0 when the read is not permitted. */
static double read_gbs(const struct reader *r, size_t s)
{
    if (read_run(r, s, 1) < 0) return 0;
    double t = dmax(read_run(r, s, 4) / 4, 1e-9), best = INFINITY;
    long k = (long)dmin(ceil_pos(COPY_TARGET_S / t), 1e6);
    int batches = (int)dmax(COPY_BATCHES, dmin(COPY_BATCHES_MAX, COPY_SPEND_S / ((double)k * t)));
    for (int b = 0; b < batches; b++) best = dmin(best, read_run(r, s, k));
    return (double)s * (double)k / best * 1e-9;
}

/* Node rank 0's buffer, in shared memory of the kind the shared heap is made of (a tmpfs
 * file's pages, like a memfd's: an MPI shared window may live in a file on disk, which
 * read 2-3 times slower here under Open MPI); NULL if it cannot be made or mapped. */
static char *shared_buffer(int owner_pid, size_t bytes, int create)
{
    char name[64];
    snprintf(name, sizeof name, "/nodecoll-bench-read.%d", owner_pid);
    int fd = shm_open(name, create ? O_RDWR | O_CREAT | O_EXCL : O_RDONLY, 0600);
    if (fd < 0) return NULL;
    char *p = (!create || !ftruncate(fd, (off_t)bytes)) ?
                  mmap(NULL, bytes, create ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
    close(fd);
    if (!create) shm_unlink(name); /* (mapped by both now: the name can go) */
    return p == MAP_FAILED ? NULL : p;
}

/* Node ranks 0 and 1 of the main node: rank 0 fills its buffer and waits, rank 1 reads it
 * both ways at every size and sends rank 0 the rates. */
static void measure_reads(struct node_ctx *n, struct limits *l)
{
    size_t largest = l->size[l->nsizes - 1];
    struct {
        int pid;
        uint64_t address;
    } owner = {(int)getpid(), 0};
    char *src = NULL;
    if (n->rank == 0) {
        src = shared_buffer(owner.pid, largest, 1);
        if (src) memset(src, 7, largest);
        owner.address = (uint64_t)(uintptr_t)src;
        PMPI_Send(&owner, sizeof owner, MPI_BYTE, 1, 0, n->comm);
        PMPI_Recv(l->read_cma, LIMIT_SIZES, MPI_DOUBLE, 1, 1, n->comm, MPI_STATUS_IGNORE);
        PMPI_Recv(l->read_map, LIMIT_SIZES, MPI_DOUBLE, 1, 2, n->comm, MPI_STATUS_IGNORE);
        if (src) munmap(src, largest);
        return;
    }
    PMPI_Recv(&owner, sizeof owner, MPI_BYTE, 0, 0, n->comm, MPI_STATUS_IGNORE);
    src = owner.address ? shared_buffer(owner.pid, largest, 0) : NULL;
    struct reader r = {xalloc_touched(largest), src, (const char *)(uintptr_t)owner.address, owner.pid, 0};
    for (int i = 0; src && i < l->nsizes; i++) {
        if (l->size[i] < READ_MIN) continue;
        r.cma = 1;
        l->read_cma[i] = read_gbs(&r, l->size[i]);
        r.cma = 0;
        l->read_map[i] = read_gbs(&r, l->size[i]);
    }
    free(r.dst);
    if (src) munmap(src, largest);
    PMPI_Send(l->read_cma, LIMIT_SIZES, MPI_DOUBLE, 0, 1, n->comm);
    PMPI_Send(l->read_map, LIMIT_SIZES, MPI_DOUBLE, 0, 2, n->comm);
}

/* The memcpy table, every size hot and cold, by the copiers (node ranks below the core count). */
static void measure_copies(struct node_ctx *n, struct limits *l)
{
    struct copier c;
    copier_init(&c, l->size[l->nsizes - 1], 1);
    for (int i = 0; i < l->nsizes; i++)
        for (int cold = 0; cold < 2; cold++) measure_size(n, &c, l, i, cold);
    copier_free(&c);
    if (n->rank == 0) floor_limits(l);
}

/* Work of the copiers (node ranks below the core count) of the main node. */
static void copier_main(struct node_ctx *n, struct limits *l)
{
    if (n->copiers >= 2 && n->rank < 2) round_trip(n, l, RTT_BATCH, RTT_BATCHES, RTT_CAP_S, 1);
    spin_barrier(n);
    measure_copies(n, l);
    if (n->copiers >= 2 && n->rank < 2) measure_reads(n, l);
}

/* The largest chunk one copier moves for any selected point, as a power of two. */
static size_t largest_copy(const struct options *o, int nranks, int copiers)
{
    double most = COPY_MIN;
    for (int i = 0; i < coll_count(); i++) {
        const struct coll *c = coll_at(i);
        if (!(o->colls >> i & 1)) continue;
        double reads, writes;
        coll_traffic(c, nranks, &reads, &writes);
        double per_n = 0.5 * (reads + writes) / copiers;
        for (int s = 0; s < o->nsizes; s++) most = dmax(most, per_n * (double)o->sizes[s]);
    }
    for (int s = 0; s < o->nsizes; s++) most = dmax(most, (double)o->sizes[s]); /* a full table */
    size_t p = COPY_MIN;
    while ((double)p < most && p < COPY_MAX) p *= 2;
    return p;
}

void limits_measure(struct limits *l, const struct options *o)
{
    struct node_ctx *n = &node;
    int leader;
    memset(l, 0, sizeof *l);
    l->rtt_ns = l->rtt_one_line_ns = l->rtt_median_ns = NAN;
    l->cores = (int)sysconf(_SC_NPROCESSORS_ONLN);
    l->llc = llc_bytes();
    node_open(n, l->cores);
    set_sizes(l, largest_copy(o, n->size, n->copiers));
    leader = n->rank == 0;
    PMPI_Allreduce(MPI_IN_PLACE, &leader, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    n->done = 1;
    if (n->is_main && n->rank < n->copiers) copier_main(n, l);
    else if (n->is_main) sleep_until_done(n);
    if (n->is_main && n->rank == 0) atomic_store(&n->l[L_DONE].v, n->done);
    PMPI_Barrier(MPI_COMM_WORLD);
    l->nodes = leader;
    l->node_ranks = n->size;
    l->copiers = n->copiers;
    l->valid = leader == 1;
    PMPI_Bcast(l, sizeof *l, MPI_BYTE, 0, MPI_COMM_WORLD);
    if (!l->valid) node_close(n);
}

/* A measurement made again by node ranks below `measurers` while the others sleep: whether
 * this rank measures (every node rank calls it; end it with again_done). */
static int again_begins(struct node_ctx *n, int measurers)
{
    n->done++;
    if (n->rank < measurers) return 1;
    sleep_until_done(n);
    return 0;
}

static void again_done(struct node_ctx *n)
{
    if (n->rank == 0) atomic_store(&n->l[L_DONE].v, n->done);
}

/* Collective.  The round trip once more, a line per writer (node ranks 0 and 1; the others
 * sleep meanwhile); rank 0's limits keep the lowest.  Nothing on several machines, on a
 * single core, or when the ranks outnumber the cores: there a probe mostly measures how
 * long two ranks wait to be on a core together (half a millisecond on the busy development
 * machine), and the start-up measurement, made with the other ranks asleep, stands. */
void limits_probe(struct limits *l)
{
    struct node_ctx *n = &node;
    if (!l->valid || !n->open || n->copiers < 2 || n->size > l->cores || !again_begins(n, 2)) return;
    round_trip(n, l, PROBE_BATCH, PROBE_BATCHES, PROBE_CAP_S, 0);
    again_done(n);
}

/* Collective.  The copy rates once more, after the sweep; rank 0's limits keep the best of
 * both measurements.  The start-up measurement alone once left the machine's rate where a
 * neighbour's job had pushed it for a moment, and an Alltoall of 8 MiB reached 111 % of a
 * bound made from it.  Not on several machines or when the ranks outnumber the cores (as
 * limits_probe). */
void limits_copy_again(struct limits *l)
{
    struct node_ctx *n = &node;
    if (!l->valid || !n->open || n->size > l->cores || !again_begins(n, n->copiers)) return;
    struct limits again = *l;
    measure_copies(n, &again);
    if (n->rank != 0) return;
    for (int i = 0; i < l->nsizes; i++) {
        l->hot1[i] = dmax(l->hot1[i], again.hot1[i]);
        l->cold1[i] = dmax(l->cold1[i], again.cold1[i]);
        l->hot_all[i] = dmax(l->hot_all[i], again.hot_all[i]);
        l->cold_all[i] = dmax(l->cold_all[i], again.cold_all[i]);
    }
    again_done(n);
}

/* Collective.  After a point that copies PROBE_COPY_MIN or more per copier, the hot copy
 * rate at the size its bound reads (best_from's first) once more; rank 0's limits keep the
 * best: a virtual machine's memory rate moves between seconds (docs/benchmark.md). */
void limits_copy_probe(struct limits *l, const struct coll *c, int nranks, size_t bytes, int cold)
{
    struct node_ctx *n = &node;
    if (cold || !l->valid || !n->open || n->size > l->cores) return; /* (cold bounds use the cold rates) */
    double reads, writes;
    coll_traffic(c, nranks, &reads, &writes);
    double chunk = 0.5 * (reads + writes) * (double)bytes / l->copiers;
    if (chunk < (double)PROBE_COPY_MIN || !again_begins(n, n->copiers)) return;
    int i = first_size_from(l, chunk);
    struct limits again = *l;
    struct copier cp;
    copier_init(&cp, l->size[i], 0);
    measure_size(n, &cp, &again, i, 0);
    copier_free(&cp);
    if (n->rank != 0) return;
    l->hot1[i] = dmax(l->hot1[i], again.hot1[i]);
    l->hot_all[i] = dmax(l->hot_all[i], dmax(again.hot_all[i], again.hot1[i]));
    again_done(n);
}

void limits_close(void)
{
    node_close(&node);
}

/* ---- lower bounds ---------------------------------------------------------------------- */

/* The best rate measured at `chunk` bytes per copier or more.  A copy of a larger working
 * set that went faster shows that this one can too (a dip from noise, or the cache-size
 * step of the two copiers together, must not raise the bound). */
static double best_from(const struct limits *l, const double *gbs, double chunk)
{
    double best = 0;
    for (int i = first_size_from(l, chunk); i < l->nsizes; i++) best = dmax(best, gbs[i]);
    return best;
}

/* docs/benchmark.md, "Lower bounds": max(one-way cache-line latency, unavoidable copying /
 * the fastest copy rate the machine showed for data of that size).  Reads and writes count
 * half a copied byte each: a copy reads and writes.  Data in cache cannot be copied faster
 * than a memcpy of the same working set (hot, `copied / copiers` per copier, or any larger
 * one), and no data slower than the best cold memcpy, whatever its chunk size: an
 * implementation may copy in any chunks it likes.  The latency term only holds where every
 * rank waits for every other: elsewhere (a root that sends, a scan) back-to-back calls may
 * overlap, and the timed loop would beat it. */
double limits_bound_us(const struct limits *l, const struct coll *c, int nranks, size_t n,
                       int cold)
{
    if (!l->valid || nranks < 2) return NAN; /* (one rank: a copy against a copy, within noise) */
    int waits = (c->flags & COLL_ALLDEP) && nranks > 1 && !isnan(l->rtt_ns);
    double latency = waits ? 0.5 * l->rtt_ns * 1e-3 : 0, reads, writes;
    coll_traffic(c, nranks, &reads, &writes);
    double copied = 0.5 * (reads + writes) * (double)n;
    if (copied <= 0) return latency;
    int all = l->copiers > 1;
    double cold_gbs = best_from(l, all ? l->cold_all : l->cold1, 0);
    double hot_gbs = best_from(l, all ? l->hot_all : l->hot1, copied / l->copiers);
    double bandwidth = cold ? cold_gbs : dmax(hot_gbs, cold_gbs);
    return dmax(latency, copied / (bandwidth * 1e3));
}
