/* A nonblocking reduction whose request the user frees while it is active, followed at once
 * by MPI_Finalize.  MPI calls freeing an active nonblocking collective's request erroneous
 * (both hosts refuse it); nodecoll accepts it and completes the operation, as MPI does for
 * point-to-point requests, so its result must be in the receive buffer once MPI_Finalize
 * returns, on every rank, and nodecoll must have served it (at 2 ranks and more: alone, a
 * rank's call goes to the host, which refuses the free).
 * T_GAPPED=1 (the default): a user op on a type with gaps (its result is delivered from a
 * layout copy); T_GAPPED=0: MPI_SUM on MPI_INT.  The ranks other than 0 start late, so the operation is still
 * pending when rank 0 frees it. */
#include <unistd.h>

#include "common.h"

/* Elements (a, gap, b, gap) of ints: a and b summed, the gaps untouched. */
static void sum_a_and_b(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    const int *x = in;
    int *y = inout;
    for (int i = 0; i < *len; i++) {
        y[4 * i] += x[4 * i];
        y[4 * i + 2] += x[4 * i + 2];
    }
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv);
    const char *gapped_setting = getenv("T_GAPPED");
    int gapped = gapped_setting ? atoi(gapped_setting) : 1;
    MPI_Datatype pair, spaced;
    MPI_Type_vector(2, 1, 2, MPI_INT, &pair);
    MPI_Type_create_resized(pair, 0, 4 * sizeof(int), &spaced);
    MPI_Type_commit(&spaced);
    MPI_Op op;
    MPI_Op_create(sum_a_and_b, 1, &op);
    enum { N = 64 };
    int in[4 * N], out[4 * N];
    for (int i = 0; i < 4 * N; i++) in[i] = t_rank + 1, out[i] = -7;
    MPI_Barrier(MPI_COMM_WORLD); /* (sets the communicator up: nonblocking calls never do) */
    if (t_rank) usleep(200000);
    /* (nodecoll counts an operation when it completes, the host's calls when they are made) */
    uint64_t to_host = nodecoll_stat_calls("allreduce", "pmpi:*");
    MPI_Request request;
    if (gapped) MPI_Iallreduce(in, out, N, spaced, op, MPI_COMM_WORLD, &request);
    else MPI_Iallreduce(in, out, 4 * N, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &request);
    MPI_Request_free(&request);
    int served = nodecoll_stat_calls("allreduce", "pmpi:*") == to_host;
    MPI_Type_free(&spaced);
    MPI_Type_free(&pair);
    MPI_Op_free(&op);
    MPI_Finalize(); /* (not t_finish: nothing may run between the free and MPI_Finalize) */
    int want = t_size * (t_size + 1) / 2, wrong = 0;
    for (int i = 0; i < 4 * N; i++) {
        int expect = gapped && i % 2 ? -7 : want;
        if (out[i] != expect) wrong++;
    }
    if (wrong) fprintf(stderr, "FAIL [rank %d/%d]: %d ints wrong after MPI_Finalize (out[0] %d, want %d)\n", t_rank,
                       t_size, wrong, out[0], want);
    if (t_size > 1 && !served) fprintf(stderr, "FAIL [rank %d/%d]: the host served the Iallreduce\n", t_rank, t_size);
    if (t_rank == 0 && !wrong) printf("test_free_finalize: passed on rank 0 (%d ranks)\n", t_size);
    return wrong || (t_size > 1 && !served);
}
