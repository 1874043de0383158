/* Worker for test_kill.sh: a job that is in the middle of accelerated collectives when one
 * of its ranks dies.
 *
 *   test_kill loop    every rank sets up three communicators (WORLD, a duplicate, a split with
 *                     reversed order) and a node-shared handle on WORLD (its own region),
 *                     prints "ready <rank> <pid>", then runs Bcasts (inline, segment-sized,
 *                     single-copy-sized), node-shared Allgathers and Barriers until killed;
 *   test_kill abort   the same, but the last rank calls MPI_Abort after ~0.3 s of the loop;
 *   test_kill once    sets up, prints "ready", finalizes: a short job (for the stale sweep);
 *   test_kill hang    sets up, prints "ready", then every rank but the last enters a Bcast from
 *                     the last rank (call 3 on MPI_COMM_WORLD), which sleeps until killed;
 *   test_kill late    on MPI_COMM_WORLD only (3 ranks), ranks enter some calls late and finish
 *                     normally (for NODECOLL_WAIT_REPORT; test_kill.sh knows the script):
 *                       1 Barrier, 2 Allreduce, 3 Bcast from rank 2 (rank 2 is 2.5 s late),
 *                       4 Barrier, 5 Barrier (rank 2 is 1.5 s late, rank 1 3 s), 6 Allreduce.
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

static void say_ready(void)
{
    printf("ready %d %ld\n", t_rank, (long)getpid());
    fflush(stdout);
}

static void late_by(double seconds) { usleep((useconds_t)(seconds * 1e6)); }

/* The calls of `late` mode (every rank prints "done <rank>" when they all went through). */
static void late_calls(void)
{
    double sum = 1, late[3] = {0};
    say_ready();
    MPI_Barrier(MPI_COMM_WORLD);                                         /* 1 */
    MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); /* 2 */
    if (t_rank == 2) late_by(2.5);
    bcast_check(MPI_COMM_WORLD, 64, 2, 3);                               /* 3 */
    MPI_Barrier(MPI_COMM_WORLD);                                         /* 4 */
    late[1] = 3.0;
    late[2] = 1.5;
    late_by(late[t_rank]);
    MPI_Barrier(MPI_COMM_WORLD);                                         /* 5 */
    MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); /* 6 */
    if (sum != 3 * 3) t_fail("Allreduce gave %g", sum);
    printf("done %d\n", t_rank);
}

/* `hang` mode's victim: alive (so a liveness check must leave the others waiting) until killed. */
static void sleep_until_killed(void)
{
    for (int i = 0; i < 300; i++) late_by(0.1);
    fprintf(stderr, "test_kill: rank %d was never stopped\n", t_rank);
    exit(3);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "loop";
    t_init(&argc, &argv);
    if (!strcmp(mode, "late")) {
        if (t_size != 3) t_fail("late mode runs on 3 ranks, not %d", t_size);
        else late_calls();
        MPI_Finalize();
        return t_failures != 0;
    }
    MPI_Comm comms[3] = {MPI_COMM_WORLD};
    MPI_Comm_dup(MPI_COMM_WORLD, &comms[1]);
    MPI_Comm_split(MPI_COMM_WORLD, 0, t_size - t_rank, &comms[2]);
    for (int c = 0; c < 3; c++) { /* builds every state: every segment is mapped and unlinked */
        bcast_check(comms[c], 64, 0, 1);
        MPI_Barrier(comms[c]);
    }
    nodecoll_shared shared;
    nodecoll_shared_create(MPI_COMM_WORLD, 4096 * t_size, &shared);
    say_ready();
    if (!strcmp(mode, "hang")) {
        if (t_rank == t_size - 1) sleep_until_killed();
        bcast_check(MPI_COMM_WORLD, 64, t_size - 1, 9); /* waits for the victim until it is found dead */
        fprintf(stderr, "test_kill: rank %d got a Bcast from a dead rank\n", t_rank);
        exit(5);
    }
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
