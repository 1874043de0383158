/*
 * nodecoll-bench driver: options -> environment -> MPI_Init -> limits -> sweep -> reports.
 * Usage and method: docs/benchmark.md, or --help.
 */
#include "bench.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PROGRESS_EVERY_S 5.0
/* --mode persistent under an MPI without persistent collectives: the conventional status
 * of a skipped test, so that CTest (SKIP_RETURN_CODE) and scripts can tell it apart. */
#define EXIT_UNSUPPORTED 77

struct sweep {
    struct point *pts;
    int n;
};

static void add_point(struct sweep *s, const struct coll *c, const struct dtype *dt, int root,
                      size_t bytes, enum mode mode)
{
    size_t count = bytes ? (bytes + dt->size - 1) / dt->size : 0;
    struct point p = {c, dt, root, count * dt->size, (int)count, mode};
    const struct point *prev = s->n ? &s->pts[s->n - 1] : NULL;
    if (prev && prev->coll == c && prev->dt == dt && prev->root_pattern == root && prev->count == p.count &&
        prev->mode == mode)
        return; /* sizes below the datatype size round up to the same point */
    s->pts = realloc(s->pts, sizeof p * (size_t)(s->n + 1));
    s->pts[s->n++] = p;
}

static void add_sizes(struct sweep *s, const struct options *o, const struct coll *c,
                      const struct dtype *dt, int root, enum mode mode)
{
    if (c->flags & COLL_SIZELESS) {
        add_point(s, c, dt, root, 0, mode);
        return;
    }
    for (int i = 0; i < o->nsizes; i++) add_point(s, c, dt, root, o->sizes[i], mode);
}

/* The points of one mode in the order they run: collective, datatype, root pattern, size. */
static void plan_mode(struct sweep *s, const struct options *o, enum mode mode)
{
    for (int i = 0; i < coll_count(); i++) {
        const struct coll *c = coll_at(i);
        if (!(o->colls >> i & 1)) continue;
        /* barrier moves no data: one datatype is enough */
        int ndtypes = c->flags & COLL_SIZELESS ? 1 : o->ndtypes;
        for (int d = 0; d < ndtypes; d++) {
            const struct dtype *dt = o->dtypes[d] ? o->dtypes[d] : dtype_auto(c, o->op);
            if ((c->flags & COLL_REDUCES) && !op_fits(o->op, dt)) continue;
            if (!(c->flags & COLL_ROOTED)) add_sizes(s, o, c, dt, -1, mode);
            for (int r = 0; (c->flags & COLL_ROOTED) && r < o->nroots; r++)
                add_sizes(s, o, c, dt, o->roots[r], mode);
        }
    }
}

/* Mode by mode, in the order of --mode, so that each mode's results form one table. */
static struct sweep plan_sweep(const struct options *o)
{
    struct sweep s = {NULL, 0};
    for (int m = 0; m < o->nmodes; m++) plan_mode(&s, o, o->modes[m]);
    return s;
}

/* ---- progress on stderr (rank 0) --------------------------------------------------------- */

static void clock_text(char *out, size_t len, double s)
{
    snprintf(out, len, "%d:%02d", (int)s / 60, (int)s % 60);
}

/* A line redrawn in place on a terminal.  Under mpirun stderr is a pipe, so the usual form
 * is a log line: one when the collective changes, and one every few seconds in between. */
static void progress(const struct sweep *s, int i, double t0)
{
    static const struct coll *last;
    static double last_line;
    const struct point *p = &s->pts[i];
    char sz[32], el[16], left[16];
    double now = now_s(), elapsed = now - t0;
    format_bytes(sz, sizeof sz, p->bytes);
    clock_text(el, sizeof el, elapsed);
    if (i) clock_text(left, sizeof left, elapsed / i * (s->n - i));
    else snprintf(left, sizeof left, "?");
    int tty = isatty(STDERR_FILENO);
    if (!tty && p->coll == last && now - last_line < PROGRESS_EVERY_S) return;
    fprintf(stderr, "%s[%d/%d] %s %s root=%s %s%s%s  (%s elapsed, ~%s left)%s",
            tty ? "\r\033[K" : "nodecoll-bench: ", i + 1, s->n, p->coll->name, p->dt->name,
            root_pattern_name(p->root_pattern), sz, p->mode == MODE_BLOCKING ? "" : " ",
            p->mode == MODE_BLOCKING ? "" : mode_name(p->mode), el, left, tty ? "" : "\n");
    last = p->coll;
    last_line = now;
}

static void progress_clear(void)
{
    if (isatty(STDERR_FILENO)) fputs("\r\033[K", stderr);
}

/* ---- the run ------------------------------------------------------------------------------ */

/* The round trip is measured again after every point (limits_probe), once every rank has
 * left the point's calls (a rank still spinning in one would take a core from the two that
 * measure), so that a row's bound has seen the machine as the point left it: rows printed
 * on the way use the lowest value seen so far, the JSON and CSV the lowest of the run.  The
 * copy rates are measured again after every point that copies 1 MiB or more per copier, at
 * its size (limits_copy_probe), and at every size after the sweep (limits_copy_again): the
 * JSON and CSV use the best of all measurements. */
static int run_sweep(const struct options *o, struct limits *l, const struct sweep *s,
                     struct result *res, int rank, int nranks)
{
    int loud = rank == 0 && !o->quiet, failed = 0, sectioned = report_sectioned(o);
    struct arena *a = arena_create(o, nranks);
    double t0 = now_s();
    for (int i = 0; i < s->n; i++) {
        if (loud && sectioned && (i == 0 || s->pts[i].mode != s->pts[i - 1].mode))
            report_section(stdout, s->pts[i].mode, o->overlap);
        if (loud) progress(s, i, t0);
        measure_point(a, o, &s->pts[i], &res[i]);
        sync_wait(arena_sync(a));
        limits_probe(l);
        limits_copy_probe(l, s->pts[i].coll, nranks, s->pts[i].bytes, o->off_cache);
        res[i].bound_us = limits_bound_us(l, s->pts[i].coll, nranks, s->pts[i].bytes, o->off_cache);
        failed |= res[i].check > 0;
        if (loud) progress_clear();
        if (loud) report_row(stdout, &res[i], nranks);
    }
    limits_copy_again(l);
    for (int i = 0; i < s->n; i++)
        res[i].bound_us = limits_bound_us(l, s->pts[i].coll, nranks, s->pts[i].bytes, o->off_cache);
    if (loud) report_footer(stdout, l);
    arena_destroy(a);
    return failed;
}

static int write_outputs(const struct options *o, const struct run_info *ri,
                         const struct limits *l, const struct result *res, int n)
{
    int bad = 0;
    if (o->json && report_json(o->json, ri, l, o, res, n)) {
        fprintf(stderr, "nodecoll-bench: cannot write %s\n", o->json);
        bad = 1;
    }
    if (o->csv && report_csv(o->csv, ri, res, n)) {
        fprintf(stderr, "nodecoll-bench: cannot write %s\n", o->csv);
        bad = 1;
    }
    return bad;
}

/* Points whose displacements do not fit an int are dropped up front, on every rank. */
static void drop_unfit(struct sweep *s, int nranks, int rank)
{
    int kept = 0;
    for (int i = 0; i < s->n; i++) {
        if (point_fits(&s->pts[i], nranks)) s->pts[kept++] = s->pts[i];
        else if (rank == 0)
            fprintf(stderr, "nodecoll-bench: skipping %s of %zu bytes: %d blocks overflow an int\n",
                    s->pts[i].coll->name, s->pts[i].bytes, nranks);
    }
    s->n = kept;
}

static int usage_or_error(const struct options *o, int rank)
{
    if (rank == 0 && o->help) options_usage(stdout);
    if (rank == 0 && o->error[0]) fprintf(stderr, "nodecoll-bench: %s\n", o->error);
    return o->error[0] ? 2 : 0;
}

/* Known at build time, reported by rank 0 after MPI_Init like every other refusal. */
static int persistent_missing(const struct options *o, int rank)
{
    if (!options_want_mode(o, MODE_PERSISTENT) || coll_persistent_name()) return 0;
    if (rank == 0)
        fprintf(stderr, "nodecoll-bench: --mode persistent: this MPI has no persistent "
                        "collectives (neither MPI-4's MPI_<Coll>_init nor Open MPI's "
                        "MPIX_<Coll>_init); nothing measured\n");
    return 1;
}

int main(int argc, char **argv)
{
    struct options o;
    int rank, nranks, status;
    char **args = argv;
    options_parse(argc, argv, &o);
    if (!o.error[0]) options_export_env(&o);
    MPI_Init(&argc, &argv);
    /* A nodecoll communicator is set up by its first blocking collective; without this, a run
     * of nonblocking or persistent calls only (--overlap, --mode nonblocking) would measure
     * the host on both sides. */
    MPI_Barrier(MPI_COMM_WORLD);
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (o.help || o.error[0] || persistent_missing(&o, rank)) {
        status = o.help || o.error[0] ? usage_or_error(&o, rank) : EXIT_UNSUPPORTED;
        MPI_Finalize();
        return status;
    }
    double t0 = now_s();
    struct limits lim;
    struct run_info ri;
    limits_measure(&lim, &o);
    if (o.overlap) compute_calibrate();
    report_collect(&ri, argc, args, &lim);
    if (rank == 0 && !o.quiet) report_header(stdout, &ri, &lim, &o);
    fflush(stdout);

    struct sweep s = plan_sweep(&o);
    drop_unfit(&s, nranks, rank);
    struct result *res = calloc((size_t)s.n + 1, sizeof *res);
    status = run_sweep(&o, &lim, &s, res, rank, nranks);
    ri.seconds = now_s() - t0;
    if (rank == 0) status |= write_outputs(&o, &ri, &lim, res, s.n);
    PMPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
    free(res);
    free(s.pts);
    limits_close();
    MPI_Finalize();
    return status;
}
