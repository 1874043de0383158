/* An ordinary MPI program, as a user would write it: it knows nothing of nodecoll.
 * test_preload.sh compiles it with the plain MPI compiler wrapper and runs it with the
 * library preloaded (LD_PRELOAD), or builds it against an installed nodecoll (CMake
 * find_package, pkg-config, -lnodecoll) with NODECOLL_CONSUMER defined, in which case it
 * also uses the public API to prove the fast path ran.
 *
 * Bcasts of 8 B to 1 MiB from every root on COMM_WORLD, a duplicate and a split, with
 * Barriers between; exit status 1 on any wrong byte. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#ifdef NODECOLL_CONSUMER
#include <nodecoll.h>
#endif

static int check(MPI_Comm comm, int bytes, int root, int salt)
{
    int rank, bad = 0;
    MPI_Comm_rank(comm, &rank);
    unsigned char *buf = malloc((size_t)bytes);
    for (int i = 0; i < bytes; i++) buf[i] = rank == root ? (unsigned char)(i * 7 + salt) : 0;
    if (MPI_Bcast(buf, bytes, MPI_BYTE, root, comm) != MPI_SUCCESS) bad = 1;
    for (int i = 0; i < bytes && !bad; i++)
        if (buf[i] != (unsigned char)(i * 7 + salt)) bad = 1;
    free(buf);
    if (MPI_Barrier(comm) != MPI_SUCCESS) bad = 1;
    return bad;
}

int main(int argc, char **argv)
{
    int rank, size, bad = 0, total = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm comms[3] = {MPI_COMM_WORLD};
    MPI_Comm_dup(MPI_COMM_WORLD, &comms[1]);
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &comms[2]);
    static const int sizes[] = {8, 4096, 100000, 1 << 20};
    for (int c = 0; c < 3; c++)
        for (int s = 0; s < 4; s++)
            for (int root = 0; root < size; root++) bad |= check(comms[c], sizes[s], root, c * 16 + s);
    MPI_Comm_free(&comms[1]);
    MPI_Comm_free(&comms[2]);
#ifdef NODECOLL_CONSUMER
    /* The public API of the installed header and library: the calls above were accelerated. */
    uint64_t fast = nodecoll_stat_calls("bcast", "*") - nodecoll_stat_calls("bcast", "pmpi:*");
    uint64_t fast_barrier = nodecoll_stat_calls("barrier", "*") - nodecoll_stat_calls("barrier", "pmpi:*");
    if (size > 1 && (fast == 0 || fast_barrier == 0)) {
        fprintf(stderr, "consumer: rank %d: %llu bcasts and %llu barriers accelerated\n", rank,
                (unsigned long long)fast, (unsigned long long)fast_barrier);
        bad = 1;
    }
    if (rank == 0) printf("consumer: nodecoll %s for %s\n", nodecoll_version(), nodecoll_mpi_library());
#endif
    MPI_Allreduce(&bad, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("preload-app: %s (%d ranks)\n", total ? "WRONG RESULTS" : "ok", size);
    MPI_Finalize();
    return total ? 1 : 0;
}
