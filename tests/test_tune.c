/* Tuning rules in a job (issue 19 part 3), on one node.
 *
 *   test_tune FILE          the round trip: FILE is what nodecoll-tune wrote for this many
 *                           ranks; every rule's algorithm must serve calls at the ends and the
 *                           middle of its size range, with the host's bytes, and the parameters
 *                           it names (radix, chunk), its layout and levels must be in force
 *                           (nodecoll_comm_setting), or the defaults where it names none;
 *   test_tune --crafted K   rank 0 writes a rules file of kind K before the first collective
 *                           and points NODECOLL_TUNE_FILE at it: `good` names algorithms the
 *                           built-in rows would not choose (Barrier flat, Bcast shm, Reduce
 *                           flat, Allreduce tree), which must run; `malformed` (a bad line),
 *                           `version` (another nodecoll), `mpi` (another MPI) and `ranks`
 *                           (rules for another node size) must leave the built-in choices
 *                           (Barrier dissemination, Reduce tree, Allreduce flat) and say why on
 *                           stderr (CTest checks the message, said once per job: a reversed
 *                           communicator, whose rank 0 is another process, sets up after
 *                           MPI_COMM_WORLD); `fifo` (NODECOLL_TUNE_FILE names a FIFO) the same,
 *                           at once (a FIFO opened for reading would wait for a writer);
 *                           `params` (format 2: a layout of 4 KiB segments, cma with chunks)
 *                           must be in force: the segment is too small for a 5000-byte element,
 *                           which the host then reduces; `given` is that file under
 *                           NODECOLL_SEGMENT_SIZE and NODECOLL_CMA_CHUNK from the environment,
 *                           which win; `badlayout` (segment=1K) leaves the defaults; `levels`
 *                           (levels numa, run on a synthetic topology) must group by NUMA only.
 *   trailing VAR=value arguments are set in the environment before MPI_Init (for values the
 *   tests' environment lists cannot carry: HWLOC_SYNTHETIC's).
 * Every result is checked against the host's PMPI call.  Linked with the static library, so
 * it can read the file with nodecoll's own parser. */
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"
#include "core/tune.h"

static void check_call(nc_coll_id coll, size_t bytes, const char *want_alg, const char *what)
{
    int count = (int)(bytes / sizeof(double));
    double *a = malloc(bytes + 8), *b = malloc(bytes + 8), *s = malloc(bytes + 8);
    for (int i = 0; i < count; i++) s[i] = a[i] = (double)(t_rank * 1000 + i % 977);
    nodecoll_stat_reset();
    switch (coll) {
    case NC_COLL_BARRIER: MPI_Barrier(MPI_COMM_WORLD); break;
    case NC_COLL_BCAST:
        MPI_Bcast(a, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
        PMPI_Bcast(s, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
        T_CHECK(!memcmp(a, s, bytes), "%s: Bcast of %zu bytes differs", what, bytes);
        break;
    case NC_COLL_REDUCE:
        MPI_Reduce(s, a, count, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        PMPI_Reduce(s, b, count, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        T_CHECK(t_rank || !memcmp(a, b, (size_t)count * 8), "%s: Reduce of %zu bytes differs", what, bytes);
        break;
    default:
        MPI_Allreduce(s, a, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        PMPI_Allreduce(s, b, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        T_CHECK(!memcmp(a, b, (size_t)count * 8), "%s: Allreduce of %zu bytes differs", what, bytes);
        break;
    }
    const char *name = nc_coll_name(coll);
    T_CHECK(nodecoll_stat_calls(name, want_alg) == 1, "%s: %s of %zu bytes did not run %s", what, name, bytes,
            want_alg);
    free(a);
    free(b);
    free(s);
}

/* The value of setting `name` in force on MPI_COMM_WORLD (for a call of `coll` moving
 * `bytes`, if coll is set). */
static const char *in_force(const char *name, const char *coll, size_t bytes)
{
    static char value[64];
    int rc = nodecoll_comm_setting(MPI_COMM_WORLD, name, coll, (MPI_Aint)bytes, value, sizeof value);
    T_CHECK(rc == MPI_SUCCESS, "nodecoll_comm_setting(%s) failed: %d", name, rc);
    return rc == MPI_SUCCESS ? value : "?";
}

static void expect(const char *name, const char *coll, size_t bytes, const char *want, const char *what)
{
    const char *got = in_force(name, coll, bytes);
    T_CHECK(!strcmp(got, want), "%s: %s for %s of %zu bytes is %s, not %s", what, name, coll ? coll : "the comm", bytes,
            got, want);
}

/* A setting's default, as nodecoll_comm_setting writes it. */
static const char *default_of(const char *name)
{
    static char value[64];
    const nc_setting_info *s = nc_setting_named(name);
    nc_setting_format(s, s->default_value, value, sizeof value);
    return value;
}

/* The parameters and node-wide lines of FILE for this many ranks are in force on MPI_COMM_WORLD,
 * or the defaults where it names none (nothing in the environment sets them). */
static void check_params(const nc_tune_rules *rules, const char *path)
{
    static const char *radix_of[] = {[NC_COLL_BARRIER] = "BARRIER_FANIN", [NC_COLL_BCAST] = "BCAST_RADIX",
                                     [NC_COLL_REDUCE] = "REDUCE_FANIN", [NC_COLL_ALLREDUCE] = "REDUCE_FANIN"};
    char want[64], what[300], line[200];
    for (int i = 0; i < rules->count; i++) {
        const nc_tune_rule *r = &rules->rule[i];
        if (r->ranks != t_size || r->coll > NC_COLL_ALLREDUCE) continue;
        const char *coll = nc_coll_name((nc_coll_id)r->coll);
        nc_tune_format_rule(r, line, sizeof line);
        snprintf(what, sizeof what, "%s line %d (%s)", path, r->line, line);
        snprintf(want, sizeof want, "%d", r->radix);
        expect(radix_of[r->coll], coll, r->min_bytes, r->radix ? want : default_of(radix_of[r->coll]), what);
        if (r->coll == NC_COLL_BARRIER) continue;
        const char *chunk = r->coll == NC_COLL_BCAST ? "CMA_CHUNK" : "REDUCE_CHUNK";
        nc_setting_format(nc_setting_named(chunk), r->chunk, want, sizeof want);
        expect(chunk, coll, r->min_bytes, r->chunk ? want : default_of(chunk), what);
    }
    const nc_tune_node *n = nc_tune_node_find(rules, t_size);
    nc_tune_node none = {.ranks = t_size};
    if (!n) n = &none;
    snprintf(what, sizeof what, "%s's layout and levels", path);
    nc_setting_format(nc_setting_named("SEGMENT_SIZE"), n->segment_size, want, sizeof want);
    expect("SEGMENT_SIZE", NULL, 0, n->segment_size ? want : default_of("SEGMENT_SIZE"), what);
    snprintf(want, sizeof want, "%lld", (long long)n->segments);
    expect("SEGMENTS", NULL, 0, n->segments ? want : default_of("SEGMENTS"), what);
    nc_setting_format(nc_setting_named("TOPO_LEVELS"), n->levels, want, sizeof want);
    expect("TOPO_LEVELS", NULL, 0, n->levels_line ? want : default_of("TOPO_LEVELS"), what);
}

/* The calls at the ends and the middle of every rule for this many ranks. */
static void round_trip(const char *path)
{
    nc_tune_rules *rules = malloc(sizeof *rules);
    char err[600];
    if (nc_tune_load(path, nodecoll_version(), nodecoll_mpi_library(), rules, err, sizeof err)) {
        t_fail("%s", err);
        free(rules);
        return;
    }
    int used = 0;
    for (int i = 0; i < rules->count; i++) {
        const nc_tune_rule *r = &rules->rule[i];
        if (r->ranks != t_size) continue;
        uint64_t hi = r->max_bytes == NC_TUNE_NO_MAX ? r->min_bytes + (4u << 20) : r->max_bytes;
        uint64_t at[3] = {r->min_bytes, (r->min_bytes + hi) / 2, hi};
        for (int k = 0; k < 3; k++) {
            char what[240], line[200];
            nc_tune_format_rule(r, line, sizeof line);
            snprintf(what, sizeof what, "%s line %d (%s)", path, r->line, line);
            /* (the reductions count whole doubles: a size below 8 has none, and rounds down) */
            size_t bytes = r->coll == NC_COLL_BARRIER ? 0 : (size_t)at[k] & ~(size_t)7;
            if (r->coll != NC_COLL_BARRIER && (bytes < r->min_bytes || bytes == 0)) continue;
            check_call((nc_coll_id)r->coll, bytes, nc_alg_name((nc_alg_id)r->alg), what);
            used++;
        }
    }
    T_CHECK(used > 0, "%s has no rule for %d ranks per node", path, t_size);
    check_params(rules, path);
    free(rules);
}

static void write_crafted(const char *kind, const char *path)
{
    remove(path);
    if (!strcmp(kind, "fifo")) {
        T_CHECK(mkfifo(path, 0600) == 0, "mkfifo %s failed", path);
        return;
    }
    FILE *f = fopen(path, "w");
    int ranks = strcmp(kind, "ranks") ? t_size : t_size + 97;
    int format2 = !strcmp(kind, "params") || !strcmp(kind, "given") || !strcmp(kind, "badlayout") ||
                  !strcmp(kind, "levels");
    fprintf(f, "nodecoll-rules %d\nnodecoll %s\nmpi %s\nmachine crafted by test_tune\n", format2 ? 2 : 1,
            strcmp(kind, "version") ? nodecoll_version() : "0.0.0",
            strcmp(kind, "mpi") ? nodecoll_mpi_library() : "No MPI 0");
    if (!strcmp(kind, "levels")) {
        fprintf(f, "levels %d numa\n", ranks);
    } else if (format2) {
        fprintf(f, "layout %d segment=%s segments=4\n", ranks, strcmp(kind, "badlayout") ? "4K" : "1K");
        fprintf(f, "bcast %d 0 16K shm radix=1\nbcast %d 16385 inf cma chunk=64K\n", ranks, ranks);
        fprintf(f, "allreduce %d 32K inf cma chunk=4K\n", ranks);
    } else {
        fprintf(f, "barrier %d 0 0 flat\nbcast %d 0 inf shm\nreduce %d 0 inf flat\n", ranks, ranks, ranks);
        fprintf(f, "%s %d 0 inf tree\n", strcmp(kind, "malformed") ? "allreduce" : "allreduce radix=2", ranks);
    }
    fclose(f);
}

static void sum_blocks(void *in, void *inout, int *len, MPI_Datatype *type)
{
    double *x = in, *y = inout;
    for (int i = 0; i < *len * 625; i++) y[i] += x[i];
}

/* An Allreduce of one 5000-byte element: nodecoll's if a ring segment holds it, else the
 * host's. */
static int big_element_served(void)
{
    MPI_Datatype block;
    MPI_Op op;
    MPI_Type_contiguous(625, MPI_DOUBLE, &block);
    MPI_Type_commit(&block);
    MPI_Op_create(sum_blocks, 1, &op);
    double in[625], out[625];
    for (int i = 0; i < 625; i++) in[i] = t_rank + i;
    nodecoll_stat_reset();
    MPI_Allreduce(in, out, 1, block, op, MPI_COMM_WORLD);
    T_CHECK(out[624] == t_size * 624.0 + t_size * (t_size - 1) / 2.0, "the 5000-byte element's sum is wrong");
    MPI_Op_free(&op);
    MPI_Type_free(&block);
    return nodecoll_stat_calls("allreduce", "pmpi:type") == 0;
}

/* The crafted format-2 file's parameters (or the environment's, which win) are in force and
 * followed. */
static void check_crafted_params(const char *kind)
{
    int given = !strcmp(kind, "given"), bad = !strcmp(kind, "badlayout");
    check_call(NC_COLL_BCAST, 1 << 20, "cma", kind);
    check_call(NC_COLL_ALLREDUCE, 1 << 20, "cma", kind);
    expect("SEGMENT_SIZE", NULL, 0, given ? "16K" : bad ? "32K" : "4K", kind);
    expect("SEGMENTS", NULL, 0, bad ? "8" : "4", kind);
    expect("CMA_CHUNK", "bcast", 1 << 20, given ? "128K" : bad ? "1M" : "64K", kind);
    expect("CMA_CHUNK", "bcast", 1 << 10, given ? "128K" : "1M", kind);
    expect("REDUCE_CHUNK", "allreduce", 1 << 20, bad ? "256K" : "4K", kind);
    expect("REDUCE_CHUNK", "allreduce", 1 << 10, "256K", kind);
    expect("BCAST_RADIX", "bcast", 64, bad ? "8" : "1", kind);
    T_CHECK(big_element_served() == (given || bad), "%s: a 5000-byte element %s", kind,
            given || bad ? "went to the host with segments of 16 or 32 KiB" : "fitted segments of 4 KiB");
}

static void check_crafted_levels(void)
{
    char groups[128] = "";
    check_call(NC_COLL_BARRIER, 0, "tree", "levels");
    check_call(NC_COLL_ALLREDUCE, 64, "tree", "levels");
    check_call(NC_COLL_BCAST, 5000, "shm", "levels");
    T_CHECK(nodecoll_comm_groups(MPI_COMM_WORLD, groups, sizeof groups) == MPI_SUCCESS &&
                !strcmp(groups, getenv("NODECOLL_TEST_GROUPS")),
            "levels numa: the groups are \"%s\", not \"%s\"", groups, getenv("NODECOLL_TEST_GROUPS"));
    expect("TOPO_LEVELS", NULL, 0, "numa", "levels");
}

int main(int argc, char **argv)
{
    char path[256] = "";
    for (int i = 1; i < argc; i++) {
        char *eq = strchr(argv[i], '=');
        if (eq && argv[i][0] != '/' && argv[i][0] != '-') *eq = '\0', setenv(argv[i], eq + 1, 1);
    }
    int crafted = argc > 2 && !strcmp(argv[1], "--crafted");
    if (crafted && !strcmp(argv[2], "given")) {
        setenv("NODECOLL_SEGMENT_SIZE", "16K", 1);
        setenv("NODECOLL_CMA_CHUNK", "128K", 1);
    }
    if (crafted) { /* (rank 0 reads the rules, at the first collective: set it before) */
        /* (rank 0 writes them after MPI_Init: the world is set up at its first collective) */
        setenv("NODECOLL_SETUP_WORLD", "0", 1);
        /* (one path for every rank: another rank 0 than MPI_COMM_WORLD's reads it too) */
        snprintf(path, sizeof path, "/tmp/nodecoll-test-tune-%s-%d.rules", argv[2], (int)getppid());
        setenv("NODECOLL_TUNE_FILE", path, 1);
    } else if (argc > 1) {
        setenv("NODECOLL_TUNE_FILE", argv[1], 1);
    }
    t_init(&argc, &argv);
    if (crafted && t_rank == 0) write_crafted(argv[2], path);
    if (!crafted && argc > 1) {
        round_trip(argv[1]);
    } else if (crafted && (!strcmp(argv[2], "params") || !strcmp(argv[2], "given") || !strcmp(argv[2], "badlayout"))) {
        check_crafted_params(argv[2]);
    } else if (crafted && !strcmp(argv[2], "levels")) {
        check_crafted_levels();
    } else if (crafted) {
        int good = !strcmp(argv[2], "good");
        check_call(NC_COLL_BARRIER, 0, good ? "flat" : "dissemination", argv[2]);
        check_call(NC_COLL_REDUCE, 64, good ? "flat" : "tree", argv[2]);
        check_call(NC_COLL_ALLREDUCE, 64, good ? "tree" : "flat", argv[2]);
        if (good) check_call(NC_COLL_BCAST, 1 << 20, "shm", argv[2]);
        MPI_Comm reversed;
        MPI_Comm_split(MPI_COMM_WORLD, 0, t_size - t_rank, &reversed);
        MPI_Barrier(reversed); /* (its rank 0 reads the rules, and has heard of their problem) */
        MPI_Comm_free(&reversed);
    } else {
        t_fail("usage: test_tune FILE | --crafted good|malformed|version|mpi|ranks|fifo|params|given|badlayout|levels");
    }
    PMPI_Barrier(MPI_COMM_WORLD);
    if (crafted && t_rank == 0) remove(path);
    return t_finish("tune");
}
