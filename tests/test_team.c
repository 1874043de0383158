/* Thread teams: 1 to 4 threads of every rank carry out each collective together
 * (nodecoll_team_*), and the result must equal the host MPI's (PMPI_*) byte for byte.
 * Thread 0 is the main thread and the only one calling MPI (MPI_THREAD_FUNNELED). */
#include <pthread.h>

#include "common.h"

typedef struct helper {
    nodecoll_team team;
    int thread, calls, result_errors;
} helper;

static void *serve(void *arg)
{
    helper *h = arg;
    for (int i = 0; i < h->calls; i++)
        if (nodecoll_team_bcast(h->team, h->thread, NULL, 0, MPI_BYTE, 0, MPI_COMM_WORLD) != MPI_SUCCESS)
            h->result_errors++;
    return NULL;
}

static size_t random_size(uint64_t *rng)
{
    switch (t_rand(rng) % 4) {
    case 0: return t_rand(rng) % 300;
    case 1: return t_rand(rng) % (64 << 10);
    case 2: return t_rand(rng) % (1 << 20);
    default: return t_rand(rng) % (6 << 20);
    }
}

static void run_team(int threads, int calls, uint64_t *rng, unsigned char *a, unsigned char *b)
{
    nodecoll_team team;
    T_CHECK(nodecoll_team_create(threads, &team) == MPI_SUCCESS, "team_create(%d)", threads);
    helper helpers[4];
    pthread_t tid[4];
    for (int i = 1; i < threads; i++) {
        helpers[i] = (helper){team, i, calls, 0};
        pthread_create(&tid[i], NULL, serve, &helpers[i]);
    }
    for (int call = 0; call < calls; call++) {
        size_t bytes = random_size(rng);
        int root = (int)(t_rand(rng) % (uint64_t)t_size);
        uint64_t seed = t_rand(rng);
        for (size_t i = 0; i < bytes; i++) a[i] = t_rank == root ? (unsigned char)t_rand(&seed) : 0xEE;
        memcpy(b, a, bytes);
        T_CHECK(nodecoll_team_bcast(team, 0, a, (int)bytes, MPI_BYTE, root, MPI_COMM_WORLD) == MPI_SUCCESS,
                "team_bcast error");
        PMPI_Bcast(b, (int)bytes, MPI_BYTE, root, MPI_COMM_WORLD);
        T_CHECK(!memcmp(a, b, bytes), "team of %d: Bcast of %zu bytes from %d differs from PMPI_Bcast", threads,
                bytes, root);
    }
    for (int i = 1; i < threads; i++) {
        pthread_join(tid[i], NULL);
        T_CHECK(!helpers[i].result_errors, "helper %d returned errors", i);
    }
    nodecoll_team_free(&team);
    T_CHECK(team == NULL, "team_free leaves the handle set");
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &t_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &t_size);
    unsigned char *a = malloc(6 << 20), *b = malloc(6 << 20);
    uint64_t rng = 77;
    for (int threads = 1; threads <= 4; threads++) run_team(threads, t_scale(40), &rng, a, b);

    /* Bad input: an MPI error class through the error handler, nothing hangs. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    nodecoll_team team;
    int err = nodecoll_team_create(0, &team), cls;
    MPI_Error_class(err, &cls);
    T_CHECK(cls == MPI_ERR_ARG, "team_create(0) gives class %d", cls);
    err = nodecoll_team_bcast(NULL, 0, a, 1, MPI_BYTE, 0, MPI_COMM_WORLD);
    MPI_Error_class(err, &cls);
    T_CHECK(cls == MPI_ERR_ARG, "null team gives class %d", cls);
    nodecoll_team_create(2, &team);
    err = nodecoll_team_bcast(team, 2, a, 1, MPI_BYTE, 0, MPI_COMM_WORLD);
    MPI_Error_class(err, &cls);
    T_CHECK(cls == MPI_ERR_ARG, "thread index out of range gives class %d", cls);
    nodecoll_team_free(&team);
    free(a);
    free(b);
    return t_finish("test_team");
}
