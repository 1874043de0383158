/* Misuse of the node-shared API gives an MPI error class through the communicator's error
 * handler (called once) and a message naming the mistake (MPI_Error_string); the handle
 * stays usable afterwards.  Cases: null handle (MPI_COMM_WORLD's handler), releasing twice,
 * MPI_IN_PLACE without get_buffer, a result larger than max_bytes, root out of range,
 * negative count, null datatype, MPI_OP_NULL, MPI_IN_PLACE in Allreduce, max_bytes that
 * differs between ranks at create, and counts that differ between the ranks of a node.
 *
 * With NODECOLL_SHARED_DEBUG=1 also: a forked copy of the rank reads a released result,
 * another writes into a held one; each must die of SIGSEGV with nodecoll's message. */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

static int handler_calls, handler_class;

static void count_errors(MPI_Comm *comm, int *err, ...)
{
    handler_calls++;
    MPI_Error_class(*err, &handler_class);
}

/* Checks one erroneous call's code, its class, the handler and the message. */
static void expect_error(const char *what, int err, int want_class, const char *keyword)
{
    int cls = err, len = 0;
    char text[MPI_MAX_ERROR_STRING] = "";
    if (err != MPI_SUCCESS) {
        MPI_Error_class(err, &cls);
        MPI_Error_string(err, text, &len);
    }
    T_CHECK(cls == want_class, "%s: error class %d, want %d", what, cls, want_class);
    T_CHECK(handler_calls == 1 && handler_class == want_class, "%s: handler called %d times (class %d)", what,
            handler_calls, handler_class);
    /* Under MPICH 4.0.2 codes added to a predefined class lose their string; nodecoll then
     * prints its message on stderr instead, and MPI_Error_string gives the class's text. */
    if (strstr(text, "nodecoll"))
        T_CHECK(strstr(text, keyword) != NULL, "%s: message \"%s\" does not mention \"%s\"", what, text, keyword);
    handler_calls = 0;
    handler_class = -1;
}

/* A good call still works and gives the right data. */
static void expect_working(nodecoll_shared h, MPI_Comm comm, const char *after)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    const int *all = NULL;
    int mine = rank * 10 + 1;
    int err = nodecoll_shared_allgather(&mine, 1, MPI_INT, h, (const void **)&all);
    T_CHECK(err == MPI_SUCCESS, "allgather after %s failed (%d)", after, err);
    for (int r = 0; err == MPI_SUCCESS && r < size; r++)
        T_CHECK(all[r] == r * 10 + 1, "allgather after %s: rank %d's block is %d", after, r, all[r]);
    T_CHECK(handler_calls == 0, "handler called by a good call after %s", after);
}

/* Touches `at` in a forked copy of this rank; the copy must die of the fault after printing
 * `keyword`. */
static void expect_trap(const char *what, const volatile char *at, int write, const char *keyword)
{
    int pipefd[2];
    if (pipe(pipefd)) return;
    pid_t child = fork();
    if (child == 0) {
        dup2(pipefd[1], 2);
        if (write) *(volatile char *)at = 1;
        else (void)*at;
        _exit(0); /* the access did not fault */
    }
    close(pipefd[1]);
    char text[1024] = "";
    size_t got = 0;
    ssize_t n;
    while (got < sizeof text - 1 && (n = read(pipefd[0], text + got, sizeof text - 1 - got)) > 0) got += (size_t)n;
    close(pipefd[0]);
    int status = 0;
    waitpid(child, &status, 0);
    /* Killed by SIGSEGV, or (AddressSanitizer handles SIGSEGV after nodecoll) an error exit. */
    int stopped = WIFSIGNALED(status) ? WTERMSIG(status) == SIGSEGV : WIFEXITED(status) && WEXITSTATUS(status) != 0;
    T_CHECK(stopped, "%s: the child was not stopped by the fault (status %d)", what, status);
    T_CHECK(strstr(text, keyword) != NULL, "%s: no message with \"%s\" (got \"%s\")", what, keyword, text);
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv);
    MPI_Errhandler counter;
    MPI_Comm comm;
    MPI_Comm_create_errhandler(count_errors, &counter);
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, counter);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, counter);
    int rank, size, buf[8] = {0};
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    nodecoll_shared h;
    const void *result;

    expect_error("create with max_bytes differing between ranks",
                 nodecoll_shared_create(comm, size > 1 ? 64 + rank : -1, &h), MPI_ERR_ARG, "max_bytes");
    T_CHECK(nodecoll_shared_create(comm, 64 * size, &h) == MPI_SUCCESS, "create failed");

    expect_error("release of a null handle", nodecoll_shared_release(NODECOLL_SHARED_NULL), MPI_ERR_ARG, "handle");
    expect_error("allgather on a null handle", nodecoll_shared_allgather(buf, 1, MPI_INT, NULL, &result), MPI_ERR_ARG,
                 "handle");
    expect_error("release before any call", nodecoll_shared_release(h), MPI_ERR_ARG, "released twice");
    expect_working(h, comm, "release before any call");
    T_CHECK(nodecoll_shared_release(h) == MPI_SUCCESS, "first release failed");
    expect_error("second release", nodecoll_shared_release(h), MPI_ERR_ARG, "released twice");
    expect_error("MPI_IN_PLACE without get_buffer", nodecoll_shared_allgather(MPI_IN_PLACE, 1, MPI_INT, h, &result),
                 MPI_ERR_BUFFER, "get_buffer");
    expect_error("result larger than max_bytes", nodecoll_shared_allgather(buf, 64, MPI_INT, h, &result),
                 MPI_ERR_TRUNCATE, "max_bytes");
    expect_error("bcast root == size", nodecoll_shared_bcast(buf, 1, MPI_INT, size, h, &result), MPI_ERR_ROOT, "root");
    expect_error("negative count", nodecoll_shared_bcast(buf, -1, MPI_INT, 0, h, &result), MPI_ERR_COUNT, "count");
    expect_error("null datatype", nodecoll_shared_allgather(buf, 1, MPI_DATATYPE_NULL, h, &result), MPI_ERR_TYPE,
                 "datatype");
    expect_error("MPI_OP_NULL", nodecoll_shared_allreduce(buf, 1, MPI_INT, MPI_OP_NULL, h, &result), MPI_ERR_OP,
                 "MPI_OP_NULL");
    expect_error("allreduce MPI_IN_PLACE", nodecoll_shared_allreduce(MPI_IN_PLACE, 1, MPI_INT, MPI_SUM, h, &result),
                 MPI_ERR_BUFFER, "MPI_IN_PLACE");
    expect_working(h, comm, "argument errors");

    /* Counts that differ between ranks: detected among the ranks of a node, which here is
     * the whole communicator unless nodes are emulated. */
    int node_ranks = 0;
    nodecoll_shared_info(h, &node_ranks, NULL);
    if (node_ranks == size && size > 1) {
        int err = nodecoll_shared_allgather(buf, rank == 0 ? 2 : 3, MPI_INT, h, &result);
        expect_error("allgather counts differing between ranks", err, MPI_ERR_ARG, "different");
        err = nodecoll_shared_bcast(buf, rank == 0 ? 2 : 3, MPI_INT, 0, h, &result);
        if (rank) expect_error("bcast count differing from the root's", err, MPI_ERR_ARG, "different");
        else T_CHECK(err == MPI_SUCCESS && handler_calls == 0, "the root of a mismatched bcast failed");
        expect_working(h, comm, "mismatched counts");
    }

    const char *debug = getenv("NODECOLL_SHARED_DEBUG");
    if (debug && !strcmp(debug, "1")) {
        const char *all = NULL;
        int mine = rank;
        nodecoll_shared_allgather(&mine, 1, MPI_INT, h, (const void **)&all);
        expect_trap("write into a held result", all, 1, "read-only");
        nodecoll_shared_release(h);
        expect_trap("read after release", all, 0, "after this rank released it");
    }
    nodecoll_shared_free(&h);
    expect_error("free of a freed handle", nodecoll_shared_free(&h), MPI_ERR_ARG, "handle");

    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_Comm_free(&comm);
    MPI_Errhandler_free(&counter);
    return t_finish("shared_errors");
}
