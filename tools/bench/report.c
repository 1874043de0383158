/*
 * What a result means and where it goes: the text table on stdout, JSON for plot.py and
 * for tracking over time, CSV for spreadsheets.  Everything here runs on rank 0 only,
 * except report_collect.
 */
#include "bench.h"

#include <dlfcn.h>
#include <math.h>
#include <string.h>
#include <time.h>

#include "../../src/heap/nodecoll_heap.h"

#define NOISY_SPREAD 1.3

extern char **environ;

/* ---- derived numbers --------------------------------------------------------------------- */

double result_speedup(const struct result *r)
{
    return r->speedup;
}

/* Bytes that landed in receive buffers, summed over ranks, per second of nodecoll time. */
double result_gbs(const struct result *r, int nranks)
{
    double reads, writes;
    coll_traffic(r->pt.coll, nranks, &reads, &writes);
    double written = writes * (double)r->pt.bytes;
    return written / (r->t[VAR_NODECOLL].max * 1e3);
}

double result_pct_bound(const struct result *r)
{
    return 100.0 * r->bound_us / r->t[VAR_NODECOLL].max;
}

/* The per-round ratios disagree: the middle half of them spans more than NOISY_SPREAD.
 * Something disturbed single blocks (another job, preemption), and the speedup of this
 * point could be an accident. */
int result_noisy(const struct result *r)
{
    return r->ratio_q3 > NOISY_SPREAD * r->ratio_q1;
}

/* 100 * (1 - (t_total - t_compute) / t_pure), clamped to 0..100 (docs/benchmark.md). */
double result_overlap(const struct result *r, enum variant v)
{
    return 100.0 * dmax(0, dmin(1, 1 - r->exposed[v].max / r->t[v].max));
}

/* ---- run description --------------------------------------------------------------------- */

static void first_line(char *dst, size_t len, const char *src)
{
    size_t n = strcspn(src, "\r\n");
    if (n >= len) n = len - 1;
    memcpy(dst, src, n);
    dst[n] = 0;
    for (char *p = dst; *p; p++)
        if (*p == '\t') *p = ' ';
}

static void cpu_model(char *dst, size_t len)
{
    char line[512];
    FILE *f = fopen("/proc/cpuinfo", "r");
    snprintf(dst, len, "unknown");
    while (f && fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) || !colon) continue;
        first_line(dst, len, colon + 2);
        break;
    }
    if (f) fclose(f);
}

static void join_args(char *dst, size_t len, int argc, char **argv)
{
    size_t used = 0;
    dst[0] = 0;
    for (int i = 0; i < argc && used < len; i++) {
        int quote = strpbrk(argv[i], " \t'\"") != NULL;
        int w = snprintf(dst + used, len - used, "%s%s%s%s", i ? " " : "", quote ? "'" : "",
                         argv[i], quote ? "'" : "");
        if (w < 0) break;
        used += (size_t)w;
    }
}

static void nodecoll_settings(char *dst, size_t len)
{
    size_t used = 0;
    dst[0] = 0;
    for (char **e = environ; *e && used < len; e++) {
        if (strncmp(*e, "NODECOLL_", 9)) continue;
        int w = snprintf(dst + used, len - used, "%s%s", used ? " " : "", *e);
        if (w < 0) break;
        used += (size_t)w;
    }
}

/* Whether this process's large blocks come from nodecoll's shared heap (libnodecoll-heap.so
 * preloaded and NODECOLL_HEAP=on: the benchmark's buffers are then heap buffers). */
static int heap_interposed(void)
{
    const nc_heap_api *api = dlsym(RTLD_DEFAULT, NC_HEAP_API_SYMBOL);
    return api && api->version == NC_HEAP_API_VERSION && api->interposed();
}

void report_collect(struct run_info *ri, int argc, char **argv, const struct limits *l)
{
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len;
    time_t t = time(NULL);
    memset(ri, 0, sizeof *ri);
    PMPI_Get_library_version(lib, &len);
    first_line(ri->mpi, sizeof ri->mpi, lib);
    PMPI_Get_version(&ri->mpi_major, &ri->mpi_minor);
    cpu_model(ri->cpu, sizeof ri->cpu);
    strftime(ri->date, sizeof ri->date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
    join_args(ri->command, sizeof ri->command, argc, argv);
    nodecoll_settings(ri->settings, sizeof ri->settings);
    PMPI_Comm_size(MPI_COMM_WORLD, &ri->nranks);
    ri->oversubscribed = l->node_ranks > l->cores;
    ri->heap_buffers = heap_interposed();
    PMPI_Allreduce(MPI_IN_PLACE, &ri->heap_buffers, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
}

/* ---- text ---------------------------------------------------------------------------------- */

static void print_limits(FILE *out, const struct limits *l)
{
    char sz[32];
    if (isnan(l->rtt_ns))
        fprintf(out, "# cache-line round trip rank 0 <-> 1: not measured (every batch saw a rank wait off "
                     "its core); the bounds have no latency term\n");
    else
        fprintf(out, "# cache-line round trip rank 0 <-> 1: %.0f ns (one way %.0f ns; %.0f ns on one shared line%s)\n",
                l->rtt_ns, l->rtt_ns / 2, l->rtt_one_line_ns,
                l->node_ranks > l->cores ? "" : "; measured again after every point, the lowest counts");
    fprintf(out, "# memcpy GB/s      1 core hot   cold   %d cores hot   cold | single-copy read GB/s: CMA  "
                 "shared mapping (the shared heap's way)\n", l->copiers);
    for (int i = 0; i < l->nsizes; i++) {
        char cma[16] = "-", map[16] = "-";
        format_bytes(sz, sizeof sz, l->size[i]);
        if (l->read_map[i] > 0) snprintf(map, sizeof map, "%.2f", l->read_map[i]);
        if (l->read_map[i] > 0) snprintf(cma, sizeof cma, l->read_cma[i] > 0 ? "%.2f" : "n/a", l->read_cma[i]);
        fprintf(out, "#   %8s  %12.2f %7.2f %15.2f %7.2f | %26s %7s\n", sz, l->hot1[i], l->cold1[i], l->hot_all[i],
                l->cold_all[i], cma, map);
    }
}

static void print_columns(FILE *out, int overlap)
{
    if (overlap) {
        fprintf(out, "# %-20s %-6s %-6s %6s %11s %4s | %-35s | %-35s | %7s  %s\n", "collective",
                "dtype", "root", "size", "k nc/host", "rnds", "nodecoll us: pure total exp overlap",
                "host us: pure total exp overlap", "x host", "algorithm");
        return;
    }
    fprintf(out, "# %-20s %-6s %-6s %6s %11s %4s | %-26s | %-26s | %7s %9s %6s %8s  %s\n",
            "collective", "dtype", "root", "size", "k nc/host", "rnds", "nodecoll us: min med max",
            "host us: min med max", "x host", "bound us", "%bound", "GB/s", "algorithm");
}

void report_header(FILE *out, const struct run_info *ri, const struct limits *l,
                   const struct options *o)
{
    const char *nc = stats_nodecoll_version();
    fprintf(out, "# nodecoll-bench  %s\n# command: %s\n", ri->date, ri->command);
    fprintf(out, "# MPI: %s (MPI %d.%d)\n", ri->mpi, ri->mpi_major, ri->mpi_minor);
    fprintf(out, "# nodecoll: %s\n", nc ? nc : "not linked (both variants are the host MPI)");
    fprintf(out, "# settings: %s\n", ri->settings[0] ? ri->settings : "(defaults)");
    fprintf(out, "# CPU: %s, %d cores, LLC %zu KiB; %d ranks on %d node(s)%s\n", ri->cpu,
            l->cores, l->llc >> 10, ri->nranks, l->nodes,
            ri->oversubscribed ? ", OVERSUBSCRIBED" : "");
    fprintf(out, "# op %s, %s buffers%s%s\n", o->op->name, o->off_cache ? "off-cache" : "hot",
            ri->heap_buffers ? " in the shared heap (libnodecoll-heap.so, NODECOLL_HEAP=on)" : "",
            o->check ? ", results checked against the host MPI" : "");
    if (l->valid) print_limits(out, l);
    else fprintf(out, "# ranks span %d machines: no single-node bound\n", l->nodes);
    if (report_sectioned(o)) return;
    fputs("#\n", out);
    print_columns(out, 0);
}

/* Only the default run (blocking calls, latency) has a single table; it keeps the layout
 * that docs/results.md and the README quote.  Every other run names the mode of each
 * table in a section header. */
int report_sectioned(const struct options *o)
{
    return o->overlap || o->nmodes != 1 || o->modes[0] != MODE_BLOCKING;
}

/* What each variant calls, per mode (persistent: after the name of the _init functions). */
static const char *const mode_calls[MODE_COUNT] = {
    "MPI_<Coll> (nodecoll) against PMPI_<Coll> (host)",
    "MPI_I<coll> + MPI_Wait (nodecoll) against PMPI_I<coll> + PMPI_Wait (host)",
    " once per size, untimed; then MPI_Start + MPI_Wait (nodecoll) against PMPI_Start + "
    "PMPI_Wait (host)",
};

void report_section(FILE *out, enum mode mode, int overlap)
{
    const char *init = mode == MODE_PERSISTENT ? coll_persistent_name() : "";
    fprintf(out, "#\n# mode: %s: %s%s\n", mode_name(mode), init, mode_calls[mode]);
    if (overlap)
        fprintf(out, "# overlap: pure = post + wait; total = post + compute + wait, computing as long as "
                     "the variant's pure; exp = total - compute\n#   (per rank);"
                     " overlap = 1 - exp / pure, within 0..100%%\n");
    print_columns(out, overlap);
}

static const char *check_text(const struct result *r)
{
    return r->check > 0 ? "  CHECK FAILED" : r->check == 0 ? "  ok" : "";
}

/* "k[nodecoll]/k[host]": the calls in a block of each variant. */
static const char *k_text(const struct result *r, char *out, size_t len)
{
    snprintf(out, len, "%d/%d", r->k[VAR_NODECOLL], r->k[VAR_HOST]);
    return out;
}

static void overlap_row(FILE *out, const struct result *r, const char *sz)
{
    char k[32];
    fprintf(out, "  %-20s %-6s %-6s %6s %11s %4d |", r->pt.coll->name, r->pt.dt->name,
            root_pattern_name(r->pt.root_pattern), sz, k_text(r, k, sizeof k), r->rounds);
    for (int v = 0; v < VAR_COUNT; v++)
        fprintf(out, " %8.2f %8.2f %8.2f %7.1f%% |", r->t[v].max, r->total[v].max,
                r->exposed[v].max, result_overlap(r, (enum variant)v));
    fprintf(out, " %6.2fx  %s%s%s\n", result_speedup(r), r->algs, check_text(r),
            result_noisy(r) ? "  noisy" : "");
}

void report_row(FILE *out, const struct result *r, int nranks)
{
    char sz[32], k[32];
    const struct sample *a = &r->t[VAR_NODECOLL], *b = &r->t[VAR_HOST];
    format_bytes(sz, sizeof sz, r->pt.bytes);
    if (r->overlap) overlap_row(out, r, sz);
    else
        fprintf(out,
                "  %-20s %-6s %-6s %6s %11s %4d | %8.2f %8.2f %8.2f | %8.2f %8.2f %8.2f | %6.2fx "
                "%9.3f %5.1f%% %8.3f  %s%s%s\n",
                r->pt.coll->name, r->pt.dt->name, root_pattern_name(r->pt.root_pattern), sz,
                k_text(r, k, sizeof k), r->rounds, a->min, a->med, a->max, b->min, b->med, b->max, result_speedup(r),
                r->bound_us, result_pct_bound(r), result_gbs(r, nranks), r->algs, check_text(r),
                result_noisy(r) ? "  noisy" : "");
    fflush(out);
}

/* After the sweep: the round trip's lowest and median value over the run.  The bounds of
 * the JSON and CSV use the lowest; a row printed before it was seen used a higher one. */
void report_footer(FILE *out, const struct limits *l)
{
    if (!l->valid || isnan(l->rtt_ns)) return;
    fprintf(out, "# cache-line round trip over %d measurements: lowest %.0f ns, median %.0f ns; "
                 "the JSON and CSV bounds use the lowest\n",
            l->rtt_probes, l->rtt_ns, l->rtt_median_ns);
}

/* ---- JSON ---------------------------------------------------------------------------------- */

static void jstr(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s < 0x20) fprintf(f, "\\u%04x", (unsigned char)*s);
        else fputc(*s, f);
    }
    fputc('"', f);
}

static void jnum(FILE *f, double v)
{
    if (isfinite(v)) fprintf(f, "%.6g", v);
    else fputs("null", f);
}

static void jkey(FILE *f, const char *key, int first)
{
    fputs(first ? "" : ", ", f);
    jstr(f, key);
    fputs(": ", f);
}

static void json_limits(FILE *f, const struct limits *l)
{
    fputs("{", f);
    jkey(f, "valid", 1), fprintf(f, "%s", l->valid ? "true" : "false");
    jkey(f, "rtt_ns", 0), jnum(f, l->rtt_ns);
    jkey(f, "rtt_one_line_ns", 0), jnum(f, l->rtt_one_line_ns);
    jkey(f, "rtt_median_ns", 0), jnum(f, l->rtt_median_ns);
    jkey(f, "rtt_probes", 0), fprintf(f, "%d", l->rtt_probes);
    jkey(f, "copiers", 0), fprintf(f, "%d", l->copiers);
    jkey(f, "memcpy", 0), fputs("[", f);
    for (int i = 0; i < l->nsizes; i++) {
        fprintf(f, "%s\n    {\"bytes\": %zu", i ? "," : "", l->size[i]);
        jkey(f, "hot_gbs", 0), jnum(f, l->hot1[i]);
        jkey(f, "cold_gbs", 0), jnum(f, l->cold1[i]);
        jkey(f, "hot_all_gbs", 0), jnum(f, l->hot_all[i]);
        jkey(f, "cold_all_gbs", 0), jnum(f, l->cold_all[i]);
        jkey(f, "read_cma_gbs", 0), jnum(f, l->read_cma[i]);
        jkey(f, "read_map_gbs", 0), jnum(f, l->read_map[i]);
        fputs("}", f);
    }
    fputs("]}", f);
}

static void json_run(FILE *f, const struct run_info *ri, const struct limits *l,
                     const struct options *o)
{
    const char *nc = stats_nodecoll_version();
    jkey(f, "tool", 1), jstr(f, "nodecoll-bench");
    jkey(f, "format", 0), fputs("2", f);
    jkey(f, "date", 0), jstr(f, ri->date);
    jkey(f, "command", 0), jstr(f, ri->command);
    jkey(f, "mpi", 0), jstr(f, ri->mpi);
    jkey(f, "mpi_standard", 0), fprintf(f, "\"%d.%d\"", ri->mpi_major, ri->mpi_minor);
    jkey(f, "nodecoll", 0), nc ? jstr(f, nc) : (void)fputs("null", f);
    jkey(f, "settings", 0), jstr(f, ri->settings);
    jkey(f, "cpu", 0), jstr(f, ri->cpu);
    jkey(f, "cores", 0), fprintf(f, "%d", l->cores);
    jkey(f, "llc_bytes", 0), fprintf(f, "%zu", l->llc);
    jkey(f, "ranks", 0), fprintf(f, "%d", ri->nranks);
    jkey(f, "nodes", 0), fprintf(f, "%d", l->nodes);
    jkey(f, "oversubscribed", 0), fputs(ri->oversubscribed ? "true" : "false", f);
    jkey(f, "heap_buffers", 0), fputs(ri->heap_buffers ? "true" : "false", f);
    jkey(f, "op", 0), jstr(f, o->op->name);
    jkey(f, "off_cache", 0), fputs(o->off_cache ? "true" : "false", f);
    jkey(f, "modes", 0), fputs("[", f);
    for (int m = 0; m < o->nmodes; m++) fputs(m ? ", " : "", f), jstr(f, mode_name(o->modes[m]));
    fputs("]", f);
    jkey(f, "overlap", 0), fputs(o->overlap ? "true" : "false", f);
    jkey(f, "seconds", 0), jnum(f, ri->seconds);
    jkey(f, "limits", 0), json_limits(f, l);
}

static void json_sample(FILE *f, const char *key, const struct sample *s)
{
    jkey(f, key, 0), fputs("{", f);
    jkey(f, "min", 1), jnum(f, s->min);
    jkey(f, "med", 0), jnum(f, s->med);
    jkey(f, "max", 0), jnum(f, s->max);
    jkey(f, "q1", 0), jnum(f, s->q1);
    jkey(f, "q3", 0), jnum(f, s->q3);
    fputs("}", f);
}

/* One variant's --overlap figures: {compute_us, total_us: {...}, exposed_us: {...}, pct}. */
static void json_overlap(FILE *f, const char *key, const struct result *r, enum variant v)
{
    jkey(f, key, 0), fputs("{", f);
    jkey(f, "compute_us", 1), jnum(f, r->compute_us[v]);
    json_sample(f, "total_us", &r->total[v]);
    json_sample(f, "exposed_us", &r->exposed[v]);
    jkey(f, "pct", 0), jnum(f, result_overlap(r, v));
    fputs("}", f);
}

static void json_result(FILE *f, const struct result *r, int nranks)
{
    fputs("{", f);
    jkey(f, "coll", 1), jstr(f, r->pt.coll->name);
    jkey(f, "mode", 0), jstr(f, mode_name(r->pt.mode));
    jkey(f, "dtype", 0), jstr(f, r->pt.dt->name);
    jkey(f, "root", 0), jstr(f, root_pattern_name(r->pt.root_pattern));
    jkey(f, "bytes", 0), fprintf(f, "%zu", r->pt.bytes);
    jkey(f, "count", 0), fprintf(f, "%d", r->pt.count);
    jkey(f, "k", 0), fprintf(f, "%d", r->k[VAR_NODECOLL]);
    jkey(f, "k_host", 0), fprintf(f, "%d", r->k[VAR_HOST]);
    jkey(f, "rounds", 0), fprintf(f, "%d", r->rounds);
    json_sample(f, "nodecoll_us", &r->t[VAR_NODECOLL]);
    json_sample(f, "host_us", &r->t[VAR_HOST]);
    jkey(f, "speedup", 0), jnum(f, result_speedup(r));
    jkey(f, "speedup_q1", 0), jnum(f, r->ratio_q1);
    jkey(f, "speedup_q3", 0), jnum(f, r->ratio_q3);
    jkey(f, "bound_us", 0), jnum(f, r->bound_us);
    jkey(f, "pct_bound", 0), jnum(f, result_pct_bound(r));
    jkey(f, "gbs", 0), jnum(f, result_gbs(r, nranks));
    jkey(f, "algorithms", 0), jstr(f, r->algs);
    jkey(f, "noisy", 0), fputs(result_noisy(r) ? "true" : "false", f);
    jkey(f, "check", 0), fputs(r->check < 0 ? "null" : r->check ? "\"failed\"" : "\"ok\"", f);
    if (r->overlap) {
        json_overlap(f, "nodecoll_overlap", r, VAR_NODECOLL);
        json_overlap(f, "host_overlap", r, VAR_HOST);
    }
    fputs("}", f);
}

int report_json(const char *path, const struct run_info *ri, const struct limits *l,
                const struct options *o, const struct result *rs, int n)
{
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fputs("{", f);
    json_run(f, ri, l, o);
    jkey(f, "results", 0), fputs("[", f);
    for (int i = 0; i < n; i++) {
        fputs(i ? ",\n  " : "\n  ", f);
        json_result(f, &rs[i], ri->nranks);
    }
    fputs("\n]}\n", f);
    return fclose(f);
}

/* ---- CSV ------------------------------------------------------------------------------------ */

/* The columns added after `noisy`: the mode, then --overlap's figures (empty without). */
static void csv_mode_columns(FILE *f, const struct result *r)
{
    fprintf(f, ",%s", mode_name(r->pt.mode));
    for (int v = 0; v < VAR_COUNT; v++)
        if (r->overlap)
            fprintf(f, ",%.4f,%.4f,%.4f,%.2f", r->compute_us[v], r->total[v].max, r->exposed[v].max,
                    result_overlap(r, (enum variant)v));
        else fputs(",,,,", f);
    fputc('\n', f);
}

int report_csv(const char *path, const struct run_info *ri, const struct result *rs, int n)
{
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fputs("date,mpi,ranks,oversubscribed,coll,dtype,root,bytes,k,k_host,rounds,"
          "nodecoll_min_us,nodecoll_med_us,nodecoll_max_us,host_min_us,host_med_us,host_max_us,"
          "speedup,bound_us,pct_bound,gbs,algorithms,check,noisy,mode,"
          "nodecoll_compute_us,nodecoll_total_us,nodecoll_exposed_us,nodecoll_overlap_pct,"
          "host_compute_us,host_total_us,host_exposed_us,host_overlap_pct\n", f);
    for (int i = 0; i < n; i++) {
        const struct result *r = &rs[i];
        const struct sample *a = &r->t[VAR_NODECOLL], *b = &r->t[VAR_HOST];
        fprintf(f, "%s,\"%s\",%d,%d,%s,%s,%s,%zu,%d,%d,%d,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.2f,%.4f,%s,%s,%d",
                ri->date, ri->mpi, ri->nranks, ri->oversubscribed, r->pt.coll->name,
                r->pt.dt->name, root_pattern_name(r->pt.root_pattern), r->pt.bytes,
                r->k[VAR_NODECOLL], r->k[VAR_HOST], r->rounds, a->min, a->med, a->max, b->min, b->med, b->max, result_speedup(r),
                r->bound_us, result_pct_bound(r), result_gbs(r, ri->nranks), r->algs,
                r->check < 0 ? "" : r->check ? "failed" : "ok", result_noisy(r));
        csv_mode_columns(f, r);
    }
    return fclose(f);
}
