/* Type signatures that disagree between senders and receivers (issue 6, bad input).  MPI
 * calls such a program erroneous.  Both host MPIs report MPI_ERR_TRUNCATE to every rank that
 * was sent more than its arguments hold and success elsewhere (measured with Open MPI 4.1
 * and MPICH 4.0 at 8 and 100000 doubles, np 2), but the host cannot serve as the oracle at
 * run time: Open MPI's own Gather hangs on such a call at 12 KB.  So the expected classes are
 * written down here.  For Bcast, Gather, Scatter, Allgather and Alltoall on one node, at a
 * size that rides in a flag or slot, a ring-sized one and a single-copy one:
 *   - "short" receivers hold half of what is sent: exactly the ranks the hosts flag report
 *     MPI_ERR_TRUNCATE (through the communicator's handler), the others succeed;
 *   - "long" receivers hold twice what is sent: success on every rank, the data sent arrives
 *     exactly and the rest of each block stays untouched;
 *   - nothing is written past any receive buffer, the call ran on nodecoll's path (no host
 *     fallback counted), and afterwards correct calls still deliver the right data (every
 *     rank stayed in step).
 * Not covered: a count of zero on some ranks only (both hosts hang, the receivers waiting for
 * a message the root never sends), and several nodes, where the bridge step is the host's
 * own Bcast or exchange and behaves as the host does. */
#include "common.h"

#define GUARD 64          /* ints after every receive buffer that must stay untouched */
#define UNTOUCHED (-7777) /* what a receive buffer holds before the call */

enum { BCAST, GATHER, SCATTER, ALLGATHER, ALLTOALL, COLLS };
static const char *coll_names[] = {"bcast", "gather", "scatter", "allgather", "alltoall"};

static int handler_calls;

static void count_errors(MPI_Comm *comm, int *err, ...)
{
    (void)comm;
    (void)err;
    handler_calls++;
}

/* What rank `from` sends to rank `to` at element i (the same for every block of Bcast). */
static int value(int from, int to, int i) { return from * 1000003 + to * 7919 + i; }

typedef struct call {
    int coll, sent, held, root; /* element counts per block: sent by each sender, held by each receiver */
    int *send, *recv;
    size_t recv_len; /* ints of recv before the guard */
} call;

static int blocks_received(const call *k)
{
    if (k->coll == GATHER) return t_rank == k->root ? t_size : 0;
    return k->coll == ALLGATHER || k->coll == ALLTOALL ? t_size : 1;
}

static void prepare(call *k)
{
    int send_blocks = k->coll == ALLTOALL || (k->coll == SCATTER && t_rank == k->root) ? t_size : 1;
    for (int b = 0; b < send_blocks; b++)
        for (int i = 0; i < k->sent; i++) k->send[(size_t)b * k->sent + i] = value(t_rank, k->coll == BCAST ? 0 : b, i);
    k->recv_len = (size_t)blocks_received(k) * (size_t)k->held;
    for (size_t i = 0; i < k->recv_len + GUARD; i++) k->recv[i] = UNTOUCHED;
}

/* The call through nodecoll; returns its error code. */
static int run(call *k, MPI_Comm comm)
{
    prepare(k);
    int is_root = t_rank == k->root;
    switch (k->coll) {
    case BCAST: {
        int *buf = is_root ? k->send : k->recv, count = is_root ? k->sent : k->held;
        return MPI_Bcast(buf, count, MPI_INT, k->root, comm);
    }
    case GATHER:
        return MPI_Gather(k->send, k->sent, MPI_INT, k->recv, k->held, MPI_INT, k->root, comm);
    case SCATTER:
        return MPI_Scatter(k->send, k->sent, MPI_INT, k->recv, k->held, MPI_INT, k->root, comm);
    case ALLGATHER:
        return MPI_Allgather(k->send, k->sent, MPI_INT, k->recv, k->held, MPI_INT, comm);
    default:
        return MPI_Alltoall(k->send, k->sent, MPI_INT, k->recv, k->held, MPI_INT, comm);
    }
}

static int class_of(int err)
{
    int cls = err;
    if (err != MPI_SUCCESS) MPI_Error_class(err, &cls);
    return cls;
}

/* Whether this rank is sent more than it holds when receivers hold less than is sent. */
static int receives(const call *k)
{
    if (k->coll == BCAST) return t_rank != k->root;
    if (k->coll == GATHER) return t_rank == k->root;
    return 1;
}

static int guard_intact(const call *k)
{
    for (size_t i = k->recv_len; i < k->recv_len + GUARD; i++)
        if (k->recv[i] != UNTOUCHED) return 0;
    return 1;
}

/* Long receivers: block b holds what its sender sent, then untouched ints. */
static int long_data_right(const call *k)
{
    if (k->coll == BCAST && t_rank == k->root) return 1; /* the root's buffer is k->send */
    for (int b = 0; b < blocks_received(k); b++) {
        int from = k->coll == BCAST || k->coll == SCATTER ? k->root : b;
        int to = k->coll == SCATTER || k->coll == ALLTOALL ? t_rank : 0;
        const int *block = k->recv + (size_t)b * k->held;
        for (int i = 0; i < k->held; i++)
            if (block[i] != (i < k->sent ? value(from, to, i) : UNTOUCHED)) return 0;
    }
    return 1;
}

/* Correct calls after the erroneous one: every rank must still be in step. */
static void check_in_step(MPI_Comm comm, int root, const char *what)
{
    int n = 5000, *buf = malloc(sizeof(int) * (size_t)n), all[64];
    for (int i = 0; i < n; i++) buf[i] = t_rank == root ? value(root, 1, i) : 0;
    MPI_Bcast(buf, n, MPI_INT, root, comm);
    int bad = 0;
    for (int i = 0; i < n; i++) bad += buf[i] != value(root, 1, i);
    int mine = value(t_rank, 2, 0);
    MPI_Allgather(&mine, 1, MPI_INT, all, 1, MPI_INT, comm);
    for (int r = 0; r < t_size; r++) bad += all[r] != value(r, 2, 0);
    T_CHECK(!bad, "%s: a correct Bcast/Allgather afterwards delivered wrong data", what);
    free(buf);
}

static void check(int coll, int sent, int held, int root, MPI_Comm comm)
{
    size_t most = (size_t)t_size * (size_t)(sent > held ? sent : held) + GUARD;
    call k = {coll, sent, held, root, malloc(sizeof(int) * most), malloc(sizeof(int) * most), 0};
    char what[160];
    snprintf(what, sizeof what, "%s sent %d held %d root %d", coll_names[coll], sent, held, root);
    uint64_t fallbacks = nodecoll_stat_calls(coll_names[coll], "pmpi:*");
    int ours = class_of(run(&k, comm)), expected = held < sent && receives(&k) ? MPI_ERR_TRUNCATE : MPI_SUCCESS;
    T_CHECK(nodecoll_stat_calls(coll_names[coll], "pmpi:*") == fallbacks, "%s: went to the host MPI", what);
    T_CHECK(guard_intact(&k), "%s: wrote past the receive buffer", what);
    T_CHECK(ours == expected, "%s: error class %d, the hosts report %d", what, ours, expected);
    T_CHECK(handler_calls == (ours != MPI_SUCCESS), "%s: the error handler ran %d times", what, handler_calls);
    if (held > sent) T_CHECK(long_data_right(&k), "%s: wrong data in a receive buffer that is large enough", what);
    handler_calls = 0;
    check_in_step(comm, root, what);
    free(k.send);
    free(k.recv);
}

/* A staged receive vector (the root's, in place, with a derived type) keeps every block that
 * arrived when another rank sent too much: MPI_ERR_TRUNCATE at the root, as the hosts give,
 * and the other ranks' blocks delivered (the staged copy is unpacked on the error too). */
static void check_staged_truncation(MPI_Comm comm)
{
    enum { N = 4 };
    if (t_size < 3) return;
    MPI_Datatype strided, resized;
    MPI_Type_vector(N, 1, 2, MPI_INT, &strided);
    MPI_Type_create_resized(strided, 0, 2 * N * (MPI_Aint)sizeof(int), &resized);
    MPI_Type_commit(&resized);
    int send[2 * N], *recv = malloc(sizeof(int) * 2 * N * (size_t)t_size);
    for (int i = 0; i < 2 * N; i++) send[i] = value(t_rank, 0, i);
    for (int i = 0; i < 2 * N * t_size; i++) recv[i] = UNTOUCHED;
    for (int i = 0; i < N; i++) recv[2 * i] = value(0, 0, i); /* the root's own block, in place */
    handler_calls = 0;
    int err = MPI_Gather(t_rank == 0 ? MPI_IN_PLACE : send, t_rank == 1 ? 2 * N : N, MPI_INT, recv, 1, resized, 0,
                         comm);
    if (t_rank == 0) {
        int cls = MPI_SUCCESS;
        if (err != MPI_SUCCESS) MPI_Error_class(err, &cls);
        T_CHECK(cls == MPI_ERR_TRUNCATE && handler_calls == 1, "staged gather: class %d, handler %d times", cls,
                handler_calls);
        for (int r = 2; r < t_size; r++)
            for (int i = 0; i < N; i++)
                T_CHECK(recv[2 * N * r + 2 * i] == value(r, 0, i), "staged gather: rank %d's element %d is %d", r, i,
                        recv[2 * N * r + 2 * i]);
    }
    free(recv);
    MPI_Type_free(&resized);
    MPI_Type_free(&strided);
    check_in_step(comm, 0, "after the staged truncation");
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv);
    MPI_Comm comm;
    MPI_Errhandler handler;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_create_errhandler(count_errors, &handler);
    MPI_Comm_set_errhandler(comm, handler);
    check_in_step(comm, 0, "first call"); /* nodecoll's state exists before the bad calls */
    static const int sizes[] = {6, 3000, 150000};
    for (int coll = 0; coll < COLLS; coll++)
        for (int s = 0; s < 3; s++) {
            int root = (coll + s) % t_size;
            check(coll, sizes[s], sizes[s] / 2, root, comm);
            check(coll, sizes[s], sizes[s] * 2, root, comm);
        }
    check_staged_truncation(comm);
    MPI_Comm_free(&comm);
    MPI_Errhandler_free(&handler);
    return t_finish("test_mismatch");
}
