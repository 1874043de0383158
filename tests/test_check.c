/* NODECOLL_CHECK=1: deliberately mismatched calls are reported before anything moves.
 *
 * Each case makes the ranks enter calls that disagree (a different collective, root, op or
 * length, or arguments one rank alone hands to the host MPI) on a communicator with a
 * counting error handler, and checks on every rank:
 *   - the call returns an error of class MPI_ERR_ARG and the handler ran exactly once;
 *   - every rank whose call differs from rank 0's printed exactly one line naming both calls
 *     and the call number (stderr is captured in a file per rank), and no other rank did;
 *   - a correct Allreduce right after it gives the right answer (every rank still in step).
 * Then a run of correct calls of every collective (v-forms, in place, fallbacks to the host
 * that every rank takes alike) must pass without a report: the check has no false alarms.
 * Without NODECOLL_CHECK the program refuses to run (it would hang by design). */
#define _DEFAULT_SOURCE
#include <unistd.h>

#include "common.h"

static int handler_calls, handler_class;
static void count_errors(MPI_Comm *comm, int *err, ...)
{
    handler_calls++;
    MPI_Error_class(*err, &handler_class);
}

/* What the library prints on stderr during a call goes to a file of this rank's (failures of
 * the test itself still reach the real stderr). */
static FILE *capture;
static int real_stderr = -1;

static void capture_begin(void)
{
    if (!capture) capture = tmpfile();
    if (ftruncate(fileno(capture), 0) != 0) t_fail("cannot truncate the capture file");
    rewind(capture);
    fflush(stderr);
    real_stderr = dup(2);
    dup2(fileno(capture), 2);
}

/* Ends the capture; returns what was written. */
static char *capture_end(void)
{
    static char text[8192];
    fflush(stderr);
    dup2(real_stderr, 2);
    close(real_stderr);
    rewind(capture);
    size_t got = fread(text, 1, sizeof text - 1, capture);
    text[got] = '\0';
    return text;
}

static int count_lines(const char *text, const char *needle)
{
    int n = 0;
    for (const char *at = strstr(text, needle); at; at = strstr(at + 1, needle)) n++;
    return n;
}

enum { C_BCAST_VS_ALLREDUCE, C_ROOTS, C_LENGTHS, C_OPS, C_GATHER_ROOTS, C_ONE_BAD_RANK, C_ORDER, CASES };
static const char *case_names[] = {"bcast vs allreduce", "different roots", "different lengths", "different ops",
                                   "gather roots", "one rank's bad count", "different order"};

/* Rank 0's call and what the others expect to see of it in their report ("" : they agree). */
static int mismatched_call(int c, MPI_Comm comm, const char **mine, const char **rank0)
{
    int rank = t_rank, size = t_size, last = rank == size - 1;
    double x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, y[8 * 16];
    switch (c) {
    case C_BCAST_VS_ALLREDUCE:
        *rank0 = "rank 0 entered MPI_Bcast(root 0, 8 B)";
        *mine = rank ? "entered MPI_Allreduce(MPI_SUM, 8 B)" : "";
        return rank ? MPI_Allreduce(x, y, 1, MPI_DOUBLE, MPI_SUM, comm) : MPI_Bcast(x, 1, MPI_DOUBLE, 0, comm);
    case C_ROOTS:
        *rank0 = "rank 0 entered MPI_Bcast(root 0, 64 B)";
        *mine = last ? "MPI_Bcast(root 1, 64 B)" : "";
        return MPI_Bcast(x, 8, MPI_DOUBLE, last ? 1 : 0, comm);
    case C_LENGTHS:
        *rank0 = "rank 0 entered MPI_Bcast(root 0, 32 B)";
        *mine = last ? "MPI_Bcast(root 0, 64 B)" : "";
        return MPI_Bcast(x, last ? 8 : 4, MPI_DOUBLE, 0, comm);
    case C_OPS:
        *rank0 = "rank 0 entered MPI_Reduce(root 0, MPI_MAX, 16 B)";
        *mine = rank ? "MPI_Reduce(root 0, MPI_MIN, 16 B)" : "";
        return MPI_Reduce(x, y, 2, MPI_DOUBLE, rank ? MPI_MIN : MPI_MAX, 0, comm);
    case C_GATHER_ROOTS:
        *rank0 = "rank 0 entered MPI_Gather(root 0, ";
        *mine = last ? "MPI_Gather(root 1, " : "";
        return MPI_Gather(x, 2, MPI_DOUBLE, y, 2, MPI_DOUBLE, last ? 1 : 0, comm);
    case C_ONE_BAD_RANK: /* alone, rank 1 would go to the host MPI and rank 0 would wait forever */
        *rank0 = "rank 0 entered MPI_Allreduce(MPI_SUM, 24 B)";
        *mine = rank == 1 ? "[to the host MPI: pmpi:args]" : "";
        return MPI_Allreduce(x, y, rank == 1 ? -1 : 3, MPI_DOUBLE, MPI_SUM, comm);
    default: /* rank 0 calls Barrier then Bcast, the others Bcast then Barrier: the first call differs */
        *rank0 = "rank 0 entered MPI_Barrier()";
        *mine = rank ? "entered MPI_Bcast(root 0, 8 B)" : "";
        return rank ? MPI_Bcast(x, 1, MPI_DOUBLE, 0, comm) : MPI_Barrier(comm);
    }
}

static void after_mismatch_in_step(MPI_Comm comm, const char *what)
{
    int one = 1, sum = 0;
    int err = MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, comm);
    T_CHECK(err == MPI_SUCCESS && sum == t_size, "%s: the next Allreduce gave %d (error %d)", what, sum, err);
}

static void check_case(int c, MPI_Comm comm)
{
    const char *mine, *rank0, *what = case_names[c];
    handler_calls = 0;
    handler_class = MPI_SUCCESS;
    capture_begin();
    int err = mismatched_call(c, comm, &mine, &rank0);
    char *text = capture_end();
    int cls = MPI_SUCCESS;
    if (err != MPI_SUCCESS) MPI_Error_class(err, &cls);
    T_CHECK(cls == MPI_ERR_ARG, "%s: class %d, want MPI_ERR_ARG (%d)", what, cls, MPI_ERR_ARG);
    T_CHECK(handler_calls == 1 && handler_class == MPI_ERR_ARG, "%s: handler ran %d times (class %d)", what,
            handler_calls, handler_class);
    int reports = count_lines(text, "nodecoll: call ");
    if (*mine) {
        char me[32];
        snprintf(me, sizeof me, "rank %d ", t_rank);
        T_CHECK(reports == 1, "%s: %d report lines, want 1:\n%s", what, reports, text);
        T_CHECK(strstr(text, mine) && strstr(text, rank0) && strstr(text, me),
                "%s: the report does not name '%s', '%s' and '%s':\n%s", what, me, mine, rank0, text);
        T_CHECK(strstr(text, " on check-comm: "), "%s: the report does not name the communicator:\n%s", what, text);
    } else {
        T_CHECK(reports == 0, "%s: rank agrees with rank 0 but reported:\n%s", what, text);
    }
    if (c == C_ORDER) { /* the second halves of the swapped pairs disagree as well */
        double x = 0;
        handler_calls = 0;
        capture_begin();
        err = t_rank ? MPI_Barrier(comm) : MPI_Bcast(&x, 1, MPI_DOUBLE, 0, comm);
        capture_end();
        T_CHECK(err != MPI_SUCCESS && handler_calls == 1, "%s: the second call of the pair was not reported", what);
    }
    after_mismatch_in_step(comm, what);
}

/* Every collective, correctly: no report, no error. */
static void correct_calls(MPI_Comm comm)
{
    int n = t_size, in[64], out[64 * 16], counts[16], displs[16];
    for (int i = 0; i < 64; i++) in[i] = t_rank * 100 + i;
    for (int i = 0; i < n; i++) counts[i] = i + 1, displs[i] = i * 8;
    handler_calls = 0;
    capture_begin();
    MPI_Barrier(comm);
    MPI_Bcast(in, 5, MPI_INT, n - 1, comm);
    MPI_Reduce(in, out, 4, MPI_INT, MPI_SUM, n - 1, comm);
    MPI_Allreduce(MPI_IN_PLACE, in, 4, MPI_INT, MPI_MAX, comm);
    MPI_Scan(in, out, 3, MPI_INT, MPI_SUM, comm);
    MPI_Exscan(in, out, 3, MPI_INT, MPI_SUM, comm);
    MPI_Reduce_scatter_block(in, out, 2, MPI_INT, MPI_SUM, comm);
    MPI_Reduce_scatter(in, out, counts, MPI_INT, MPI_SUM, comm);
    MPI_Gather(in, 3, MPI_INT, out, 3, MPI_INT, 0, comm);
    MPI_Gatherv(in, t_rank + 1, MPI_INT, out, counts, displs, MPI_INT, 0, comm);
    MPI_Scatter(in, 2, MPI_INT, out, 2, MPI_INT, n - 1, comm);
    MPI_Scatterv(in, counts, displs, MPI_INT, out, t_rank + 1, MPI_INT, 0, comm);
    MPI_Allgather(in, 2, MPI_INT, out, 2, MPI_INT, comm);
    MPI_Allgatherv(in, t_rank + 1, MPI_INT, out, counts, displs, MPI_INT, comm);
    MPI_Alltoall(in, 1, MPI_INT, out, 1, MPI_INT, comm);
    int twos[16];
    for (int i = 0; i < n; i++) twos[i] = 2;
    MPI_Alltoallv(in, twos, displs, MPI_INT, out, twos, displs, MPI_INT, comm);
    /* A call every rank may hand to the host MPI alike (nodecoll reduces no Fortran types yet). */
    int c = 1, d = 0;
    MPI_Allreduce(&c, &d, 1, MPI_INTEGER, MPI_SUM, comm);
    char *text = capture_end();
    T_CHECK(handler_calls == 0, "correct calls: the error handler ran %d times", handler_calls);
    T_CHECK(!strstr(text, "nodecoll:"), "correct calls: reported\n%s", text);
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv);
    const char *check = getenv("NODECOLL_CHECK");
    if (!check || strcmp(check, "1")) {
        if (t_rank == 0) fprintf(stderr, "test_check: run with NODECOLL_CHECK=1\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Comm comm;
    MPI_Errhandler counting;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_name(comm, "check-comm");
    MPI_Comm_create_errhandler(count_errors, &counting);
    MPI_Comm_set_errhandler(comm, counting);
    correct_calls(comm);
    for (int c = 0; c < CASES; c++)
        if (t_size > 1) check_case(c, comm);
    correct_calls(comm);
    if (t_size > 1)
        T_CHECK(nodecoll_stat_calls("bcast", "pmpi:*") == 0, "a correct Bcast went to the host MPI");
    MPI_Comm_free(&comm);
    MPI_Errhandler_free(&counting);
    return t_finish("test_check");
}
