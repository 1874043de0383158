/* A deadlock a test case is built to expose fails the test after a minute, saying which
 * (tests that include it define _DEFAULT_SOURCE for alarm before any header). */
#ifndef NC_TEST_WATCH_H
#define NC_TEST_WATCH_H

#include <mpi.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

static const char *watched;
static void watchdog(int sig)
{
    (void)sig;
    if (write(2, watched, strlen(watched)) < 0) _exit(3);
    _exit(2);
}

/* Starts watching (the message to print on a deadlock), or stops (NULL). */
static void watch(const char *what)
{
    watched = what;
    signal(SIGALRM, watchdog);
    alarm(what ? 60 : 0);
}

/* Rank 0 runs `call` under the watchdog (`deadlock`: what a deadlock means), and only then
 * lets each other rank run it (a message says so): a rank 0 that waited for the others inside
 * the call would deadlock.  Ordered, not timed: it cannot flake when oversubscribed. */
static void run_rank0_first(MPI_Comm comm, void (*call)(void *ctx), void *ctx, const char *deadlock)
{
    int rank, size, token = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    if (rank == 0) {
        watch(deadlock);
        call(ctx);
        watch(NULL);
        for (int r = 1; r < size; r++) PMPI_Send(&token, 1, MPI_INT, r, 77, comm);
    } else {
        PMPI_Recv(&token, 1, MPI_INT, 0, 77, comm, MPI_STATUS_IGNORE);
        call(ctx);
    }
}

#endif
