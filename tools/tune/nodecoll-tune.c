/* nodecoll-tune: measures, on the machine and with the ranks a user will run, what nodecoll
 * can be told (core/tune.h) and writes a rules file that nodecoll then follows:
 *
 *   1. the topology levels the node's trees follow (NODECOLL_TOPO_LEVELS), among the choices
 *      that group this node's ranks differently (none where every level is one domain);
 *   2. the layout of a node's rings (NODECOLL_SEGMENT_SIZE, NODECOLL_SEGMENTS), under the
 *      levels chosen;
 *   3. each tunable collective's algorithm over message sizes, with its parameters: the
 *      single-copy step (NODECOLL_CMA_CHUNK, NODECOLL_REDUCE_CHUNK) and, in the full mode,
 *      the trees' radices, under the levels and layout chosen.
 *
 * Run it under mpirun like the application:
 *
 *   mpirun -np 64 nodecoll-tune [--quick] [--dry-run] [--out FILE] [--coll LIST]
 *
 * Each candidate runs on its own duplicate of the node's communicator, set up with the
 * settings that make it; the candidates of one message size are measured in turns, round
 * after round (the benchmark's interleaved method: a change of the machine's load hits them
 * alike), and the median of the rounds decides.  A candidate that the registry would not run
 * there (no single copy, not a power of two, ...) is seen in nodecoll's counters and left
 * out.  Sizes between two measured ones go to the nearer (geometrically).  Node-wide
 * choices are judged by the geometric mean of their time ratios over every point they
 * touch.  A candidate replaces the built-in default only when at least 5% faster.  Rules
 * already in the file for other node sizes, from this nodecoll and MPI, are kept. */
#include <errno.h>
#include <math.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "nodecoll.h"
#include "core/config.h"
#include "core/hier.h"
#include "core/topo.h"
#include "core/tune.h"

enum { MAX_SIZES = 16, MAX_CANDS = 24, MAX_ROUNDS = 31, MAX_SETS = 4 };

/* Only this much faster (median over median, or geometric mean of ratios) replaces the
 * default: noise must not make rules. */
#define WIN_FACTOR 1.05

typedef struct setting_value {
    const char *name; /* without NODECOLL_ */
    char value[32];
} setting_value;

typedef struct candidate {
    char label[80];              /* how --verbose and --dry-run name it */
    setting_value set[MAX_SETS]; /* the settings its communicator is set up under */
    int nset;
    const char *count; /* the counter name that proves it ran; NULL: any of nodecoll's */
    int is_auto;       /* the registry's own choice: named after the algorithm that ran */
    int radix;         /* what a rule records of it (0: the setting's) */
    int64_t chunk;
    int64_t levels, segment_size, segments; /* node-wide candidates' values */
    size_t measured_from; /* below this many bytes it runs exactly as the default does */
    MPI_Comm comm;
    int valid, k; /* calls per measurement: its own, so that each takes about the target time */
    double t[MAX_ROUNDS];
} candidate;

typedef struct tuned_coll {
    nc_coll_id coll;
    const char *alg_setting;       /* ..._ALG */
    const char *radix_settings[2]; /* the radix settings a candidate's radix sets */
    const char *chunk_setting;     /* the cma algorithm's step */
    const char *algs[6], *counts[6];
} tuned_coll;

static const tuned_coll colls[] = {
    {NC_COLL_BARRIER, "BARRIER_ALG", {"BARRIER_FANIN", "BARRIER_FANOUT"}, NULL,
     {"flat", "tree", "dissemination"}, {"flat", "tree", "dissemination"}},
    {NC_COLL_BCAST, "BCAST_ALG", {"BCAST_RADIX", NULL}, "CMA_CHUNK", {"shm", "cma"}, {"shm", "cma"}},
    {NC_COLL_REDUCE, "REDUCE_ALG", {"REDUCE_FANIN", NULL}, "REDUCE_CHUNK", {"tree", "flat", "cma", "shm"},
     {"tree", "flat", "cma", "shm"}},
    {NC_COLL_ALLREDUCE, "REDUCE_ALG", {"REDUCE_FANIN", NULL}, "REDUCE_CHUNK",
     {"flat", "tree", "cma", "shm", "recursive_doubling"}, {"flat", "tree", "cma", "shm", "recursive-doubling"}},
};
#define NCOLLS ((int)(sizeof colls / sizeof colls[0]))

typedef struct options {
    int quick, verbose, dry_run, ncolls, which[8];
    double bandwidth; /* memcpy's, for the prediction */
    const char *out;
    char out_buf[512];
} options;

static int world_rank, node_size, node_rank;
static MPI_Comm node;
static nc_topo_loc *places; /* every node rank's place on the topology, as nodecoll finds it */

static void die(const char *what)
{
    if (world_rank == 0) fprintf(stderr, "nodecoll-tune: %s\n", what);
    MPI_Abort(MPI_COMM_WORLD, 2);
}

__attribute__((format(printf, 1, 2))) static void say(const char *fmt, ...)
{
    if (world_rank) return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
}

static void set(const char *name, const char *value)
{
    char err[300];
    if (nc_config_set(name, value, err, sizeof err)) die(err);
}

/* The process's value of a setting now, as a user would type it. */
static void current(const char *name, char *out, size_t len)
{
    const nc_setting_info *s = nc_setting_named(name);
    nc_setting_format(s, nc_config_value(nc_config_get(), s), out, len);
}

static int64_t current_value(const char *name) { return nc_config_value(nc_config_get(), nc_setting_named(name)); }

/* Where the rules go: --out, else NODECOLL_TUNE_FILE as the job was given it, else the
 * default location nodecoll reads. */
static int parse_options(int argc, char **argv, const char *tune_file, options *o)
{
    o->quick = o->verbose = o->dry_run = 0;
    o->out = tune_file && *tune_file ? tune_file : nc_tune_default_path(o->out_buf, sizeof o->out_buf);
    o->ncolls = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) {
            o->quick = 1;
        } else if (!strcmp(argv[i], "--verbose")) {
            o->verbose = 1;
        } else if (!strcmp(argv[i], "--dry-run")) {
            o->dry_run = 1;
        } else if (!strcmp(argv[i], "--out") && i + 1 < argc) {
            o->out = argv[++i];
        } else if (!strcmp(argv[i], "--coll") && i + 1 < argc) {
            char *list = argv[++i], *save = NULL;
            for (char *w = strtok_r(list, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
                int found = -1;
                for (int k = 0; k < NCOLLS; k++)
                    if (!strcmp(nc_coll_name(colls[k].coll), w)) found = k;
                if (found < 0 || o->ncolls == 8) return -1;
                o->which[o->ncolls++] = found;
            }
        } else {
            return -1;
        }
    }
    if (!o->ncolls)
        for (int k = 0; k < NCOLLS; k++) o->which[o->ncolls++] = k;
    return o->out ? 0 : -1;
}

/* ---- one call of a collective --------------------------------------------------------- */

static char *sbuf, *rbuf;

static void call(nc_coll_id coll, MPI_Comm comm, size_t bytes)
{
    int count = (int)(bytes / sizeof(double));
    switch (coll) {
    case NC_COLL_BARRIER: MPI_Barrier(comm); break;
    case NC_COLL_BCAST: MPI_Bcast(sbuf, (int)bytes, MPI_BYTE, 0, comm); break;
    case NC_COLL_REDUCE: MPI_Reduce(sbuf, rbuf, count, MPI_DOUBLE, MPI_SUM, 0, comm); break;
    default: MPI_Allreduce(sbuf, rbuf, count, MPI_DOUBLE, MPI_SUM, comm); break;
    }
}

/* Seconds per call of k calls, the slowest rank's. */
static double timed(nc_coll_id coll, MPI_Comm comm, size_t bytes, int k)
{
    PMPI_Barrier(comm);
    double t0 = MPI_Wtime();
    for (int i = 0; i < k; i++) call(coll, comm, bytes);
    double t = (MPI_Wtime() - t0) / k, slowest;
    PMPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, comm);
    return slowest;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(const double *v, int n)
{
    double s[MAX_ROUNDS];
    memcpy(s, v, sizeof(double) * (size_t)n);
    qsort(s, (size_t)n, sizeof(double), by_value);
    return s[n / 2];
}

/* ---- candidates ------------------------------------------------------------------------ */

static candidate blank(const char *label)
{
    candidate c = {.comm = MPI_COMM_NULL, .valid = 1, .k = 1};
    snprintf(c.label, sizeof c.label, "%s", label);
    return c;
}

__attribute__((format(printf, 3, 4))) static void with(candidate *c, const char *name, const char *fmt, ...)
{
    if (c->nset == MAX_SETS) die("internal: a candidate with too many settings");
    setting_value *s = &c->set[c->nset++];
    s->name = name;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->value, sizeof s->value, fmt, ap);
    va_end(ap);
}

/* A byte count as a SIZE setting takes it ("256K"). */
static void bytes_text(int64_t v, char *out, size_t len)
{
    nc_setting_format(nc_setting_named("CMA_CHUNK"), v, out, len);
}

/* The registry's own choice first ("auto": its algorithm is read from the counters at each
 * size), then every algorithm forced; the cma algorithm with other steps (measured only
 * where the step changes the call: a Bcast longer than the smaller step, a reduction whose
 * slices are); in the full mode the trees' radices. */
static int algorithm_candidates(const tuned_coll *tc, int quick, candidate *out)
{
    static const int64_t cma_steps[2][3] = {{256 << 10}, {128 << 10, 256 << 10, 4 << 20}};
    static const int64_t reduce_steps[2][3] = {{64 << 10}, {32 << 10, 64 << 10, 1 << 20}};
    int n = 0;
    out[n] = blank("auto");
    out[n].is_auto = 1;
    with(&out[n++], tc->alg_setting, "auto");
    for (int a = 0; a < 6 && tc->algs[a]; a++) {
        out[n] = blank(tc->counts[a]);
        out[n].count = tc->counts[a];
        with(&out[n++], tc->alg_setting, "%s", tc->algs[a]);
        int tree = !strcmp(tc->algs[a], "tree") || (tc->coll == NC_COLL_BCAST && !strcmp(tc->algs[a], "shm"));
        for (int radix = 2; !quick && tree && radix <= 16 && radix < node_size && n < MAX_CANDS; radix *= 2) {
            out[n] = blank("");
            snprintf(out[n].label, sizeof out[n].label, "%s/radix=%d", tc->counts[a], radix);
            out[n].count = tc->counts[a];
            out[n].radix = radix;
            with(&out[n], tc->alg_setting, "%s", tc->algs[a]);
            for (int s = 0; s < 2 && tc->radix_settings[s]; s++) with(&out[n], tc->radix_settings[s], "%d", radix);
            n++;
        }
        int64_t standard = tc->chunk_setting ? current_value(tc->chunk_setting) : 0;
        const int64_t *steps = tc->coll == NC_COLL_BCAST ? cma_steps[!quick] : reduce_steps[!quick];
        for (int s = 0; s < 3 && standard && !strcmp(tc->algs[a], "cma") && steps[s] && n < MAX_CANDS; s++) {
            if (steps[s] == standard) continue;
            char step[32];
            bytes_text(steps[s], step, sizeof step);
            out[n] = blank("");
            snprintf(out[n].label, sizeof out[n].label, "cma/chunk=%s", step);
            out[n].count = "cma";
            out[n].chunk = steps[s];
            int64_t smaller = steps[s] < standard ? steps[s] : standard;
            out[n].measured_from = (size_t)smaller * (tc->coll == NC_COLL_BCAST ? 1 : (size_t)node_size) + 1;
            with(&out[n], tc->alg_setting, "cma");
            with(&out[n++], tc->chunk_setting, "%s", step);
        }
    }
    return n;
}

/* Whether two groupings of the node's ranks are the same (then so are all their trees). */
static int same_groups(const nc_hier *a, const nc_hier *b)
{
    if (!a || !b) return a == b;
    if (a->depth != b->depth) return 0;
    for (int l = 1; l <= a->depth; l++)
        if (memcmp(a->group_of[l], b->group_of[l], sizeof(int) * (size_t)a->size)) return 0;
    return 1;
}

/* The choices of NODECOLL_TOPO_LEVELS that group this node's ranks differently: the
 * setting's own first, then flat and the subsets of package, numa and l3.  One candidate:
 * every choice groups them alike, nothing to measure. */
static int levels_candidates(candidate *out)
{
    static const int masks[] = {0, 1 << NC_TOPO_PACKAGE, 1 << NC_TOPO_NUMA, 1 << NC_TOPO_L3,
                                1 << NC_TOPO_PACKAGE | 1 << NC_TOPO_NUMA, 1 << NC_TOPO_PACKAGE | 1 << NC_TOPO_L3,
                                1 << NC_TOPO_NUMA | 1 << NC_TOPO_L3, NC_TOPO_AUTO_LEVELS};
    const nc_setting_info *setting = nc_setting_named("TOPO_LEVELS");
    int64_t own = current_value("TOPO_LEVELS");
    nc_hier *seen[9];
    int n = 0;
    for (int i = -1; i < (int)(sizeof masks / sizeof masks[0]); i++) {
        int64_t value = i < 0 ? own : masks[i];
        int mask = value < 0 ? NC_TOPO_AUTO_LEVELS : (int)value;
        nc_hier *h = places && node_size > 2 ? nc_hier_build(places, node_size, mask) : NULL;
        int known = 0;
        for (int j = 0; j < n && !known; j++) known = same_groups(seen[j], h);
        if (known) {
            nc_hier_free(h);
            continue;
        }
        seen[n] = h;
        out[n] = blank("");
        nc_setting_format(setting, value, out[n].label, sizeof out[n].label);
        out[n].levels = value;
        with(&out[n], "TOPO_LEVELS", "%s", out[n].label);
        n++;
    }
    for (int j = 0; j < n; j++) nc_hier_free(seen[j]);
    return n;
}

/* The setting's layout first, then other segment sizes and (full mode) ring depths; only
 * messages that take the rings are measured (above 1 KiB: smaller ones fit any fragment). */
static int layout_candidates(int quick, candidate *out)
{
    static const int64_t sizes[2][4] = {{16 << 10, 64 << 10}, {8 << 10, 16 << 10, 64 << 10, 128 << 10}};
    static const int64_t depths[2][2] = {{0}, {4, 16}};
    int64_t size = current_value("SEGMENT_SIZE"), depth = current_value("SEGMENTS");
    int n = 0;
    for (int i = -1; i < 6; i++) {
        int64_t s = i < 0 ? size : i < 4 ? sizes[!quick][i] : size;
        int64_t d = i < 4 ? depth : depths[!quick][i - 4];
        if (!s || !d || (i >= 0 && s == size && d == depth)) continue;
        char text[32];
        bytes_text(s, text, sizeof text);
        out[n] = blank("");
        snprintf(out[n].label, sizeof out[n].label, "segment=%s segments=%lld", text, (long long)d);
        out[n].segment_size = s;
        out[n].segments = d;
        out[n].measured_from = i < 0 ? 0 : 1024;
        with(&out[n], "SEGMENT_SIZE", "%s", text);
        with(&out[n++], "SEGMENTS", "%lld", (long long)d);
    }
    return n;
}

/* Communicators set up under each candidate's settings (the process's settings are put back
 * after each). */
static void open_candidates(candidate *c, int n)
{
    for (int j = 0; j < n; j++) {
        char saved[MAX_SETS][32];
        for (int s = 0; s < c[j].nset; s++) current(c[j].set[s].name, saved[s], sizeof saved[s]);
        for (int s = 0; s < c[j].nset; s++) set(c[j].set[s].name, c[j].set[s].value);
        MPI_Comm_dup(node, &c[j].comm);
        MPI_Barrier(c[j].comm); /* (sets it up) */
        for (int s = c[j].nset - 1; s >= 0; s--) set(c[j].set[s].name, saved[s]);
    }
}

static void close_candidates(candidate *c, int n)
{
    for (int j = 0; j < n; j++) MPI_Comm_free(&c[j].comm);
}

/* ---- the plan, its points and its progress --------------------------------------------- */

typedef struct plan {
    size_t sizes[MAX_SIZES];
    int nsizes, rounds;
    double target;    /* seconds per measurement */
    double bandwidth; /* memcpy's */
    double sync;      /* seconds a measurement's own synchronisation takes here */
    double setup;     /* seconds a candidate's communicator takes to set up */
} plan;

/* One phase: candidates and the (collective, size) points they are measured at. */
typedef struct phase {
    candidate c[MAX_CANDS];
    int n;
    struct {
        nc_coll_id coll;
        size_t bytes;
    } point[4 * MAX_SIZES];
    int npoints;
} phase;

static void add_points(phase *ph, nc_coll_id coll, const plan *p)
{
    for (int s = 0; s < (coll == NC_COLL_BARRIER ? 1 : p->nsizes); s++) {
        ph->point[ph->npoints].coll = coll;
        ph->point[ph->npoints++].bytes = coll == NC_COLL_BARRIER ? 0 : p->sizes[s];
    }
}

/* Whether candidate j is measured at `bytes`: where it may differ from the first (which is
 * measured where any other is). */
static int measured_at(const phase *ph, int j, size_t bytes)
{
    if (j > 0) return bytes >= ph->c[j].measured_from;
    for (int k = 1; k < ph->n; k++)
        if (bytes >= ph->c[k].measured_from) return 1;
    return 0;
}

/* Seconds one measurement of `bytes` takes: the target, or a few calls of a large message
 * (a call moves the message about four times at memcpy speed), and its synchronisation. */
static double point_seconds(const plan *p, size_t bytes)
{
    double call = 4.0 * (double)bytes / p->bandwidth + 2e-6;
    return (p->target > 2 * call ? p->target : 2 * call) * 1.2 + p->sync;
}

/* The rounds, a probe and a calibration of each candidate measured at point i. */
static double point_cost(const phase *ph, int i, const plan *p)
{
    int measured = 0;
    for (int j = 0; j < ph->n; j++) measured += measured_at(ph, j, ph->point[i].bytes);
    return measured * (p->rounds + 2) * point_seconds(p, ph->point[i].bytes);
}

/* A phase's seconds: its points, and a set-up per candidate. */
static double phase_cost(const phase *ph, const plan *p)
{
    double total = ph->n > 1 ? ph->n * p->setup : 0;
    for (int i = 0; ph->n > 1 && i < ph->npoints; i++) total += point_cost(ph, i, p);
    return total;
}

/* memcpy's bytes per second on a message of `bytes` (the slowest rank's best of five tries:
 * the prediction is for an idle machine, and one try that lost its core to another job made
 * it four times too long). */
static double copy_bandwidth(size_t bytes)
{
    double best = 0, slowest;
    memcpy(rbuf, sbuf, bytes);
    for (int try = 0; try < 5; try++) {
        double t0 = MPI_Wtime();
        memcpy(rbuf, sbuf, bytes);
        double bw = (double)bytes / (MPI_Wtime() - t0 + 1e-9);
        best = bw > best ? bw : best;
    }
    PMPI_Allreduce(&best, &slowest, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    return slowest;
}

/* What measuring costs here besides the calls (the slowest rank's, the best of five tries as
 * for memcpy): the barrier and the reduction of a measurement, and a candidate's set-up (a
 * duplicate, its first collective, its release); with more ranks than cores these dominate
 * a quick run. */
static void measure_overheads(plan *p)
{
    double x = 0, y, mine[2] = {1e9, 0};
    for (int i = 0; i < 5; i++) {
        double t0 = MPI_Wtime();
        PMPI_Barrier(node);
        PMPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_MAX, node);
        mine[0] = fmin(mine[0], MPI_Wtime() - t0);
    }
    MPI_Comm dup;
    double t0 = MPI_Wtime();
    MPI_Comm_dup(node, &dup);
    MPI_Barrier(dup);
    MPI_Comm_free(&dup);
    mine[1] = MPI_Wtime() - t0;
    double slowest[2];
    PMPI_Allreduce(mine, slowest, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    p->sync = slowest[0];
    p->setup = slowest[1];
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef struct progress_bar {
    double done, total, started;
} progress_bar;

static void progress(progress_bar *bar, double step)
{
    bar->done += step;
    if (world_rank || !isatty(2)) return;
    double done = bar->done, total = bar->total;
    int width = 40, filled = total > 0 ? (int)(width * (done / total < 1 ? done / total : 1)) : width;
    double elapsed = now() - bar->started, left = done > 0 ? elapsed * (total - done) / done : total;
    fprintf(stderr, "\r[%.*s%*s] %3.0f%%  %4.0f s left ", filled, "########################################",
            width - filled, "", total > 0 ? 100 * (done < total ? done : total) / total : 100, left > 0 ? left : 0);
    if (done >= total) fputc('\n', stderr);
}

/* ---- measuring ---------------------------------------------------------------------------- */

/* Whether candidate c's call of `coll` ran as it should: its algorithm, or (none named) on
 * nodecoll rather than the host.  The registry's own choice is named by the algorithm of
 * another candidate that ran. */
static int ran_as_planned(candidate *c, const phase *ph, nc_coll_id coll)
{
    const char *name = nc_coll_name(coll);
    if (c->is_auto) {
        c->count = NULL;
        for (int a = 0; a < ph->n; a++)
            if (ph->c[a].count && nodecoll_stat_calls(name, ph->c[a].count) > 0) c->count = ph->c[a].count;
        if (!c->count) return 0;
    }
    if (c->count) return nodecoll_stat_calls(name, c->count) > 0;
    return nodecoll_stat_calls(name, "*") > nodecoll_stat_calls(name, "pmpi:*");
}

/* Probes and calibrates every candidate measured at point i, then measures them in turns. */
static void measure_point(phase *ph, int i, const plan *p)
{
    nc_coll_id coll = ph->point[i].coll;
    size_t bytes = ph->point[i].bytes;
    for (int j = 0; j < ph->n; j++) {
        candidate *c = &ph->c[j];
        c->valid = 0;
        if (!measured_at(ph, j, bytes)) continue;
        nodecoll_stat_reset();
        call(coll, c->comm, bytes);
        int ran = ran_as_planned(c, ph, coll);
        PMPI_Allreduce(&ran, &c->valid, 1, MPI_INT, MPI_MIN, node);
        if (!c->valid) continue;
        /* (the slowest rank's time: every rank makes the same number of calls) */
        double per_call = timed(coll, c->comm, bytes, 3);
        c->k = per_call > 0 ? (int)(p->target / per_call) : 1000;
        c->k = c->k < 1 ? 1 : c->k > 100000 ? 100000 : c->k;
    }
    for (int r = 0; r < p->rounds; r++) {
        for (int q = 0; q < ph->n; q++) {
            int j = (q + r) % ph->n; /* turns rotate: no candidate always follows the same one */
            if (ph->c[j].valid) ph->c[j].t[r] = timed(coll, ph->c[j].comm, bytes, ph->c[j].k);
        }
    }
}

static void print_point(const phase *ph, int i, const plan *p, int best)
{
    fprintf(stderr, "%-10s %9zu B", nc_coll_name(ph->point[i].coll), ph->point[i].bytes);
    for (int j = 0; j < ph->n; j++)
        if (ph->c[j].valid)
            fprintf(stderr, "  %s%s %.3f us", ph->c[j].is_auto ? "auto=" : "",
                    ph->c[j].is_auto ? ph->c[j].count : ph->c[j].label, median(ph->c[j].t, p->rounds) * 1e6);
    if (best >= 0) fprintf(stderr, "  -> %s", ph->c[best].is_auto ? ph->c[best].count : ph->c[best].label);
    fputc('\n', stderr);
}

/* The fastest valid candidate at the point just measured, unless the first (the default)
 * is within WIN_FACTOR of it; -1: none ran. */
static int fastest(const phase *ph, const plan *p)
{
    int best = -1;
    double best_t = 0;
    for (int j = 0; j < ph->n; j++) {
        if (!ph->c[j].valid) continue;
        double m = median(ph->c[j].t, p->rounds);
        if (best < 0 || m < best_t) best = j, best_t = m;
    }
    if (ph->c[0].valid && best > 0 && best_t > median(ph->c[0].t, p->rounds) / WIN_FACTOR) best = 0;
    return best;
}

typedef struct winner {
    size_t size;
    const char *count; /* the winner's counter name; NULL: none ran */
    int radix;
    int64_t chunk;
} winner;

/* Measures one collective's candidates at every size; winners[i] for its i-th point. */
static void measure_algorithms(phase *ph, const plan *p, const options *o, winner *winners, progress_bar *bar)
{
    open_candidates(ph->c, ph->n);
    for (int i = 0; i < ph->npoints; i++) {
        measure_point(ph, i, p);
        int best = fastest(ph, p);
        if (o->verbose && world_rank == 0) print_point(ph, i, p, best);
        const candidate *w = best >= 0 ? &ph->c[best] : NULL;
        winners[i] = (winner){ph->point[i].bytes, w ? w->count : NULL, w ? w->radix : 0, w ? w->chunk : 0};
        progress(bar, point_cost(ph, i, p));
    }
    close_candidates(ph->c, ph->n);
    progress(bar, ph->n * p->setup);
}

/* Measures a node-wide phase at all its points and returns the candidate whose geometric
 * mean of time ratios to the first is best, if that is WIN_FACTOR better and it was faster at
 * most points (one point's noise must not carry a node-wide choice), else 0. */
static int measure_node_wide(phase *ph, const plan *p, const options *o, const char *what, progress_bar *bar)
{
    double log_sum[MAX_CANDS] = {0};
    int points[MAX_CANDS] = {0}, faster[MAX_CANDS] = {0};
    open_candidates(ph->c, ph->n);
    for (int i = 0; i < ph->npoints; i++) {
        if (!measured_at(ph, 0, ph->point[i].bytes)) continue;
        measure_point(ph, i, p);
        if (o->verbose && world_rank == 0) print_point(ph, i, p, -1);
        for (int j = 1; ph->c[0].valid && j < ph->n; j++) {
            if (!ph->c[j].valid) continue;
            double ratio = median(ph->c[j].t, p->rounds) / median(ph->c[0].t, p->rounds);
            log_sum[j] += log(ratio);
            faster[j] += ratio < 1;
            points[j]++;
        }
        progress(bar, point_cost(ph, i, p));
    }
    close_candidates(ph->c, ph->n);
    progress(bar, ph->n * p->setup);
    int best = 0;
    double best_ratio = 1;
    say("%s:", what);
    for (int j = 1; j < ph->n; j++) {
        double ratio = points[j] ? exp(log_sum[j] / points[j]) : 0;
        if (ratio > 0) say(" %s %.3fx (faster at %d of %d)%s", ph->c[j].label, ratio, faster[j], points[j],
                           j + 1 < ph->n ? "," : "");
        else say(" %s did not run%s", ph->c[j].label, j + 1 < ph->n ? "," : "");
        if (ratio > 0 && ratio < best_ratio && 2 * faster[j] > points[j]) best = j, best_ratio = ratio;
    }
    if (best_ratio > 1 / WIN_FACTOR) best = 0;
    say(" the time of %s -> %s\n", ph->c[0].label, best ? ph->c[best].label : "kept");
    return best;
}

/* ---- the file ---------------------------------------------------------------------------- */

static size_t boundary(size_t a, size_t b) { return (size_t)sqrt((double)a * (double)b) + 1; }

static int add_rules(const tuned_coll *tc, const winner *w, int n, nc_tune_rules *out)
{
    for (int i = 0; i < n; i++) {
        if (!w[i].count) continue;
        nc_alg_id alg = nc_tune_alg(tc->coll, w[i].count);
        uint64_t lo = i == 0 ? 0 : boundary(w[i - 1].size, w[i].size);
        uint64_t hi = i + 1 == n ? NC_TUNE_NO_MAX : boundary(w[i].size, w[i + 1].size) - 1;
        if (tc->coll == NC_COLL_BARRIER) lo = 0, hi = 0;
        nc_tune_rule *last = out->count ? &out->rule[out->count - 1] : NULL;
        if (last && last->coll == tc->coll && last->ranks == node_size && last->alg == alg &&
            last->radix == w[i].radix && last->chunk == w[i].chunk && last->max_bytes + 1 == lo) {
            last->max_bytes = hi; /* the same winner as the size below: one rule */
            continue;
        }
        if (out->count == NC_TUNE_MAX_RULES) return -1;
        out->rule[out->count++] =
            (nc_tune_rule){(uint8_t)tc->coll, (uint8_t)alg, 0, node_size, w[i].radix, w[i].chunk, lo, hi};
    }
    return 0;
}

static void describe_machine(char *out, size_t len)
{
    char host[128] = "?";
    gethostname(host, sizeof host - 1);
    const nc_topo_info *t = nc_topo_get();
    snprintf(out, len, "%s, %ld CPUs online; hwloc: %s: %d packages, %d NUMA nodes, %d L3, %d cores; %d ranks per node",
             host, sysconf(_SC_NPROCESSORS_ONLN), t->loaded ? t->source : "unread", t->domains[NC_TOPO_PACKAGE],
             t->domains[NC_TOPO_NUMA], t->domains[NC_TOPO_L3], t->cores, node_size);
}

static void write_node_lines(FILE *f, const nc_tune_node *n)
{
    char line[200];
    nc_tune_format_layout(n, line, sizeof line);
    if (*line) fprintf(f, "%s\n", line);
    nc_tune_format_levels(n, line, sizeof line);
    if (*line) fprintf(f, "%s\n", line);
}

static void write_rule_lines(FILE *f, const nc_tune_rules *t, int skip_ranks)
{
    char line[200];
    for (int i = 0; i < t->nodes; i++)
        if (t->node[i].ranks != skip_ranks) write_node_lines(f, &t->node[i]);
    for (int i = 0; i < t->count; i++) {
        if (t->rule[i].ranks == skip_ranks) continue;
        nc_tune_format_rule(&t->rule[i], line, sizeof line);
        fprintf(f, "%s\n", line);
    }
}

static int write_rules(const char *path, const nc_tune_rules *mine, int quick)
{
    /* Keep the rules for other node sizes that a file of this nodecoll and MPI already has. */
    nc_tune_rules *old = malloc(sizeof *old);
    char err[600], machine[400], date[64], tmp[600];
    int keep = old && nc_tune_load(path, nodecoll_version(), nodecoll_mpi_library(), old, err, sizeof err) == 0;
    time_t t = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S %z", localtime(&t));
    describe_machine(machine, sizeof machine);
    snprintf(tmp, sizeof tmp, "%s.%d.tmp", path, (int)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) {
        free(old);
        return -1;
    }
    fprintf(f, "# nodecoll tuning rules, written by nodecoll-tune%s (docs/tuning.md, \"Rules file\")\n",
            quick ? " --quick" : "");
    fprintf(f, "nodecoll-rules %d\nnodecoll %s\nmpi %s\nmachine %s\ndate %s\n", NC_TUNE_FORMAT, nodecoll_version(),
            nodecoll_mpi_library(), machine, date);
    fprintf(f, "# layout  ranks-per-node  [segment=bytes]  [segments=n]\n"
               "# levels  ranks-per-node  flat|list of package,numa,l3,core\n"
               "# collective  ranks-per-node  min-bytes  max-bytes  algorithm  [radix=n]  [chunk=bytes]\n");
    if (keep) write_rule_lines(f, old, node_size);
    write_rule_lines(f, mine, 0);
    int bad = ferror(f) | fclose(f);
    free(old);
    if (bad || rename(tmp, path)) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

static void make_parent_dir(const char *path)
{
    char dir[600];
    snprintf(dir, sizeof dir, "%s", path);
    for (char *s = dir + 1; *s; s++) {
        if (*s != '/') continue;
        *s = '\0';
        mkdir(dir, 0755);
        *s = '/';
    }
}

/* ---- the run ------------------------------------------------------------------------------ */

/* Every node rank's place, as nodecoll finds it when it groups a node (more than 2 ranks). */
static void find_places(void)
{
    if (node_size <= 2) return;
    nc_topo_loc me = nc_topo_locate((int)current_value("TOPO_PLACE"), node_rank, node_size);
    places = malloc(sizeof me * (size_t)node_size);
    if (!places) die("out of memory");
    MPI_Allgather(&me, (int)sizeof me, MPI_BYTE, places, (int)sizeof me, MPI_BYTE, node);
}

typedef struct run {
    phase levels, layout, algorithms[8];
} run;

static void plan_run(run *r, const options *o, const plan *p)
{
    memset(r, 0, sizeof *r);
    r->levels.n = levels_candidates(r->levels.c);
    r->layout.n = layout_candidates(o->quick, r->layout.c);
    for (int i = 0; i < o->ncolls; i++) {
        const tuned_coll *tc = &colls[o->which[i]];
        r->algorithms[i].n = algorithm_candidates(tc, o->quick, r->algorithms[i].c);
        add_points(&r->algorithms[i], tc->coll, p);
        add_points(&r->levels, tc->coll, p);
        if (tc->coll != NC_COLL_BARRIER) add_points(&r->layout, tc->coll, p);
    }
    if (!r->layout.npoints) r->layout.n = 1; /* (Barrier alone takes no rings) */
}

static double run_cost(const run *r, const options *o, const plan *p)
{
    double total = phase_cost(&r->levels, p) + phase_cost(&r->layout, p);
    for (int i = 0; i < o->ncolls; i++) total += phase_cost(&r->algorithms[i], p);
    return total;
}

static void print_candidates(const char *what, const phase *ph)
{
    say("  %s:", what);
    for (int j = 0; j < ph->n; j++) say(" %s%s", ph->c[j].label, j + 1 < ph->n ? "," : "\n");
}

static void say_levels_alike(const run *r)
{
    say("levels: flat, package, numa, l3 and their combinations group these %d ranks alike (%s): not measured\n",
        node_size, r->levels.c[0].label);
}

static void print_plan(const run *r, const options *o)
{
    say("candidates (the first is the default each must beat by %.0f%%):\n", (WIN_FACTOR - 1) * 100);
    if (r->levels.n > 1) print_candidates("levels", &r->levels);
    else say_levels_alike(r);
    if (r->layout.n > 1) print_candidates("layout", &r->layout);
    for (int i = 0; i < o->ncolls; i++) print_candidates(nc_coll_name(colls[o->which[i]].coll), &r->algorithms[i]);
}

/* Levels, then the layout under them: a winner becomes the process's setting, so every
 * later candidate is set up under it, and a line of the node's rules. */
static void tune_node_wide(run *r, const options *o, const plan *p, nc_tune_node *mine, progress_bar *bar)
{
    if (r->levels.n > 1) {
        int w = measure_node_wide(&r->levels, p, o, "levels", bar);
        if (w) {
            set("TOPO_LEVELS", r->levels.c[w].label);
            mine->levels_line = 1;
            mine->levels = r->levels.c[w].levels;
        }
    } else {
        say_levels_alike(r);
    }
    if (r->layout.n > 1) {
        int w = measure_node_wide(&r->layout, p, o, "layout", bar);
        const candidate *c = &r->layout.c[w];
        if (w) {
            set("SEGMENT_SIZE", c->set[0].value);
            set("SEGMENTS", c->set[1].value);
            mine->layout_line = 1;
            mine->segment_size = c->segment_size;
            mine->segments = c->segments;
        }
    }
}

int main(int argc, char **argv)
{
    static char tune_file[512];
    snprintf(tune_file, sizeof tune_file, "%s", getenv("NODECOLL_TUNE_FILE") ? getenv("NODECOLL_TUNE_FILE") : "");
    setenv("NODECOLL_TUNE_FILE", "", 1); /* measure the built-in choices, not older rules */
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    options o;
    if (parse_options(argc, argv, tune_file, &o)) {
        say("usage: mpirun -np N %s [--quick] [--dry-run] [--verbose] [--out FILE] [--coll barrier,bcast,...]\n"
            "  writes FILE (default: $NODECOLL_TUNE_FILE, else $XDG_CONFIG_HOME/nodecoll/rules or\n"
            "  ~/.config/nodecoll/rules, where nodecoll looks); --dry-run lists the candidates and the\n"
            "  predicted time, and measures nothing\n",
            argv[0]);
        MPI_Finalize();
        return 2;
    }
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &node_size);
    MPI_Comm_rank(node, &node_rank);
    int sizes_agree = node_size, min_size;
    MPI_Allreduce(&sizes_agree, &min_size, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &sizes_agree, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (min_size != sizes_agree) die("the nodes hold different numbers of ranks: tune with as many on every node");
    if (node_size < 2) die("one rank per node: nodecoll has nothing to tune (run with the ranks per node you use)");
    find_places();

    plan p = {.rounds = o.quick ? 5 : 11, .target = o.quick ? 0.002 : 0.01};
    size_t largest = o.quick ? (2u << 20) : (8u << 20);
    for (size_t s = 8; s <= largest && p.nsizes < MAX_SIZES; s *= o.quick ? 16 : 4) p.sizes[p.nsizes++] = s;
    sbuf = malloc(largest);
    rbuf = malloc(largest);
    run *r = malloc(sizeof *r);
    nc_tune_rules *rules = calloc(1, sizeof *rules);
    if (!sbuf || !rbuf || !r || !rules) die("out of memory");
    memset(sbuf, 1, largest);
    memset(rbuf, 0, largest);
    p.bandwidth = copy_bandwidth(largest);
    measure_overheads(&p);
    plan_run(r, &o, &p);
    progress_bar bar = {0, run_cost(r, &o, &p), now()};
    say("nodecoll-tune%s: %d ranks per node, %d sizes from 8 B to %zu B, about %.0f s\n", o.quick ? " --quick" : "",
        node_size, p.nsizes, p.sizes[p.nsizes - 1], bar.total);
    if (o.dry_run) print_plan(r, &o);

    nc_tune_node mine = {.ranks = node_size};
    if (!o.dry_run) tune_node_wide(r, &o, &p, &mine, &bar);
    for (int i = 0; i < o.ncolls && !o.dry_run; i++) {
        winner w[MAX_SIZES];
        measure_algorithms(&r->algorithms[i], &p, &o, w, &bar);
        if (add_rules(&colls[o.which[i]], w, r->algorithms[i].npoints, rules)) die("too many rules");
    }
    if (mine.layout_line || mine.levels_line) rules->node[rules->nodes++] = mine;
    int rc = 0;
    if (world_rank == 0 && !o.dry_run) {
        progress(&bar, 0);
        make_parent_dir(o.out);
        if (write_rules(o.out, rules, o.quick)) {
            fprintf(stderr, "nodecoll-tune: cannot write %s: %s\n", o.out, strerror(errno));
            rc = 1;
        } else {
            fprintf(stderr,
                    "nodecoll-tune: %d rules%s for %d ranks per node in %s (%.0f s); nodecoll-info lists them\n",
                    rules->count, rules->nodes ? " and node-wide lines" : "", node_size, o.out,
                    now() - bar.started);
        }
    }
    free(rules);
    free(r);
    free(places);
    free(sbuf);
    free(rbuf);
    MPI_Comm_free(&node);
    MPI_Finalize();
    return rc;
}
