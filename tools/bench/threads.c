/*
 * nodecoll-bench-threads: collective throughput when several threads of every rank call
 * collectives at once, each thread on its own communicator (MPI_THREAD_MULTIPLE).
 *
 * For 1, 2, 4 ... --max-threads threads it times a fixed number of calls per thread through
 * nodecoll (MPI_*) and through the host MPI (PMPI_*), alternating the two, and prints the
 * aggregate calls per second of the slowest rank and how that scales against one thread.
 */
#include <mpi.h>

#include "nodecoll.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*bcast_fn)(void *, int, MPI_Datatype, int, MPI_Comm);
typedef int (*barrier_fn)(MPI_Comm);

typedef struct variant {
    const char *name;
    bcast_fn bcast;
    barrier_fn barrier;
} variant;

static const variant variants[] = {{"nodecoll", MPI_Bcast, MPI_Barrier}, {"host", PMPI_Bcast, PMPI_Barrier}};

typedef struct job {
    const variant *v;
    MPI_Comm comm;
    int calls, bytes, ranks;
    const char *coll;
} job;

static void *run_job(void *arg)
{
    job *j = arg;
    char *buf = calloc(1, (size_t)j->bytes + 1);
    for (int i = 0; i < j->calls; i++) {
        if (!strcmp(j->coll, "barrier")) j->v->barrier(j->comm);
        else j->v->bcast(buf, j->bytes, MPI_BYTE, i % j->ranks, j->comm); /* rotating root */
    }
    free(buf);
    return NULL;
}

/* --team: thread 0 makes `calls` team Bcasts, Allreduces (of doubles) or Alltoallvs (`bytes`
 * to every rank) of `bytes`, helped by threads-1 threads. */
enum team_kind { TEAM_BCAST, TEAM_ALLREDUCE, TEAM_ALLTOALLV };

typedef struct team_helper {
    nodecoll_team team;
    int thread, calls;
    enum team_kind kind;
} team_helper;

static int a2a_counts[1024], a2a_displs[1024]; /* uniform Alltoallv: `bytes` per rank */

static int team_call(nodecoll_team team, int thread, enum team_kind kind, char *in, char *out, int bytes)
{
    switch (kind) {
    case TEAM_ALLREDUCE:
        return nodecoll_team_allreduce(team, thread, in, out, bytes / 8, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    case TEAM_ALLTOALLV:
        return nodecoll_team_alltoallv(team, thread, in, a2a_counts, a2a_displs, MPI_BYTE, out, a2a_counts,
                                       a2a_displs, MPI_BYTE, MPI_COMM_WORLD);
    default: return nodecoll_team_bcast(team, thread, in, bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
    }
}

static int host_call(enum team_kind kind, char *in, char *out, int bytes)
{
    switch (kind) {
    case TEAM_ALLREDUCE: return PMPI_Allreduce(in, out, bytes / 8, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    case TEAM_ALLTOALLV:
        return PMPI_Alltoallv(in, a2a_counts, a2a_displs, MPI_BYTE, out, a2a_counts, a2a_displs, MPI_BYTE,
                              MPI_COMM_WORLD);
    default: return PMPI_Bcast(in, bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
    }
}

static void *serve_team(void *arg)
{
    team_helper *h = arg;
    for (int i = 0; i < h->calls; i++) team_call(h->team, h->thread, h->kind, NULL, NULL, 0);
    return NULL;
}

static double slowest_rank(double mine)
{
    double slowest = 0;
    PMPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return slowest;
}

static double time_team(int threads, int calls, int bytes, enum team_kind kind, char *in, char *out)
{
    nodecoll_team team;
    pthread_t tid[64];
    team_helper helpers[64];
    nodecoll_team_create(threads, &team);
    for (int t = 1; t < threads; t++) {
        helpers[t] = (team_helper){team, t, calls, kind};
        pthread_create(&tid[t], NULL, serve_team, &helpers[t]);
    }
    PMPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < calls; i++) team_call(team, 0, kind, in, out, bytes);
    double mine = MPI_Wtime() - t0;
    for (int t = 1; t < threads; t++) pthread_join(tid[t], NULL);
    nodecoll_team_free(&team);
    return slowest_rank(mine) / calls;
}

static double time_host(int calls, int bytes, enum team_kind kind, char *in, char *out)
{
    PMPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < calls; i++) host_call(kind, in, out, bytes);
    return slowest_rank(MPI_Wtime() - t0) / calls;
}

static double median(double *v, int n);

/* Microseconds per team call for 1..max_threads threads, against the host's call. */
static void team_sweep(const char *coll, int max_threads, int calls, int bytes, int rounds, int rank)
{
    enum team_kind kind = !strcmp(coll, "allreduce") ? TEAM_ALLREDUCE
                          : !strcmp(coll, "alltoallv") ? TEAM_ALLTOALLV : TEAM_BCAST;
    int ranks = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    for (int i = 0; i < ranks && i < 1024; i++) a2a_counts[i] = bytes, a2a_displs[i] = i * bytes;
    size_t room = (size_t)bytes * (kind == TEAM_ALLTOALLV ? (size_t)ranks : 1) + 8;
    char *in = calloc(1, room), *out = calloc(1, room);
    double host[99], one = 0;
    for (int r = 0; r < rounds; r++) host[r] = time_host(calls, bytes, kind, in, out);
    if (!rank)
        printf("# team %s %d B, %d calls, median of %d rounds; host %s %.1f us\n"
               "# threads   us/call   vs 1 thread   x host\n", coll, bytes, calls, rounds, coll,
               1e6 * median(host, rounds));
    for (int threads = 1; threads <= max_threads; threads *= 2) {
        double secs[99];
        for (int r = 0; r < rounds; r++) secs[r] = time_team(threads, calls, bytes, kind, in, out);
        double us = 1e6 * median(secs, rounds);
        if (threads == 1) one = us;
        if (!rank) printf("  %7d  %8.1f   %9.2fx   %6.2fx\n", threads, us, one / us, 1e6 * median(host, rounds) / us);
    }
    free(in);
    free(out);
}

/* Seconds for `threads` threads to make `calls` calls each; the slowest rank counts. */
static double time_threads(const variant *v, MPI_Comm *comms, int threads, int calls, int bytes, const char *coll,
                           int ranks)
{
    pthread_t tid[64];
    job jobs[64];
    PMPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int t = 0; t < threads; t++) {
        jobs[t] = (job){v, comms[t], calls, bytes, ranks, coll};
        pthread_create(&tid[t], NULL, run_job, &jobs[t]);
    }
    for (int t = 0; t < threads; t++) pthread_join(tid[t], NULL);
    return slowest_rank(MPI_Wtime() - t0);
}

static void usage(void)
{
    printf("usage: mpirun -np P nodecoll-bench-threads [--coll bcast|barrier|allreduce|alltoallv] [--bytes N]\n"
           "                     [--calls N] [--max-threads T] [--rounds R] [--team]\n"
           "Aggregate calls/s of T threads per rank, each on its own communicator, nodecoll\n"
           "against the host MPI (median of R alternating rounds; slowest rank).\n"
           "--team: instead, time per call of a team of T threads per rank\n"
           "(nodecoll_team_bcast; --coll allreduce: nodecoll_team_allreduce on doubles;\n"
           "--coll alltoallv: nodecoll_team_alltoallv, --bytes to every rank)\n"
           "against one thread and against the host's call.\n");
}

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof v[0], compare_double);
    return v[n / 2];
}

int main(int argc, char **argv)
{
    const char *coll = "bcast";
    int bytes = 8, calls = 2000, max_threads = 4, rounds = 5, team = 0, provided, rank, size;
    for (int i = 1; i < argc; i++) {
        const char *next = i + 1 < argc ? argv[i + 1] : "";
        if (!strcmp(argv[i], "--coll")) coll = argv[++i];
        else if (!strcmp(argv[i], "--bytes")) bytes = atoi(next), i++;
        else if (!strcmp(argv[i], "--calls")) calls = atoi(next), i++;
        else if (!strcmp(argv[i], "--max-threads")) max_threads = atoi(next), i++;
        else if (!strcmp(argv[i], "--rounds")) rounds = atoi(next), i++;
        else if (!strcmp(argv[i], "--team")) team = 1;
        else { usage(); return strcmp(argv[i], "--help") && strcmp(argv[i], "-h") ? 2 : 0; }
    }
    int known = !strcmp(coll, "bcast") || (team ? !strcmp(coll, "allreduce") || !strcmp(coll, "alltoallv")
                                                 : !strcmp(coll, "barrier"));
    if (!known || max_threads < 1 || max_threads > 64 || rounds < 1 || rounds > 99) { usage(); return 2; }
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (provided < MPI_THREAD_MULTIPLE) {
        if (!rank) fprintf(stderr, "nodecoll-bench-threads: no MPI_THREAD_MULTIPLE\n");
        MPI_Finalize();
        return 1;
    }
    if (team) {
        team_sweep(coll, max_threads, calls, bytes, rounds, rank);
        MPI_Finalize();
        return 0;
    }
    MPI_Comm comms[64];
    for (int t = 0; t < max_threads; t++) MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]);
    for (int t = 0; t < max_threads; t++) run_job(&(job){&variants[0], comms[t], 10, bytes, size, coll}); /* set up */
    if (!rank)
        printf("# %s %d B, %d ranks, %d calls per thread, median of %d rounds\n"
               "# threads   nodecoll calls/s  scaling   host calls/s  scaling   x host\n",
               coll, bytes, size, calls, rounds);
    double base[2] = {0, 0};
    for (int threads = 1; threads <= max_threads; threads *= 2) {
        double rate[2];
        for (int v = 0; v < 2; v++) {
            double secs[99];
            for (int r = 0; r < rounds; r++) secs[r] = time_threads(&variants[v], comms, threads, calls, bytes, coll, size);
            rate[v] = threads * (double)calls / median(secs, rounds);
            if (threads == 1) base[v] = rate[v];
        }
        if (!rank)
            printf("  %7d   %16.0f  %6.2fx   %12.0f  %6.2fx  %6.2fx\n", threads, rate[0], rate[0] / base[0],
                   rate[1], rate[1] / base[1], rate[0] / rate[1]);
    }
    for (int t = 0; t < max_threads; t++) MPI_Comm_free(&comms[t]);
    MPI_Finalize();
    return 0;
}
