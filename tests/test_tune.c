/* Tuning rules in a job (issue 19 part 3), on one node.
 *
 *   test_tune FILE          the round trip: FILE is what nodecoll-tune wrote for this many
 *                           ranks; every rule's algorithm must serve calls at the ends and the
 *                           middle of its size range, with the host's bytes;
 *   test_tune --crafted K   rank 0 writes a rules file of kind K before the first collective
 *                           and points NODECOLL_TUNE_FILE at it: `good` names algorithms the
 *                           built-in rows would not choose (Barrier flat, Bcast shm, Reduce
 *                           flat, Allreduce tree), which must run; `malformed` (a bad line),
 *                           `version` (another nodecoll), `mpi` (another MPI) and `ranks`
 *                           (rules for another node size) must leave the built-in choices
 *                           (Barrier dissemination, Reduce tree, Allreduce flat) and say why on
 *                           stderr (CTest checks the message).
 * Every result is checked against the host's PMPI call.  Linked with the static library, so
 * it can read the file with nodecoll's own parser. */
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
    free(rules);
}

static void write_crafted(const char *kind, const char *path)
{
    FILE *f = fopen(path, "w");
    int ranks = strcmp(kind, "ranks") ? t_size : t_size + 97;
    fprintf(f, "nodecoll-rules 1\nnodecoll %s\nmpi %s\nmachine crafted by test_tune\n",
            strcmp(kind, "version") ? nodecoll_version() : "0.0.0",
            strcmp(kind, "mpi") ? nodecoll_mpi_library() : "No MPI 0");
    fprintf(f, "barrier %d 0 0 flat\nbcast %d 0 inf shm\nreduce %d 0 inf flat\n", ranks, ranks, ranks);
    fprintf(f, "%s %d 0 inf tree\n", strcmp(kind, "malformed") ? "allreduce" : "allreduce radix=2", ranks);
    fclose(f);
}

int main(int argc, char **argv)
{
    char path[256] = "";
    int crafted = argc > 2 && !strcmp(argv[1], "--crafted");
    if (crafted) { /* (rank 0 reads the rules, at the first collective: set it before) */
        snprintf(path, sizeof path, "/tmp/nodecoll-test-tune-%s-%d.rules", argv[2], (int)getpid());
        setenv("NODECOLL_TUNE_FILE", path, 1);
    } else if (argc > 1) {
        setenv("NODECOLL_TUNE_FILE", argv[1], 1);
    }
    t_init(&argc, &argv);
    if (crafted && t_rank == 0) write_crafted(argv[2], path);
    if (!crafted && argc > 1) {
        round_trip(argv[1]);
    } else if (crafted) {
        int good = !strcmp(argv[2], "good");
        check_call(NC_COLL_BARRIER, 0, good ? "flat" : "dissemination", argv[2]);
        check_call(NC_COLL_REDUCE, 64, good ? "flat" : "tree", argv[2]);
        check_call(NC_COLL_ALLREDUCE, 64, good ? "tree" : "flat", argv[2]);
        if (good) check_call(NC_COLL_BCAST, 1 << 20, "shm", argv[2]);
        PMPI_Barrier(MPI_COMM_WORLD);
        if (t_rank == 0) remove(path);
    } else {
        t_fail("usage: test_tune FILE | --crafted good|malformed|version|mpi|ranks");
    }
    return t_finish("tune");
}
