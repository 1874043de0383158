/* nodecoll-tune: measures, on the machine and with the ranks a user will run, each tunable
 * collective's candidate algorithms (and, in the full mode, tree radices) over message sizes,
 * and writes a rules file (core/tune.h) that nodecoll then consults before its built-in
 * rows.  Run it under mpirun like the application:
 *
 *   mpirun -np 64 nodecoll-tune [--quick] [--out FILE] [--coll LIST]
 *
 * Each candidate runs on its own duplicate of the node's communicator, set up with the
 * setting that forces it; the candidates of one message size are measured in turns, round
 * after round (the benchmark's interleaved method: a change of the machine's load hits them
 * alike), and the median of the rounds decides.  A candidate that the registry would not run
 * there (no single copy, not a power of two, ...) is seen in nodecoll's counters and left
 * out.  Sizes between two measured ones go to the nearer (geometrically).  Rules already in
 * the file for other node sizes, from this nodecoll and MPI, are kept. */
#include <errno.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "nodecoll.h"
#include "core/config.h"
#include "core/topo.h"
#include "core/tune.h"

enum { MAX_SIZES = 16, MAX_CANDS = 16, MAX_ROUNDS = 31 };

typedef struct candidate {
    const char *alg;   /* the NODECOLL_<COLL>_ALG value */
    const char *count; /* the counter name that proves it ran */
    int radix;         /* 0: the default */
    MPI_Comm comm;
    int valid, k; /* calls per measurement: its own, so that each takes about the target time */
    double t[MAX_ROUNDS];
} candidate;

typedef struct tuned_coll {
    nc_coll_id coll;
    const char *alg_setting;      /* NODECOLL_..._ALG */
    const char *radix_settings[2]; /* the radix settings a candidate's radix sets */
    const char *algs[6], *counts[6];
} tuned_coll;

static const tuned_coll colls[] = {
    {NC_COLL_BARRIER, "BARRIER_ALG", {"BARRIER_FANIN", "BARRIER_FANOUT"},
     {"flat", "tree", "dissemination"}, {"flat", "tree", "dissemination"}},
    {NC_COLL_BCAST, "BCAST_ALG", {"BCAST_RADIX", NULL}, {"shm", "cma"}, {"shm", "cma"}},
    {NC_COLL_REDUCE, "REDUCE_ALG", {"REDUCE_FANIN", NULL}, {"tree", "flat", "cma", "shm"},
     {"tree", "flat", "cma", "shm"}},
    {NC_COLL_ALLREDUCE, "REDUCE_ALG", {"REDUCE_FANIN", NULL}, {"flat", "tree", "cma", "shm", "recursive_doubling"},
     {"flat", "tree", "cma", "shm", "recursive-doubling"}},
};

typedef struct options {
    int quick, verbose, ncolls, which[8];
    double bandwidth; /* memcpy's, for the prediction */
    const char *out;
    char out_buf[512];
} options;

static int world_rank, node_size, node_rank;
static MPI_Comm node;

static void die(const char *what)
{
    if (world_rank == 0) fprintf(stderr, "nodecoll-tune: %s\n", what);
    MPI_Abort(MPI_COMM_WORLD, 2);
}

static void set(const char *name, const char *value)
{
    char err[300];
    if (nc_config_set(name, value, err, sizeof err)) die(err);
}

/* The process's own value of a setting (as the environment gave it), to restore. */
static void current(const char *name, char *out, size_t len)
{
    char full[64];
    snprintf(full, sizeof full, "NODECOLL_%s", name);
    for (int i = 0; i < nc_setting_count(); i++)
        if (!strcmp(nc_setting(i)->env_name, full))
            nc_setting_format(nc_setting(i), nc_config_value(nc_config_get(), nc_setting(i)), out, len);
}

/* Where the rules go: --out, else NODECOLL_TUNE_FILE as the job was given it, else the
 * default location nodecoll reads. */
static int parse_options(int argc, char **argv, const char *tune_file, options *o)
{
    o->quick = o->verbose = 0;
    o->out = tune_file && *tune_file ? tune_file : nc_tune_default_path(o->out_buf, sizeof o->out_buf);
    o->ncolls = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) {
            o->quick = 1;
        } else if (!strcmp(argv[i], "--verbose")) {
            o->verbose = 1;
        } else if (!strcmp(argv[i], "--out") && i + 1 < argc) {
            o->out = argv[++i];
        } else if (!strcmp(argv[i], "--coll") && i + 1 < argc) {
            char *list = argv[++i], *save = NULL;
            for (char *w = strtok_r(list, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
                int found = -1;
                for (int k = 0; k < (int)(sizeof colls / sizeof colls[0]); k++)
                    if (!strcmp(nc_coll_name(colls[k].coll), w)) found = k;
                if (found < 0 || o->ncolls == 8) return -1;
                o->which[o->ncolls++] = found;
            }
        } else {
            return -1;
        }
    }
    if (!o->ncolls)
        for (int k = 0; k < (int)(sizeof colls / sizeof colls[0]); k++) o->which[o->ncolls++] = k;
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

/* ---- the plan and its progress ----------------------------------------------------------- */

typedef struct plan {
    size_t sizes[MAX_SIZES];
    int nsizes, rounds;
    double target; /* seconds per measurement */
} plan;

/* The registry's own choice first ("auto": its algorithm is read from the counters at each
 * size), then every algorithm forced, and in the full mode the trees' radices. */
static int candidates_of(const tuned_coll *tc, const plan *p, int quick, candidate *out)
{
    int n = 0;
    out[n++] = (candidate){"auto", NULL, 0, MPI_COMM_NULL, 1, 1, {0}};
    for (int a = 0; a < 6 && tc->algs[a]; a++) {
        out[n++] = (candidate){tc->algs[a], tc->counts[a], 0, MPI_COMM_NULL, 1, 1, {0}};
        /* The full mode also tries the tree's radix where the node has ranks enough. */
        int tree = !strcmp(tc->algs[a], "tree") || (tc->coll == NC_COLL_BCAST && !strcmp(tc->algs[a], "shm"));
        for (int radix = 2; !quick && tree && radix <= 16 && radix < node_size && n < MAX_CANDS; radix *= 2)
            out[n++] = (candidate){tc->algs[a], tc->counts[a], radix, MPI_COMM_NULL, 1, 1, {0}};
    }
    (void)p;
    return n;
}

/* Seconds one measurement of `bytes` takes: the target, or a few calls of a large message
 * (a call moves the message about four times at memcpy speed, `bandwidth` bytes/s). */
static double point_seconds(const plan *p, size_t bytes, double bandwidth)
{
    double call = 4.0 * (double)bytes / bandwidth + 2e-6;
    return (p->target > 2 * call ? p->target : 2 * call) * 1.2;
}

static double predicted_seconds(const options *o, const plan *p, double bandwidth)
{
    double total = 0;
    candidate c[MAX_CANDS];
    for (int i = 0; i < o->ncolls; i++) {
        const tuned_coll *tc = &colls[o->which[i]];
        int n = candidates_of(tc, p, o->quick, c);
        /* per point: the rounds, a probe and a calibration per candidate; a set-up per candidate */
        for (int s = 0; s < (tc->coll == NC_COLL_BARRIER ? 1 : p->nsizes); s++)
            total += n * (p->rounds + 2) * point_seconds(p, tc->coll == NC_COLL_BARRIER ? 0 : p->sizes[s], bandwidth);
        total += n * 0.02;
    }
    return total;
}

/* memcpy's bytes per second on a message of `bytes` (the slowest rank's). */
static double copy_bandwidth(size_t bytes)
{
    memcpy(rbuf, sbuf, bytes);
    double t0 = MPI_Wtime();
    for (int i = 0; i < 3; i++) memcpy(rbuf, sbuf, bytes);
    double bw = 3.0 * (double)bytes / (MPI_Wtime() - t0 + 1e-9), slowest;
    PMPI_Allreduce(&bw, &slowest, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    return slowest;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void progress(double done, double total, double started)
{
    if (world_rank || !isatty(2)) return;
    int width = 40, filled = total > 0 ? (int)(width * (done / total < 1 ? done / total : 1)) : width;
    double elapsed = now() - started, left = done > 0 ? elapsed * (total - done) / done : total;
    fprintf(stderr, "\r[%.*s%*s] %3.0f%%  %4.0f s left ", filled, "########################################",
            width - filled, "", 100 * done / total, left > 0 ? left : 0);
    if (done >= total) fputc('\n', stderr);
}

/* ---- measuring one collective ---------------------------------------------------------- */

typedef struct winner {
    size_t size;
    const char *count; /* the winner's counter name; NULL: none ran */
    int radix;
} winner;

static void set_candidate(const tuned_coll *tc, const candidate *c, char saved[3][32])
{
    set(tc->alg_setting, c->alg);
    char radix[16];
    for (int s = 0; s < 2 && tc->radix_settings[s]; s++) {
        snprintf(radix, sizeof radix, "%d", c->radix);
        set(tc->radix_settings[s], c->radix ? radix : saved[s + 1]);
    }
}

/* Measures every candidate at every size; winners[i] for sizes[i]. */
static void measure(const tuned_coll *tc, const plan *p, const options *o, winner *winners, double *done,
                    double total, double started)
{
    candidate c[MAX_CANDS];
    int n = candidates_of(tc, p, o->quick, c);
    char saved[3][32];
    current(tc->alg_setting, saved[0], sizeof saved[0]);
    for (int s = 0; s < 2 && tc->radix_settings[s]; s++) current(tc->radix_settings[s], saved[s + 1], 32);
    for (int j = 0; j < n; j++) { /* a communicator set up under each candidate's settings */
        set_candidate(tc, &c[j], saved);
        MPI_Comm_dup(node, &c[j].comm);
        MPI_Barrier(c[j].comm);
    }
    set(tc->alg_setting, saved[0]);
    for (int s = 0; s < 2 && tc->radix_settings[s]; s++) set(tc->radix_settings[s], saved[s + 1]);
    int nsizes = tc->coll == NC_COLL_BARRIER ? 1 : p->nsizes;
    for (int i = 0; i < nsizes; i++) {
        size_t bytes = tc->coll == NC_COLL_BARRIER ? 0 : p->sizes[i];
        for (int j = 0; j < n; j++) {
            nodecoll_stat_reset();
            call(tc->coll, c[j].comm, bytes);
            if (!strcmp(c[j].alg, "auto")) { /* what the registry chose: one of the candidates' */
                c[j].count = NULL;
                for (int a = 1; a < n; a++)
                    if (nodecoll_stat_calls(nc_coll_name(tc->coll), c[a].count) > 0) c[j].count = c[a].count;
            }
            int ran = c[j].count && nodecoll_stat_calls(nc_coll_name(tc->coll), c[j].count) > 0, all;
            PMPI_Allreduce(&ran, &all, 1, MPI_INT, MPI_MIN, node);
            c[j].valid = all;
            if (!all) continue;
            /* (the slowest rank's time: every rank makes the same number of calls) */
            double per_call = timed(tc->coll, c[j].comm, bytes, 3);
            c[j].k = per_call > 0 ? (int)(p->target / per_call) : 1000;
            c[j].k = c[j].k < 1 ? 1 : c[j].k > 100000 ? 100000 : c[j].k;
        }
        for (int r = 0; r < p->rounds; r++) {
            for (int q = 0; q < n; q++) {
                int j = (q + r) % n; /* turns rotate: no candidate always follows the same one */
                if (c[j].valid) c[j].t[r] = timed(tc->coll, c[j].comm, bytes, c[j].k);
            }
        }
        int best = -1;
        double best_t = 0, auto_t = c[0].valid ? median(c[0].t, p->rounds) : 0;
        if (o->verbose && world_rank == 0) fprintf(stderr, "%-10s %9zu B", nc_coll_name(tc->coll), bytes);
        for (int j = 0; j < n; j++) {
            if (!c[j].valid) continue;
            double m = median(c[j].t, p->rounds);
            if (best < 0 || m < best_t) best = j, best_t = m;
            if (o->verbose && world_rank == 0)
                fprintf(stderr, " %s%s%s%.0d %.3f us", j ? "" : "auto=", c[j].count, c[j].radix ? "/" : "", c[j].radix,
                        m * 1e6);
        }
        /* The registry's choice stays unless another is 5% faster: noise must not make rules. */
        if (c[0].valid && best > 0 && best_t > auto_t / 1.05) best = 0;
        if (o->verbose && world_rank == 0) fprintf(stderr, "  -> %s\n", best >= 0 ? c[best].count : "none");
        winners[i] = (winner){bytes, best >= 0 ? c[best].count : NULL, best >= 0 ? c[best].radix : 0};
        *done += n * (p->rounds + 2) * point_seconds(p, bytes, o->bandwidth);
        progress(*done, total, started);
    }
    for (int j = 0; j < n; j++) MPI_Comm_free(&c[j].comm);
    *done += n * 0.02;
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
            last->radix == w[i].radix && last->max_bytes + 1 == lo) {
            last->max_bytes = hi; /* the same winner as the size below: one rule */
            continue;
        }
        if (out->count == NC_TUNE_MAX_RULES) return -1;
        out->rule[out->count++] = (nc_tune_rule){(uint8_t)tc->coll, (uint8_t)alg, 0, node_size, w[i].radix, lo, hi};
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

static int write_rules(const char *path, const nc_tune_rules *mine, int quick)
{
    /* Keep the rules for other node sizes that a file of this nodecoll and MPI already has. */
    nc_tune_rules *old = malloc(sizeof *old);
    char err[600], machine[400], date[64], line[200], tmp[600];
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
    fprintf(f, "# collective  ranks-per-node  min-bytes  max-bytes  algorithm  [radix=n]\n");
    for (int i = 0; keep && i < old->count; i++) {
        if (old->rule[i].ranks == node_size) continue;
        nc_tune_format_rule(&old->rule[i], line, sizeof line);
        fprintf(f, "%s\n", line);
    }
    for (int i = 0; i < mine->count; i++) {
        nc_tune_format_rule(&mine->rule[i], line, sizeof line);
        fprintf(f, "%s\n", line);
    }
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

int main(int argc, char **argv)
{
    static char tune_file[512];
    snprintf(tune_file, sizeof tune_file, "%s", getenv("NODECOLL_TUNE_FILE") ? getenv("NODECOLL_TUNE_FILE") : "");
    setenv("NODECOLL_TUNE_FILE", "", 1); /* measure the built-in algorithms, not older rules */
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    options o;
    if (parse_options(argc, argv, tune_file, &o)) {
        if (world_rank == 0)
            fprintf(stderr, "usage: mpirun -np N %s [--quick] [--out FILE] [--coll barrier,bcast,reduce,allreduce]\n"
                            "  writes FILE (default: $NODECOLL_TUNE_FILE, else $XDG_CONFIG_HOME/nodecoll/rules or\n"
                            "  ~/.config/nodecoll/rules, where nodecoll looks)\n",
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

    plan p = {.rounds = o.quick ? 5 : 11, .target = o.quick ? 0.002 : 0.01};
    size_t largest = o.quick ? (2u << 20) : (8u << 20);
    for (size_t s = 8; s <= largest && p.nsizes < MAX_SIZES; s *= o.quick ? 16 : 4) p.sizes[p.nsizes++] = s;
    sbuf = malloc(largest);
    rbuf = malloc(largest);
    if (!sbuf || !rbuf) die("out of memory");
    memset(sbuf, 1, largest);
    memset(rbuf, 0, largest);
    o.bandwidth = copy_bandwidth(largest);
    double total = predicted_seconds(&o, &p, o.bandwidth), done = 0, started = now();
    if (world_rank == 0)
        fprintf(stderr, "nodecoll-tune%s: %d ranks per node, %d sizes from 8 B to %zu B, about %.0f s\n",
                o.quick ? " --quick" : "", node_size, p.nsizes, largest, total);

    nc_tune_rules *rules = calloc(1, sizeof *rules);
    if (!rules) die("out of memory");
    for (int i = 0; i < o.ncolls; i++) {
        winner w[MAX_SIZES];
        const tuned_coll *tc = &colls[o.which[i]];
        measure(tc, &p, &o, w, &done, total, started);
        if (add_rules(tc, w, tc->coll == NC_COLL_BARRIER ? 1 : p.nsizes, rules)) die("too many rules");
    }
    progress(total, total, started);
    int rc = 0;
    if (world_rank == 0) {
        make_parent_dir(o.out);
        if (write_rules(o.out, rules, o.quick)) {
            fprintf(stderr, "nodecoll-tune: cannot write %s: %s\n", o.out, strerror(errno));
            rc = 1;
        } else {
            fprintf(stderr, "nodecoll-tune: %d rules for %d ranks per node in %s (%.0f s); nodecoll-info lists them\n",
                    rules->count, node_size, o.out, now() - started);
        }
    }
    free(rules);
    free(sbuf);
    free(rbuf);
    MPI_Comm_free(&node);
    MPI_Finalize();
    return rc;
}
