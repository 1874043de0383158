/* Nonblocking calls that repeat the one before them on the same arguments restart its request
 * (its plan and descriptions kept: src/mpi/request.c, "repeated nonblocking calls").  Against
 * the host's blocking calls, with new data in the same buffers every time:
 * - Ibcast, Iallreduce, Ireduce, Igather, Iscatter, Iallgather, Ialltoall repeated many
 *   times, one call kind after another, then
 *   interleaved (each call kind keeps its own request), then two Iallreduces on different
 *   buffers alternating (a call that differs releases the kept request);
 * - several repeated calls outstanding at once on duplicates of the world;
 * - a repeated request freed while active (MPI_Request_free), then the next repetition;
 * - a duplicate freed while a request is kept on it, then a new duplicate (whose handle the
 *   host may give the same value) used the same way;
 * - calls whose request is never kept (a derived datatype, a user op) among the others.
 * With nodecoll serving (2 ranks and more) the repetitions must be counted as restarts
 * (`requests repeated`): a test that passes without them would not test them. */
#include "common.h"

#define COUNT 37
static int ROUNDS = 200; /* (t_scale'd: oversubscribed MPICH takes ~8 ms per host call) */

static void fill(double *x, int n, int round, int salt)
{
    for (int i = 0; i < n; i++) x[i] = (double)((round * 31 + i * 7 + salt * 13 + t_rank * 101) % 977);
}

static int same(const double *a, const double *b, int n) { return !memcmp(a, b, sizeof(double) * (size_t)n); }

/* One call of `kind` on comm with the buffers below, nonblocking and completed, compared with
 * the host's blocking call on copies. */
enum { K_BCAST, K_ALLREDUCE, K_REDUCE, K_GATHER, K_SCATTER, K_ALLGATHER, K_ALLTOALL, K_KINDS };
static const char *kind_names[] = {"Ibcast", "Iallreduce", "Ireduce", "Igather", "Iscatter", "Iallgather", "Ialltoall"};

#define MAX_RANKS 8
#define ELEMS (COUNT * MAX_RANKS)
typedef struct bufs {
    double send[ELEMS], recv[ELEMS], want_send[ELEMS], want[ELEMS];
} bufs;

static void start(int kind, bufs *b, MPI_Comm comm, MPI_Request *q)
{
    switch (kind) {
    case K_BCAST: MPI_Ibcast(b->recv, COUNT, MPI_DOUBLE, 1 % t_size, comm, q); break;
    case K_ALLREDUCE: MPI_Iallreduce(b->send, b->recv, COUNT, MPI_DOUBLE, MPI_SUM, comm, q); break;
    case K_REDUCE: MPI_Ireduce(b->send, b->recv, COUNT, MPI_DOUBLE, MPI_MAX, 0, comm, q); break;
    case K_GATHER: MPI_Igather(b->send, COUNT, MPI_DOUBLE, b->recv, COUNT, MPI_DOUBLE, 0, comm, q); break;
    case K_SCATTER: MPI_Iscatter(b->send, COUNT, MPI_DOUBLE, b->recv, COUNT, MPI_DOUBLE, 1 % t_size, comm, q); break;
    case K_ALLGATHER: MPI_Iallgather(b->send, COUNT, MPI_DOUBLE, b->recv, COUNT, MPI_DOUBLE, comm, q); break;
    default: MPI_Ialltoall(b->send, COUNT, MPI_DOUBLE, b->recv, COUNT, MPI_DOUBLE, comm, q); break;
    }
}

static void expect(int kind, bufs *b, MPI_Comm comm)
{
    switch (kind) {
    case K_BCAST: PMPI_Bcast(b->want, COUNT, MPI_DOUBLE, 1 % t_size, comm); break;
    case K_ALLREDUCE: PMPI_Allreduce(b->want_send, b->want, COUNT, MPI_DOUBLE, MPI_SUM, comm); break;
    case K_REDUCE: PMPI_Reduce(b->want_send, b->want, COUNT, MPI_DOUBLE, MPI_MAX, 0, comm); break;
    case K_GATHER: PMPI_Gather(b->want_send, COUNT, MPI_DOUBLE, b->want, COUNT, MPI_DOUBLE, 0, comm); break;
    case K_SCATTER: PMPI_Scatter(b->want_send, COUNT, MPI_DOUBLE, b->want, COUNT, MPI_DOUBLE, 1 % t_size, comm); break;
    case K_ALLGATHER: PMPI_Allgather(b->want_send, COUNT, MPI_DOUBLE, b->want, COUNT, MPI_DOUBLE, comm); break;
    default: PMPI_Alltoall(b->want_send, COUNT, MPI_DOUBLE, b->want, COUNT, MPI_DOUBLE, comm); break;
    }
}

/* New data for round r, in the user's buffers and the host's copies alike. */
static void prepare(int kind, bufs *b, int round, int salt)
{
    fill(b->send, ELEMS, round, salt);
    memcpy(b->want_send, b->send, sizeof b->send);
    if (kind == K_BCAST) fill(b->recv, COUNT, round, salt + 1); /* (the root's data; others' overwritten) */
    else memset(b->recv, 0, sizeof b->recv);
    memcpy(b->want, b->recv, sizeof b->recv);
}

static void check(int kind, const bufs *b, const char *what, int round)
{
    int defined = (kind != K_REDUCE && kind != K_GATHER) || t_rank == 0;
    int n = kind == K_GATHER || kind == K_ALLGATHER || kind == K_ALLTOALL ? COUNT * t_size : COUNT;
    T_CHECK(!defined || same(b->recv, b->want, n), "%s: %s round %d differs from the host's", what,
            kind_names[kind], round);
}

static void run(int kind, bufs *b, MPI_Comm comm, int round, int salt, const char *what)
{
    MPI_Request q;
    prepare(kind, b, round, salt);
    start(kind, b, comm, &q);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    T_CHECK(q == MPI_REQUEST_NULL, "%s: the request was not freed", what);
    expect(kind, b, comm);
    check(kind, b, what, round);
}

static uint64_t repeated(void) { return nodecoll_stat_calls("requests", "repeated"); }

/* Calls of the kind's collective that nodecoll handed to the host for want of single copy
 * (NODECOLL_CMA=off without the shared heap, for the data-movement family): those have no
 * request of nodecoll's to restart. */
static uint64_t left_to_host(int kind)
{
    return nodecoll_stat_calls(kind_names[kind] + 1, "pmpi:no-cma"); /* ("Igather": the counters' "gather") */
}

static void one_kind_after_another(bufs *b)
{
    for (int kind = 0; kind < K_KINDS; kind++) {
        uint64_t before = repeated(), host_before = left_to_host(kind);
        for (int round = 0; round < ROUNDS; round++) run(kind, b, MPI_COMM_WORLD, round, kind, "alone");
        if (t_size > 1 && left_to_host(kind) == host_before)
            T_CHECK(repeated() - before >= (uint64_t)ROUNDS - 1, "%s: %llu of %d repetitions restarted", kind_names[kind],
                    (unsigned long long)(repeated() - before), ROUNDS - 1);
    }
    for (int round = 0; round < ROUNDS; round++) run(round % K_KINDS, b, MPI_COMM_WORLD, round, 7, "interleaved");
}

/* Two calls that differ only in their buffers, alternating: each releases the other's. */
static void alternating(bufs *b, bufs *c)
{
    for (int round = 0; round < ROUNDS / 3; round++) run(K_ALLREDUCE, round % 2 ? b : c, MPI_COMM_WORLD, round, 3, "alternating");
}

/* Repeated calls outstanding at once on four duplicates (a kind each), completed in reverse
 * order or by MPI_Waitall. */
#define OUTSTANDING 4
static void outstanding(bufs *b)
{
    static const int kinds[OUTSTANDING] = {K_ALLREDUCE, K_BCAST, K_ALLGATHER, K_ALLTOALL};
    MPI_Comm dup[OUTSTANDING];
    for (int i = 0; i < OUTSTANDING; i++) MPI_Comm_dup(MPI_COMM_WORLD, &dup[i]);
    for (int round = 0; round < ROUNDS / 3; round++) {
        MPI_Request q[OUTSTANDING];
        for (int i = 0; i < OUTSTANDING; i++) {
            prepare(kinds[i], &b[i], round, 11 + i);
            start(kinds[i], &b[i], dup[i], &q[i]);
        }
        MPI_Status statuses[OUTSTANDING];
        if (round % 2) MPI_Waitall(OUTSTANDING, q, statuses);
        else
            for (int i = OUTSTANDING - 1; i >= 0; i--) MPI_Wait(&q[i], MPI_STATUS_IGNORE);
        for (int i = 0; i < OUTSTANDING; i++) {
            expect(kinds[i], &b[i], dup[i]);
            check(kinds[i], &b[i], "outstanding", round);
        }
    }
    for (int i = 0; i < OUTSTANDING; i++) MPI_Comm_free(&dup[i]);
}

/* A repetition freed while active still delivers (nodecoll completes it; the next call on the
 * communicator orders after it), and the call after it is served again. */
static void freed_while_active(bufs *b)
{
    for (int round = 0; round < 20; round++) {
        MPI_Request q;
        prepare(K_ALLREDUCE, b, round, 5);
        start(K_ALLREDUCE, b, MPI_COMM_WORLD, &q);
        if (t_size > 1 && round % 4 == 3) {
            MPI_Request_free(&q);
            MPI_Barrier(MPI_COMM_WORLD); /* (a blocking call: the freed operation is complete after it) */
        } else {
            MPI_Wait(&q, MPI_STATUS_IGNORE);
        }
        expect(K_ALLREDUCE, b, MPI_COMM_WORLD);
        check(K_ALLREDUCE, b, "freed while active", round);
    }
}

/* A duplicate freed while its request is kept; a new one (perhaps with the same handle). */
static void freed_communicators(bufs *b)
{
    for (int life = 0; life < 6; life++) {
        MPI_Comm dup;
        MPI_Comm_dup(MPI_COMM_WORLD, &dup);
        for (int round = 0; round < 10; round++) run(life % K_KINDS, b, dup, round, life, "freed communicator");
        MPI_Comm_free(&dup);
    }
}

/* Calls whose requests are never kept, between repetitions of one that is. */
static void sum_doubles(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    for (int i = 0; i < *len; i++) ((double *)inout)[i] += ((double *)in)[i];
}

static void never_kept(bufs *b)
{
    MPI_Op op;
    MPI_Datatype pair;
    MPI_Op_create(sum_doubles, 1, &op);
    MPI_Type_contiguous(2, MPI_DOUBLE, &pair);
    MPI_Type_commit(&pair);
    for (int round = 0; round < 40; round++) {
        MPI_Request q;
        prepare(round % 3 == 2 ? K_BCAST : K_ALLREDUCE, b, round, 9);
        if (round % 3 == 1) MPI_Iallreduce(b->send, b->recv, COUNT, MPI_DOUBLE, op, MPI_COMM_WORLD, &q);
        else if (round % 3 == 2) MPI_Ibcast(b->recv, COUNT / 2, pair, 1 % t_size, MPI_COMM_WORLD, &q);
        else start(K_ALLREDUCE, b, MPI_COMM_WORLD, &q);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        if (round % 3 == 2) PMPI_Bcast(b->want, COUNT / 2, pair, 1 % t_size, MPI_COMM_WORLD);
        else PMPI_Allreduce(b->want_send, b->want, COUNT, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        T_CHECK(same(b->recv, b->want, COUNT), "never kept: round %d differs from the host's", round);
    }
    MPI_Type_free(&pair);
    MPI_Op_free(&op);
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv);
    static bufs b[OUTSTANDING];
    if (t_size > MAX_RANKS) return t_finish("test_repeated"); /* (buffers for 8 ranks) */
    ROUNDS = t_scale(ROUNDS) < 12 ? 12 : t_scale(ROUNDS);
    MPI_Barrier(MPI_COMM_WORLD); /* (sets the world up: nonblocking calls before it go to the host) */
    one_kind_after_another(&b[0]);
    alternating(&b[0], &b[1]);
    outstanding(b);
    freed_while_active(&b[0]);
    freed_communicators(&b[0]);
    never_kept(&b[0]);
    return t_finish("test_repeated");
}
