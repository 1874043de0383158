/* MPI_THREAD_MULTIPLE: several threads of every rank run collectives at the same time, each
 * on its own communicator, and every accelerated call is repeated through PMPI on the same
 * communicator and compared.  Each thread also replaces its communicator now and then (dup,
 * then free the old one), so states are created and destroyed while other threads keep
 * calling, and a freed handle that the MPI reuses must never find an old state. */
#include <pthread.h>
#include <stdatomic.h>

#include "common.h"

#define THREADS 4

static _Atomic int thread_failures;
static int calls_per_thread;

typedef struct worker {
    int id;
    MPI_Comm comm;
} worker;

static void worker_fail(const worker *w, int call, const char *what)
{
    fprintf(stderr, "FAIL [rank %d, thread %d, call %d]: %s\n", t_rank, w->id, call, what);
    atomic_fetch_add(&thread_failures, 1);
}

static void fill(unsigned char *buf, size_t bytes, uint64_t seed)
{
    for (size_t i = 0; i < bytes; i++) buf[i] = (unsigned char)t_rand(&seed);
}

/* The nodecoll Bcast in a form every rank draws alike: blocking, or nonblocking completed by
 * MPI_Wait or by an MPI_Test loop (other threads' operations progress meanwhile). */
static int nodecoll_bcast(unsigned char *a, size_t bytes, int root, MPI_Comm comm, int form)
{
    if (form == 0) return MPI_Bcast(a, (int)bytes, MPI_BYTE, root, comm);
    MPI_Request req;
    int err = MPI_Ibcast(a, (int)bytes, MPI_BYTE, root, comm, &req), done = 0;
    if (err != MPI_SUCCESS) return err;
    if (form == 1) return MPI_Wait(&req, MPI_STATUS_IGNORE);
    while (!done && err == MPI_SUCCESS) err = MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    return err;
}

/* One Bcast of a size and root every rank draws alike: the nodecoll result must equal the
 * PMPI result byte for byte. */
static void check_bcast(const worker *w, int call, uint64_t *rng, unsigned char *a, unsigned char *b)
{
    size_t bytes = t_rand(rng) % 3 == 0 ? t_rand(rng) % (256 << 10) : t_rand(rng) % 200;
    int root = (int)(t_rand(rng) % (uint64_t)t_size);
    uint64_t seed = t_rand(rng);
    memset(a, 0xA5, bytes);
    memset(b, 0x5A, bytes);
    if (t_rank == root) {
        fill(a, bytes, seed);
        memcpy(b, a, bytes);
    }
    if (nodecoll_bcast(a, bytes, root, w->comm, (int)(t_rand(rng) % 3)) != MPI_SUCCESS)
        worker_fail(w, call, "MPI_Bcast error");
    if (PMPI_Bcast(b, (int)bytes, MPI_BYTE, root, w->comm) != MPI_SUCCESS) worker_fail(w, call, "PMPI_Bcast error");
    if (memcmp(a, b, bytes)) worker_fail(w, call, "Bcast result differs from PMPI_Bcast");
}

/* Barrier: no rank may leave before all have entered; a shared-memory counter would need a
 * window per thread, so the check is that PMPI sees every rank at the same call index. */
static void check_barrier(const worker *w, int call)
{
    if (MPI_Barrier(w->comm) != MPI_SUCCESS) worker_fail(w, call, "MPI_Barrier error");
    int mine = call, low = 0, high = 0;
    PMPI_Allreduce(&mine, &low, 1, MPI_INT, MPI_MIN, w->comm);
    PMPI_Allreduce(&mine, &high, 1, MPI_INT, MPI_MAX, w->comm);
    if (low != high) worker_fail(w, call, "ranks at different calls after a Barrier");
}

static void *run_worker(void *arg)
{
    worker *w = arg;
    uint64_t rng = 1000 + (uint64_t)w->id; /* the same draws on every rank */
    unsigned char *a = malloc(256 << 10), *b = malloc(256 << 10);
    for (int call = 0; call < calls_per_thread; call++) {
        if (t_rand(&rng) % 4 == 0) check_barrier(w, call);
        else check_bcast(w, call, &rng, a, b);
        if (call % 50 == 49) {
            MPI_Comm fresh;
            MPI_Comm_dup(w->comm, &fresh);
            MPI_Comm_free(&w->comm);
            w->comm = fresh;
            MPI_Barrier(w->comm); /* (sets it up: nonblocking calls do not) */
        }
    }
    free(a);
    free(b);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &t_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &t_size);
    if (provided < MPI_THREAD_MULTIPLE) {
        if (t_rank == 0) printf("test_threads: the MPI does not provide MPI_THREAD_MULTIPLE\n");
        MPI_Finalize();
        return 1;
    }
    calls_per_thread = t_scale(600);
    worker workers[THREADS];
    pthread_t threads[THREADS];
    for (int i = 0; i < THREADS; i++) {
        workers[i].id = i;
        MPI_Comm_dup(MPI_COMM_WORLD, &workers[i].comm);
        MPI_Barrier(workers[i].comm);
    }
    for (int i = 0; i < THREADS; i++) pthread_create(&threads[i], NULL, run_worker, &workers[i]);
    for (int i = 0; i < THREADS; i++) pthread_join(threads[i], NULL);
    for (int i = 0; i < THREADS; i++) MPI_Comm_free(&workers[i].comm);
    t_failures += atomic_load(&thread_failures);
    uint64_t accelerated = nodecoll_stat_calls("bcast", "shm") + nodecoll_stat_calls("bcast", "cma") +
                           nodecoll_stat_calls("bcast", "bridge");
    if (t_size > 1 && (accelerated == 0 || nodecoll_stat_calls("bcast", "pmpi:*") != 0))
        t_fail("Bcast calls went to the host MPI");
    return t_finish("test_threads");
}
