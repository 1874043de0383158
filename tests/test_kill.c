/* Worker for test_kill.sh: a job that is in the middle of accelerated collectives when one
 * of its ranks dies.
 *
 *   test_kill loop    every rank sets up three communicators (WORLD, a duplicate, a split with
 *                     reversed order) and a node-shared handle on WORLD (its own region),
 *                     prints "ready <rank> <pid>", then runs Bcasts (inline, segment-sized,
 *                     single-copy-sized), node-shared Allgathers and Barriers until killed;
 *   test_kill abort   the same, but the last rank calls MPI_Abort after ~0.3 s of the loop;
 *   test_kill once    sets up, prints "ready", finalizes: a short job (for the stale sweep).
 *
 * A loop that is never interrupted gives up after 30 s (exit 3) so a broken driver cannot
 * leave it running. */
#include <unistd.h>

#include "common.h"

static void bcast_check(MPI_Comm comm, size_t bytes, int root, unsigned char seed)
{
    int rank;
    MPI_Comm_rank(comm, &rank);
    unsigned char *buf = malloc(bytes ? bytes : 1);
    for (size_t i = 0; i < bytes; i++) buf[i] = rank == root ? (unsigned char)(seed + i) : 0;
    MPI_Bcast(buf, (int)bytes, MPI_BYTE, root, comm);
    for (size_t i = 0; i < bytes; i++)
        if (buf[i] != (unsigned char)(seed + i)) {
            fprintf(stderr, "test_kill: rank %d: wrong byte %zu\n", t_rank, i);
            exit(4);
        }
    free(buf);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "loop";
    t_init(&argc, &argv);
    MPI_Comm comms[3] = {MPI_COMM_WORLD};
    MPI_Comm_dup(MPI_COMM_WORLD, &comms[1]);
    MPI_Comm_split(MPI_COMM_WORLD, 0, t_size - t_rank, &comms[2]);
    for (int c = 0; c < 3; c++) { /* builds every state: every segment is mapped and unlinked */
        bcast_check(comms[c], 64, 0, 1);
        MPI_Barrier(comms[c]);
    }
    nodecoll_shared shared;
    nodecoll_shared_create(MPI_COMM_WORLD, 4096 * t_size, &shared);
    printf("ready %d %ld\n", t_rank, (long)getpid());
    fflush(stdout);
    if (!strcmp(mode, "once")) {
        nodecoll_shared_free(&shared);
        for (int c = 1; c < 3; c++) MPI_Comm_free(&comms[c]);
        MPI_Finalize();
        return 0;
    }
    static const size_t sizes[] = {8, 3000, 100000, 1 << 20};
    double start = MPI_Wtime();
    int abort_here = !strcmp(mode, "abort") && t_rank == t_size - 1;
    for (unsigned k = 0;; k++) {
        MPI_Comm comm = comms[k % 3];
        int size;
        MPI_Comm_size(comm, &size);
        bcast_check(comm, sizes[k % 4], (int)(k % (unsigned)size), (unsigned char)k);
        static unsigned char block[4096];
        const void *all;
        nodecoll_shared_allgather(block, sizeof block, MPI_BYTE, shared, &all);
        MPI_Barrier(comm);
        double now = MPI_Wtime() - start;
        if (abort_here && now > 0.3) {
            fprintf(stderr, "test_kill: rank %d aborts after %u iterations\n", t_rank, k);
            MPI_Abort(MPI_COMM_WORLD, 7);
        }
        if (now > 30) {
            fprintf(stderr, "test_kill: rank %d was never stopped\n", t_rank);
            exit(3);
        }
    }
}
