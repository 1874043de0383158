/*
 * Command line.  Parsed before MPI_Init because --ranks-per-node and --set become
 * environment variables, and the library reads those when a communicator is first used;
 * errors are only reported after MPI_Init, by rank 0, so one message appears, not P.
 */
#include "bench.h"

#include <ctype.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static const char *root_names[ROOT_PATTERNS] = {"0", "last", "rotate"};

/* "-" for collectives without a root. */
const char *root_pattern_name(int pattern)
{
    return pattern < 0 ? "-" : root_names[pattern];
}

/* Returns -1 so that callers can `return fail(...)`. */
static int fail(struct options *o, const char *fmt, ...)
{
    if (o->error[0]) return -1; /* the first problem is the one worth reading */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(o->error, sizeof o->error, fmt, ap);
    va_end(ap);
    return -1;
}

/* "64", "4K", "16M", "1G" (binary multiples).  Returns 0 on a malformed number. */
static size_t parse_size(const char *s, const char **end)
{
    char *e;
    unsigned long long v = strtoull(s, &e, 10);
    if (e == s) return 0;
    switch (toupper((unsigned char)*e)) {
    case 'K': v <<= 10; e++; break;
    case 'M': v <<= 20; e++; break;
    case 'G': v <<= 30; e++; break;
    default: break;
    }
    if (*e == 'B' || *e == 'b') e++;
    *end = e;
    return (size_t)v;
}

static int add_size(struct options *o, size_t v)
{
    if (o->nsizes == BENCH_MAX_SIZES) return fail(o, "--sizes: more than %d sizes", BENCH_MAX_SIZES);
    o->sizes[o->nsizes++] = v;
    return 0;
}

/* MIN:MAX[:FACTOR] (a geometric series, factor 2 by default) or a comma list. */
static int parse_sizes(struct options *o, const char *spec)
{
    const char *p = spec, *e;
    size_t first = parse_size(p, &e);
    o->nsizes = 0;
    if (first && *e == ':') {
        size_t last = parse_size(e + 1, &e), factor = 2;
        if (*e == ':') factor = parse_size(e + 1, &e);
        if (!last || *e || last < first || factor < 2)
            return fail(o, "--sizes '%s': expected MIN:MAX[:FACTOR]", spec);
        for (size_t v = first; v <= last; v *= factor)
            if (add_size(o, v)) return -1;
        return 0;
    }
    for (;;) {
        size_t v = parse_size(p, &e);
        if (!v || (*e && *e != ',')) return fail(o, "--sizes '%s': bad size near '%s'", spec, p);
        if (add_size(o, v)) return -1;
        if (!*e) return 0;
        p = e + 1;
    }
}

/* Calls item() on each comma-separated word of list. */
static int for_each_word(struct options *o, const char *list,
                         int (*item)(struct options *, const char *))
{
    char word[64];
    const char *p = list;
    while (*p) {
        size_t n = strcspn(p, ",");
        if (n == 0 || n >= sizeof word) return fail(o, "bad list '%s'", list);
        memcpy(word, p, n);
        word[n] = 0;
        if (item(o, word)) return -1;
        p += n + (p[n] == ',');
    }
    return 0;
}

static int coll_item(struct options *o, const char *w)
{
    for (int i = 0; i < coll_count(); i++) {
        unsigned f = coll_at(i)->flags;
        if (!strcmp(w, "all") || (!strcmp(w, "default") && (f & COLL_DEFAULT)))
            o->colls |= 1ul << i;
    }
    if (!strcmp(w, "all") || !strcmp(w, "default")) return 0;
    int i = coll_find(w);
    if (i < 0) return fail(o, "--coll: unknown collective '%s' (see --help)", w);
    o->colls |= 1ul << i;
    return 0;
}

static int dtype_item(struct options *o, const char *w)
{
    int is_auto = !strcmp(w, "auto");
    const struct dtype *dt = is_auto ? NULL : dtype_find(w);
    if (!dt && !is_auto) return fail(o, "--dtype: unknown datatype '%s'", w);
    if (o->ndtypes == BENCH_MAX_SIZES) return fail(o, "--dtype: too many datatypes");
    o->dtypes[o->ndtypes++] = dt;
    return 0;
}

static int root_item(struct options *o, const char *w)
{
    if (o->nroots == ROOT_PATTERNS) return fail(o, "--root: at most %d patterns", ROOT_PATTERNS);
    for (int i = 0; i < ROOT_PATTERNS; i++)
        if (!strcmp(w, root_names[i])) {
            o->roots[o->nroots++] = i;
            return 0;
        }
    return fail(o, "--root: expected 0, last or rotate, not '%s'", w);
}

static int mode_item(struct options *o, const char *w)
{
    int m = mode_find(w);
    if (m < 0) return fail(o, "--mode: expected blocking, nonblocking or persistent, not '%s'", w);
    for (int i = 0; i < o->nmodes; i++)
        if (o->modes[i] == (enum mode)m) return 0;
    o->modes[o->nmodes++] = (enum mode)m;
    return 0;
}

static long parse_long(struct options *o, const char *name, const char *s, long lo, long hi)
{
    char *e;
    long v = strtol(s, &e, 10);
    if (*s == 0 || *e || v < lo || v > hi) fail(o, "%s: expected an integer in [%ld, %ld]", name, lo, hi);
    return v;
}

static double parse_seconds(struct options *o, const char *s)
{
    char *e;
    double v = strtod(s, &e);
    if (*s == 0 || *e || !(v > 0)) fail(o, "--time-budget: expected seconds > 0, not '%s'", s);
    return v;
}

static int set_item(struct options *o, const char *arg)
{
    if (!strchr(arg, '=') || arg[0] == '=') return fail(o, "--set: expected NAME=VALUE, not '%s'", arg);
    if (o->nsets == BENCH_MAX_SETS) return fail(o, "--set: at most %d settings", BENCH_MAX_SETS);
    o->sets[o->nsets++] = arg;
    return 0;
}

enum { OPT_COLL = 256, OPT_SIZES, OPT_DTYPE, OPT_OP, OPT_ROOT, OPT_RPN, OPT_SET, OPT_ITERS,
       OPT_WARMUP, OPT_BUDGET, OPT_CHECK, OPT_OFFCACHE, OPT_JSON, OPT_CSV, OPT_QUIET, OPT_MODE,
       OPT_OVERLAP };

static const struct option longopts[] = {
    {"coll", required_argument, 0, OPT_COLL},       {"sizes", required_argument, 0, OPT_SIZES},
    {"dtype", required_argument, 0, OPT_DTYPE},     {"op", required_argument, 0, OPT_OP},
    {"root", required_argument, 0, OPT_ROOT},       {"ranks-per-node", required_argument, 0, OPT_RPN},
    {"set", required_argument, 0, OPT_SET},         {"iters", required_argument, 0, OPT_ITERS},
    {"warmup", required_argument, 0, OPT_WARMUP},   {"time-budget", required_argument, 0, OPT_BUDGET},
    {"check", no_argument, 0, OPT_CHECK},           {"off-cache", no_argument, 0, OPT_OFFCACHE},
    {"json", required_argument, 0, OPT_JSON},       {"csv", required_argument, 0, OPT_CSV},
    {"quiet", no_argument, 0, OPT_QUIET},           {"help", no_argument, 0, 'h'},
    {"mode", required_argument, 0, OPT_MODE},       {"overlap", no_argument, 0, OPT_OVERLAP},
    {0, 0, 0, 0},
};

static void apply(struct options *o, int c, const char *arg)
{
    switch (c) {
    case OPT_COLL: o->colls = 0; for_each_word(o, arg, coll_item); break;
    case OPT_SIZES: parse_sizes(o, arg); break;
    case OPT_DTYPE: o->ndtypes = 0; for_each_word(o, arg, dtype_item); break;
    case OPT_OP:
        if (!(o->op = op_find(arg))) fail(o, "--op: unknown operation '%s'", arg);
        break;
    case OPT_ROOT: o->nroots = 0; for_each_word(o, arg, root_item); break;
    case OPT_RPN: o->ranks_per_node = (int)parse_long(o, "--ranks-per-node", arg, 1, 1 << 20); break;
    case OPT_SET: set_item(o, arg); break;
    case OPT_ITERS: o->iters = (int)parse_long(o, "--iters", arg, 1, 1000000); break;
    case OPT_WARMUP: o->warmup = (int)parse_long(o, "--warmup", arg, 0, 1000000); break;
    case OPT_BUDGET: o->time_budget = parse_seconds(o, arg); break;
    case OPT_CHECK: o->check = 1; break;
    case OPT_OFFCACHE: o->off_cache = 1; break;
    case OPT_JSON: o->json = arg; break;
    case OPT_CSV: o->csv = arg; break;
    case OPT_QUIET: o->quiet = 1; break;
    case OPT_MODE: o->nmodes = 0; for_each_word(o, arg, mode_item); break;
    case OPT_OVERLAP: o->overlap = 1; break;
    case 'h': o->help = 1; break;
    default: fail(o, "unknown option (see --help)"); break;
    }
}

static void set_defaults(struct options *o)
{
    memset(o, 0, sizeof *o);
    for_each_word(o, "default", coll_item);
    parse_sizes(o, "8:16M");
    o->dtypes[o->ndtypes++] = NULL; /* auto */
    o->op = op_find("sum");
    o->roots[o->nroots++] = ROOT_ZERO;
    o->iters = 100;
    o->warmup = 5;
    o->time_budget = 0.5;
}

/* A reduction collective needs an operation its datatypes support. */
static int check_combinations(struct options *o)
{
    for (int d = 0; d < o->ndtypes; d++) {
        if (!o->dtypes[d] || op_fits(o->op, o->dtypes[d])) continue;
        for (int i = 0; i < coll_count(); i++)
            if ((o->colls >> i & 1) && (coll_at(i)->flags & COLL_REDUCES))
                return fail(o, "--op %s is not defined on --dtype %s (needed by %s)", o->op->name,
                            o->dtypes[d]->name, coll_at(i)->name);
    }
    return 0;
}

int options_want_mode(const struct options *o, enum mode m)
{
    for (int i = 0; i < o->nmodes; i++)
        if (o->modes[i] == m) return 1;
    return 0;
}

/* Without --mode: blocking, or nonblocking for --overlap (a blocking call has nothing to
 * overlap with). */
static int check_modes(struct options *o)
{
    if (!o->nmodes) o->modes[o->nmodes++] = o->overlap ? MODE_NONBLOCKING : MODE_BLOCKING;
    if (o->overlap && options_want_mode(o, MODE_BLOCKING))
        return fail(o, "--overlap: a blocking call cannot overlap; use --mode nonblocking or persistent");
    /* A persistent request is bound to its buffers: it cannot rotate through a pool. */
    if (o->off_cache && options_want_mode(o, MODE_PERSISTENT))
        return fail(o, "--off-cache: persistent requests are bound to one buffer set; not with --mode persistent");
    return 0;
}

void options_parse(int argc, char **argv, struct options *o)
{
    set_defaults(o);
    opterr = 0; /* our own message, printed once by rank 0 */
    int c;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) apply(o, c, optarg);
    if (optind < argc) fail(o, "unexpected argument '%s'", argv[optind]);
    if (!o->colls) fail(o, "--coll: nothing selected");
    check_combinations(o);
    check_modes(o);
}

/* NODECOLL_FOO=1 or foo=1: the prefix is optional and the name case-insensitive, so the
 * names printed by nodecoll-info can be pasted either way. */
static int export_setting(const char *arg)
{
    char name[128] = "NODECOLL_";
    size_t len = strcspn(arg, "=");
    size_t skip = strncasecmp(arg, "NODECOLL_", 9) ? 0 : 9;
    if (len - skip + 10 > sizeof name) return -1;
    for (size_t i = skip; i < len; i++) name[9 + i - skip] = (char)toupper((unsigned char)arg[i]);
    name[9 + len - skip] = 0;
    return setenv(name, arg + len + 1, 1);
}

int options_export_env(struct options *o)
{
    char v[32];
    if (o->ranks_per_node) {
        snprintf(v, sizeof v, "%d", o->ranks_per_node);
        if (setenv("NODECOLL_RANKS_PER_NODE", v, 1)) return -1;
    }
    for (int i = 0; i < o->nsets; i++)
        if (export_setting(o->sets[i])) {
            fail(o, "--set %s: name too long", o->sets[i]);
            return -1;
        }
    return 0;
}

void options_usage(FILE *out)
{
    fputs(
"usage: mpirun -np P nodecoll-bench [options]\n"
"\n"
"Times every selected collective through nodecoll (MPI_*) and through the host MPI\n"
"(PMPI_*), alternating the two round by round, and sets them next to this machine's\n"
"limits (memcpy bandwidth, cache-line round trip).\n"
"\n"
"What to measure:\n"
"  --coll LIST         collectives, comma separated, or 'all' / 'default'\n"
"                      (default: barrier,bcast,reduce,allreduce,gather,scatter,allgather,\n"
"                      alltoall,reduce_scatter_block,allgatherv_skewed,alltoallw_ring and\n"
"                      the neighbourhood patterns neighbor_alltoallv_stencil,\n"
"                      neighbor_alltoallv_graph; also gatherv,scatterv,allgatherv,\n"
"                      alltoallv,alltoallw,reduce_scatter,scan,exscan,\n"
"                      neighbor_alltoallw_stencil)\n"
"  --sizes SPEC        message sizes in bytes: MIN:MAX[:FACTOR] (a geometric series,\n"
"                      factor 2 unless given) or a comma list; K, M, G suffixes\n"
"                      (default 8:16M).  The size is the block one rank sends to or\n"
"                      receives from one peer; see docs/benchmark.md\n"
"  --dtype LIST        byte, uint8, int, int64, float, double, or auto (default): byte\n"
"                      for data movement, double for reductions (uint8 for bitwise ops)\n"
"  --op OP             sum (default), prod, max, min, band, bor, bxor\n"
"  --root LIST         root of rooted collectives: 0 (default), last, rotate (moves to\n"
"                      the next rank on every call)\n"
"  --mode LIST         call forms, comma separated: blocking (default); nonblocking\n"
"                      (MPI_I<coll> + MPI_Wait); persistent (MPI_<Coll>_init once per\n"
"                      size, then MPI_Start + MPI_Wait per call)\n"
"  --overlap           how much of a posted call hides behind computation (OSU style):\n"
"                      post + compute + wait against post + wait; implies --mode\n"
"                      nonblocking unless --mode names nonblocking and/or persistent\n"
"\n"
"nodecoll settings (exported before MPI_Init, in every rank):\n"
"  --ranks-per-node K  sets NODECOLL_RANKS_PER_NODE=K: emulated nodes of K ranks\n"
"  --set NAME=VALUE    sets NODECOLL_NAME=VALUE (prefix optional); repeatable\n"
"\n"
"How long:\n"
"  --iters N           at most N timed rounds per size (default 100)\n"
"  --warmup N          untimed calls of each variant before timing (default 5)\n"
"  --time-budget SEC   seconds per size, warm-up included; fewer rounds are run when\n"
"                      a size would take longer, but never fewer than 5 (default 0.5)\n"
"\n"
"How:\n"
"  --check             after each round, call both variants once more on fresh data and\n"
"                      compare the results byte for byte (exit status 1 on a mismatch)\n"
"  --off-cache         rotate through a buffer pool twice the size of the last-level\n"
"                      cache, so no call finds its buffers in cache\n"
"\n"
"Output (rank 0):\n"
"  --json FILE         all results, limits and settings as JSON (input of plot.py)\n"
"  --csv FILE          one line per measured point\n"
"  --quiet             no table on stdout and no progress on stderr\n"
"  -h, --help          this text\n"
"\n"
"Latencies are in microseconds: per round the slowest rank, median over rounds.\n"
"'x host' is host time / nodecoll time; '% bound' is lower bound / nodecoll time.\n",
        out);
}
