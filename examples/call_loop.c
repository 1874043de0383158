/* The cost of one small call, for comparing builds of nodecoll (or none) preloaded into the
 * same binary: a loop of N 8-byte calls timed REPS times, the best three repetitions printed
 * (ns per call, the slowest rank's time).  Many short repetitions find a shared machine's
 * quiet moments.  Not linked to nodecoll: choose the library with LD_PRELOAD.
 *
 *   mpiexec -np 2 -x LD_PRELOAD=<libnodecoll-....so> ./call_loop bcast 30000 31
 *
 * Calls: barrier, bcast, allreduce (blocking), ibarrier, ibcast, iallreduce (+ MPI_Wait),
 * pallreduce (a persistent Allreduce: MPI_Start + MPI_Wait, where the host has them). */
#include <mpi.h>
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#define INIT(Name) MPIX_##Name##_init
#else
#define INIT(Name) MPI_##Name##_init
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void run(const char *what, int n, double *x, double *y, MPI_Request *persistent)
{
    MPI_Request r;
    for (int i = 0; i < n; i++) {
        if (!strcmp(what, "barrier")) MPI_Barrier(MPI_COMM_WORLD);
        else if (!strcmp(what, "bcast")) MPI_Bcast(x, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        else if (!strcmp(what, "allreduce")) MPI_Allreduce(x, y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        else if (!strcmp(what, "ibarrier")) MPI_Ibarrier(MPI_COMM_WORLD, &r), MPI_Wait(&r, MPI_STATUS_IGNORE);
        else if (!strcmp(what, "ibcast"))
            MPI_Ibcast(x, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD, &r), MPI_Wait(&r, MPI_STATUS_IGNORE);
        else if (!strcmp(what, "iallreduce"))
            MPI_Iallreduce(x, y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &r), MPI_Wait(&r, MPI_STATUS_IGNORE);
        else if (!strcmp(what, "pallreduce")) MPI_Start(persistent), MPI_Wait(persistent, MPI_STATUS_IGNORE);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const char *what = argc > 1 ? argv[1] : "bcast";
    int n = argc > 2 ? atoi(argv[2]) : 30000, reps = argc > 3 ? atoi(argv[3]) : 31;
    double x[1] = {1}, y[1], best[3] = {1e30, 1e30, 1e30};
    MPI_Request persistent = MPI_REQUEST_NULL;
    MPI_Barrier(MPI_COMM_WORLD); /* (sets the communicator up: nonblocking calls do not) */
    if (!strcmp(what, "pallreduce")) INIT(Allreduce)(x, y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &persistent);
    run(what, n / 10 + 1, x, y, &persistent);
    for (int rep = 0; rep < reps; rep++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t = MPI_Wtime();
        run(what, n, x, y, &persistent);
        t = (MPI_Wtime() - t) / n * 1e9;
        double slowest;
        MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        for (int k = 0; k < 3; k++)
            if (slowest < best[k]) {
                for (int j = 2; j > k; j--) best[j] = best[j - 1];
                best[k] = slowest;
                break;
            }
    }
    if (rank == 0) printf("%s: best3 %.1f %.1f %.1f ns\n", what, best[0], best[1], best[2]);
    if (persistent != MPI_REQUEST_NULL) MPI_Request_free(&persistent);
    MPI_Finalize();
    return 0;
}
