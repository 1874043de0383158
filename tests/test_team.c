/* Thread teams: 1 to 4 threads of every rank carry out each collective together
 * (nodecoll_team_*), and the result must equal the host MPI's (PMPI_*) byte for byte.
 * Thread 0 is the main thread and the only one calling MPI (MPI_THREAD_FUNNELED); the
 * helpers call the same team functions in the same order with their own index. */
#include <pthread.h>

#include "common.h"

enum { K_BCAST, K_ALLREDUCE, K_ALLGATHER, K_ALLTOALLV, K_KINDS };
static const char *kind_names[] = {"bcast", "allreduce", "allgather", "alltoallv"};

#define MAX_BYTES (6 << 20)

typedef struct team_case {
    int kind, root;
    size_t bytes; /* per rank (allgather), per pair at most (alltoallv), total otherwise */
    uint64_t seed;
} team_case;

typedef struct helper {
    nodecoll_team team;
    int thread, ncases, errors;
    const team_case *cases;
} helper;

/* The call every thread of the team makes; the helpers' buffer arguments are ignored. */
static int team_call(nodecoll_team team, int thread, int kind, void **bufs, int count, const int *counts)
{
    MPI_Comm w = MPI_COMM_WORLD;
    const int *d = counts ? counts + t_size : NULL;
    switch (kind) {
    case K_BCAST: return nodecoll_team_bcast(team, thread, bufs[0], count, MPI_BYTE, counts ? counts[0] : 0, w);
    case K_ALLREDUCE: return nodecoll_team_allreduce(team, thread, bufs[0], bufs[1], count, MPI_INT64_T, MPI_SUM, w);
    case K_ALLGATHER: return nodecoll_team_allgather(team, thread, bufs[0], count, MPI_BYTE, bufs[1], count, MPI_BYTE, w);
    default:
        return nodecoll_team_alltoallv(team, thread, bufs[0], counts, d, MPI_BYTE, bufs[1],
                                       counts ? counts + 2 * t_size : NULL, counts ? counts + 3 * t_size : NULL,
                                       MPI_BYTE, w);
    }
}

static void *serve(void *arg)
{
    helper *h = arg;
    void *none[2] = {NULL, NULL};
    for (int i = 0; i < h->ncases; i++)
        if (team_call(h->team, h->thread, h->cases[i].kind, none, 0, NULL) != MPI_SUCCESS) h->errors++;
    return NULL;
}

/* Bytes rank `from` sends to rank `to` in an alltoallv case (some pairs send nothing). */
static int pair_bytes(const team_case *c, int from, int to)
{
    uint64_t s = c->seed ^ ((uint64_t)from * 1315423911u + (uint64_t)to * 2654435761u);
    uint64_t r = t_rand(&s);
    return r % 5 == 0 ? 0 : (int)(r % (c->bytes + 1));
}

static void fill(unsigned char *p, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++) p[i] = (unsigned char)t_rand(&seed);
}

/* Runs one case through the team and through PMPI; 1 if the results agree. */
static int run_case(nodecoll_team team, const team_case *c, unsigned char **a, unsigned char **b)
{
    int count = 0, counts[4 * 64], nc_err, same = 1;
    void *mine[2] = {a[0], a[1]};
    size_t out_bytes = 0;
    switch (c->kind) {
    case K_BCAST:
        count = (int)c->bytes;
        counts[0] = c->root;
        fill(a[0], c->bytes, t_rank == c->root ? c->seed : c->seed + 1);
        memcpy(b[0], a[0], c->bytes);
        nc_err = team_call(team, 0, c->kind, mine, count, counts);
        PMPI_Bcast(b[0], count, MPI_BYTE, c->root, MPI_COMM_WORLD);
        return nc_err == MPI_SUCCESS && !memcmp(a[0], b[0], c->bytes);
    case K_ALLREDUCE:
        count = (int)(c->bytes / 8);
        fill(a[0], (size_t)count * 8, c->seed + (uint64_t)t_rank);
        nc_err = team_call(team, 0, c->kind, mine, count, NULL);
        PMPI_Allreduce(a[0], b[1], count, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
        out_bytes = (size_t)count * 8;
        break;
    case K_ALLGATHER:
        count = (int)c->bytes;
        fill(a[0], c->bytes, c->seed + (uint64_t)t_rank);
        nc_err = team_call(team, 0, c->kind, mine, count, NULL);
        PMPI_Allgather(a[0], count, MPI_BYTE, b[1], count, MPI_BYTE, MPI_COMM_WORLD);
        out_bytes = c->bytes * (size_t)t_size;
        break;
    default: { /* alltoallv, blocks in reverse order with gaps */
        int soff = 0, roff = 0;
        for (int r = t_size - 1; r >= 0; r--) {
            counts[r] = pair_bytes(c, t_rank, r);
            counts[t_size + r] = soff;
            soff += counts[r] + 7;
            counts[2 * t_size + r] = pair_bytes(c, r, t_rank);
            counts[3 * t_size + r] = roff;
            roff += counts[2 * t_size + r] + 3;
        }
        fill(a[0], (size_t)soff, c->seed + (uint64_t)t_rank);
        memset(a[1], 0xEE, (size_t)roff);
        memset(b[1], 0xEE, (size_t)roff);
        nc_err = team_call(team, 0, c->kind, mine, 0, counts);
        PMPI_Alltoallv(a[0], counts, counts + t_size, MPI_BYTE, b[1], counts + 2 * t_size, counts + 3 * t_size,
                       MPI_BYTE, MPI_COMM_WORLD);
        out_bytes = (size_t)roff;
    }
    }
    same = nc_err == MPI_SUCCESS && !memcmp(a[1], b[1], out_bytes);
    return same;
}

static void run_team(int threads, int ncases, uint64_t *rng, unsigned char **a, unsigned char **b)
{
    team_case *cases = calloc((size_t)ncases, sizeof *cases);
    for (int i = 0; i < ncases; i++) {
        cases[i].kind = (int)(t_rand(rng) % K_KINDS);
        size_t limit = cases[i].kind == K_BCAST || cases[i].kind == K_ALLREDUCE ? MAX_BYTES : MAX_BYTES / 8 / (size_t)t_size;
        size_t choice = t_rand(rng) % 3;
        cases[i].bytes = t_rand(rng) % (choice == 0 ? 300 : choice == 1 ? (64 << 10) : limit);
        cases[i].root = (int)(t_rand(rng) % (uint64_t)t_size);
        cases[i].seed = t_rand(rng);
    }
    nodecoll_team team;
    T_CHECK(nodecoll_team_create(threads, &team) == MPI_SUCCESS, "team_create(%d)", threads);
    helper helpers[4];
    pthread_t tid[4];
    for (int i = 1; i < threads; i++) {
        helpers[i] = (helper){team, i, ncases, 0, cases};
        pthread_create(&tid[i], NULL, serve, &helpers[i]);
    }
    for (int i = 0; i < ncases; i++)
        T_CHECK(run_case(team, &cases[i], a, b), "team of %d: %s of %zu bytes (root %d) differs from PMPI", threads,
                kind_names[cases[i].kind], cases[i].bytes, cases[i].root);
    for (int i = 1; i < threads; i++) {
        pthread_join(tid[i], NULL);
        T_CHECK(!helpers[i].errors, "helper %d returned errors", i);
    }
    nodecoll_team_free(&team);
    T_CHECK(team == NULL, "team_free leaves the handle set");
    free(cases);
}

static void check_bad_input(unsigned char *buf)
{
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    nodecoll_team team;
    int err = nodecoll_team_create(0, &team), cls;
    MPI_Error_class(err, &cls);
    T_CHECK(cls == MPI_ERR_ARG, "team_create(0) gives class %d", cls);
    err = nodecoll_team_bcast(NULL, 0, buf, 1, MPI_BYTE, 0, MPI_COMM_WORLD);
    MPI_Error_class(err, &cls);
    T_CHECK(cls == MPI_ERR_ARG, "null team gives class %d", cls);
    nodecoll_team_create(2, &team);
    err = nodecoll_team_bcast(team, 2, buf, 1, MPI_BYTE, 0, MPI_COMM_WORLD);
    MPI_Error_class(err, &cls);
    T_CHECK(cls == MPI_ERR_ARG, "thread index out of range gives class %d", cls);
    nodecoll_team_free(&team);
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &t_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &t_size);
    unsigned char *a[2] = {malloc(MAX_BYTES + 4096), malloc(MAX_BYTES + 4096)};
    unsigned char *b[2] = {malloc(MAX_BYTES + 4096), malloc(MAX_BYTES + 4096)};
    uint64_t rng = 77;
    for (int threads = 1; threads <= 4; threads++) run_team(threads, t_scale(40), &rng, a, b);
    check_bad_input(a[0]);
    for (int i = 0; i < 2; i++) {
        free(a[i]);
        free(b[i]);
    }
    return t_finish("test_team");
}
