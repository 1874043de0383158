/* Erroneous calls: nodecoll must report exactly what the host MPI reports.  Each bad call is
 * made once through PMPI_ (the oracle) and once through MPI_ (nodecoll), on a communicator
 * with MPI_ERRORS_RETURN and again with a counting error handler of our own:
 *   - the same error class (MPI_Error_class) both ways;
 *   - the user's handler invoked exactly once per bad call, with that class;
 *   - the bad call counted as a host-MPI fallback ("pmpi:args" once nodecoll has state);
 *   - afterwards a good Bcast and Barrier still work, accelerated (the state is intact).
 * Bad Bcast arguments: root -1 and root == size, count -1, MPI_DATATYPE_NULL, a derived
 * datatype never committed, MPI_COMM_NULL; bad Barrier: MPI_COMM_NULL.  Each on a
 * communicator whose state already exists and on a fresh one whose first call is the bad one.
 * Errors on MPI_COMM_NULL go to MPI_COMM_WORLD's handler (MPI <= 3.1, Open MPI) or
 * MPI_COMM_SELF's (MPI 4.0): both get the same handler.
 *
 * Not tested where they crash or hang the host MPI itself (not nodecoll's business):
 * a NULL buffer with count > 0 under Open MPI (PMPI_Bcast segfaults), MPI_IN_PLACE as the
 * Bcast buffer under MPICH (PMPI_Bcast segfaults); freed or garbage handles and roots that
 * differ between ranks (undefined in any MPI) nowhere. */
#include "common.h"

/* MPICH reports a NULL buffer (MPI_ERR_BUFFER) but crashes on MPI_IN_PLACE; Open MPI the
 * other way round (MPI_ERR_ARG for MPI_IN_PLACE): each is tested where the host survives it. */
#if defined(MPICH_VERSION)
#define NC_TEST_NULL_BUFFER 1
#define NC_TEST_IN_PLACE 0
#elif defined(OPEN_MPI)
#define NC_TEST_NULL_BUFFER 0
#define NC_TEST_IN_PLACE 1
#else
#define NC_TEST_NULL_BUFFER 0
#define NC_TEST_IN_PLACE 0
#endif

enum { ROOT_NEG, ROOT_SIZE, COUNT_NEG, TYPE_NULL, TYPE_UNCOMMITTED, NULL_BUFFER, IN_PLACE, BCAST_COMM_NULL,
       BARRIER_COMM_NULL, CASES };
static const char *case_names[] = {"bcast root -1",           "bcast root == size",
                                   "bcast count -1",          "bcast MPI_DATATYPE_NULL",
                                   "bcast uncommitted type",  "bcast NULL buffer",
                                   "bcast MPI_IN_PLACE",      "bcast MPI_COMM_NULL",
                                   "barrier MPI_COMM_NULL"};

static int case_runs(int c)
{
    return (c != NULL_BUFFER || NC_TEST_NULL_BUFFER) && (c != IN_PLACE || NC_TEST_IN_PLACE);
}

static MPI_Datatype uncommitted;
static int handler_calls, handler_class;

static void count_errors(MPI_Comm *comm, int *err, ...)
{
    handler_calls++;
    MPI_Error_class(*err, &handler_class);
}

/* Makes bad call `c` on `comm` through PMPI (oracle) or MPI (nodecoll); returns its code. */
static int bad_call(int c, MPI_Comm comm, int through_pmpi)
{
    int size, buf[4] = {0};
    MPI_Comm_size(comm, &size);
    int (*bcast)(void *, int, MPI_Datatype, int, MPI_Comm) = through_pmpi ? PMPI_Bcast : MPI_Bcast;
    int (*barrier)(MPI_Comm) = through_pmpi ? PMPI_Barrier : MPI_Barrier;
    switch (c) {
    case ROOT_NEG: return bcast(buf, 4, MPI_INT, -1, comm);
    case ROOT_SIZE: return bcast(buf, 4, MPI_INT, size, comm);
    case COUNT_NEG: return bcast(buf, -1, MPI_INT, 0, comm);
    case TYPE_NULL: return bcast(buf, 4, MPI_DATATYPE_NULL, 0, comm);
    case TYPE_UNCOMMITTED: return bcast(buf, 2, uncommitted, 0, comm);
    case NULL_BUFFER: return bcast(NULL, 4, MPI_INT, 0, comm);
    case IN_PLACE: return bcast(MPI_IN_PLACE, 4, MPI_INT, 0, comm);
    case BCAST_COMM_NULL: return bcast(buf, 4, MPI_INT, 0, MPI_COMM_NULL);
    default: return barrier(MPI_COMM_NULL);
    }
}

static int class_of(int err)
{
    int cls = err;
    if (err != MPI_SUCCESS) MPI_Error_class(err, &cls);
    return cls;
}

static const char *class_name(int cls)
{
    static char text[MPI_MAX_ERROR_STRING];
    int len;
    if (MPI_Error_string(cls, text, &len) != MPI_SUCCESS) snprintf(text, sizeof text, "class %d", cls);
    return text;
}

/* A good Bcast (checked) and Barrier right after a bad call: they must work and, on more
 * than one rank, run accelerated. */
static void good_calls(MPI_Comm comm, const char *what)
{
    int rank, size, buf[19];
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int root = size - 1;
    for (int i = 0; i < 19; i++) buf[i] = rank == root ? 7 * i + 3 : -1;
    uint64_t fb_bcast = nodecoll_stat_calls("bcast", "pmpi:*");
    uint64_t fb_barrier = nodecoll_stat_calls("barrier", "pmpi:*");
    int e1 = MPI_Bcast(buf, 19, MPI_INT, root, comm);
    int e2 = MPI_Barrier(comm);
    T_CHECK(e1 == MPI_SUCCESS && e2 == MPI_SUCCESS, "%s: good bcast/barrier after it returned %d/%d", what, e1, e2);
    for (int i = 0; i < 19; i++)
        if (buf[i] != 7 * i + 3) {
            t_fail("%s: good bcast after it delivered %d at %d, want %d", what, buf[i], i, 7 * i + 3);
            break;
        }
    if (size > 1) {
        T_CHECK(nodecoll_stat_calls("bcast", "pmpi:*") == fb_bcast, "%s: good bcast after it fell back", what);
        T_CHECK(nodecoll_stat_calls("barrier", "pmpi:*") == fb_barrier, "%s: good barrier after it fell back", what);
    }
}

static void check_case(int c, MPI_Comm comm, const char *comm_name, int has_state)
{
    char what[128];
    snprintf(what, sizeof what, "%s on %s", case_names[c], comm_name);
    int on_null = c == BCAST_COMM_NULL || c == BARRIER_COMM_NULL;
    const char *coll = c == BARRIER_COMM_NULL ? "barrier" : "bcast";
    int size;
    MPI_Comm_size(comm, &size);

    /* 1. MPI_ERRORS_RETURN everywhere: the same class as the host's. */
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    int want = class_of(bad_call(c, comm, 1));
    uint64_t fallbacks = nodecoll_stat_calls(coll, "pmpi:*"), args = nodecoll_stat_calls(coll, "pmpi:args");
    int got = class_of(bad_call(c, comm, 0));
    T_CHECK(got == want, "%s: error class %d (%s), the host MPI gives %d", what, got, class_name(got), want);
    T_CHECK(want != MPI_SUCCESS, "%s: the host MPI accepted it (the case tests nothing)", what);
    T_CHECK(nodecoll_stat_calls(coll, "pmpi:*") == fallbacks + 1, "%s: not counted as a host-MPI call", what);
    if (size > 1 || on_null)
        T_CHECK(nodecoll_stat_calls(coll, "pmpi:args") == args + 1, "%s: not counted as pmpi:args", what);
    good_calls(comm, what);

    /* 2. A handler of our own, on the communicator (and WORLD and SELF for MPI_COMM_NULL):
     * invoked once, with the same class, by the host and by nodecoll. */
    MPI_Errhandler counting;
    MPI_Comm_create_errhandler(count_errors, &counting);
    MPI_Comm_set_errhandler(comm, counting);
    if (on_null) {
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, counting);
        MPI_Comm_set_errhandler(MPI_COMM_SELF, counting);
    }
    handler_calls = 0;
    handler_class = -1;
    int want_ret = class_of(bad_call(c, comm, 1));
    int want_calls = handler_calls, want_class = handler_class;
    handler_calls = 0;
    handler_class = -1;
    int got_ret = class_of(bad_call(c, comm, 0));
    T_CHECK(handler_calls == want_calls && handler_calls == 1,
            "%s: error handler ran %d times, %d with the host MPI (want once)", what, handler_calls, want_calls);
    T_CHECK(handler_class == want_class, "%s: handler saw class %d (%s), with the host MPI %d", what, handler_class,
            class_name(handler_class), want_class);
    T_CHECK(got_ret == want_ret, "%s: returned class %d with a handler, the host MPI %d", what, got_ret, want_ret);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    MPI_Errhandler_free(&counting);
    good_calls(comm, what);
    if (t_rank == 0 && has_state) printf("%-26s -> %s\n", case_names[c], class_name(want));
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv);
    MPI_Type_contiguous(2, MPI_INT, &uncommitted);

    /* A communicator whose state exists before the bad calls. */
    MPI_Comm used;
    MPI_Comm_dup(MPI_COMM_WORLD, &used);
    good_calls(used, "first use");
    for (int c = 0; c < CASES; c++)
        if (case_runs(c)) check_case(c, used, "a used communicator", 1);

    /* Communicators whose very first call is the bad one (the state is built inside it). */
    for (int c = 0; c < CASES; c++) {
        if (!case_runs(c) || c == BCAST_COMM_NULL || c == BARRIER_COMM_NULL) continue; /* no communicator */
        MPI_Comm fresh;
        MPI_Comm_split(MPI_COMM_WORLD, 0, t_size - t_rank, &fresh);
        check_case(c, fresh, "a fresh communicator", 0);
        MPI_Comm_free(&fresh);
    }
    MPI_Comm_free(&used);
    MPI_Type_free(&uncommitted);
    if (t_size > 1)
        T_CHECK(nodecoll_stat_calls("bcast", "*") > nodecoll_stat_calls("bcast", "pmpi:*"),
                "the accelerated path never ran");
    return t_finish("errors");
}
