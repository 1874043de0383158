/* Differential test of the data-movement collectives: MPI_Gather(v), MPI_Scatter(v),
 * MPI_Allgather(v), MPI_Alltoall(v), MPI_Alltoallw through nodecoll against the host's
 * PMPI_ calls on the same input, every root, in place and not.  Counts follow Balaji et al.'s
 * patterns (uniform, all zero, one huge outlier, uneven, mostly zero), displacements leave
 * random gaps and sometimes run backwards; the receive buffers start filled with a marker,
 * and the whole buffer (gaps included) must match the host's byte for byte.
 *
 * Also: a rank with nothing to exchange returns from Alltoallv without waiting for peers that
 * are late (zero-size peers are never contacted), calls back to back with no other
 * synchronisation see every call's data although senders overwrite their buffers at once
 * (small blocks through the ring of slots, which wraps), and bad arguments (negative count, root
 * out of range, MPI_DATATYPE_NULL) give the host's error class.
 *
 * Argument: number of random cases per pattern (default 2). */
#define _DEFAULT_SOURCE /* alarm */
#include "common.h"
#include "watch.h"

/* Every call of the test must succeed, through nodecoll and through the host alike. */
#define T_OK(call)                                                                            \
    do {                                                                                      \
        int t_err_ = (call);                                                                  \
        if (t_err_ != MPI_SUCCESS) t_fail("%s returned %d (line %d)", #call, t_err_, __LINE__); \
    } while (0)

#define MAXP 16
enum { P_UNIFORM, P_ZERO, P_OUTLIER, P_UNEVEN, P_MOSTLY_ZERO, P_COUNT };
static const char *pattern_names[] = {"uniform", "all-zero", "outlier", "uneven", "mostly-zero"};

typedef struct layout {
    int counts[MAXP], displs[MAXP];
    int extent; /* elements the buffer must hold */
} layout;

static int pick(uint64_t *rng, int n) { return (int)(t_rand(rng) % (uint64_t)n); }

static int count_of(int pattern, uint64_t *rng, int i, int outlier)
{
    switch (pattern) {
    case P_UNIFORM: return 5;
    case P_ZERO: return 0;
    case P_OUTLIER: return i == outlier ? 40000 : 1; /* 160 KB: past the slot, single-copy */
    case P_UNEVEN: return pick(rng, 60);
    default: return pick(rng, 5) == 0 ? 1 + pick(rng, 6000) : 0;
    }
}

/* Blocks in rank order or backwards, with gaps of 0-3 elements. */
static layout make_layout(const int *counts, int n, uint64_t *rng)
{
    layout l;
    int backwards = pick(rng, 3) == 0, at = pick(rng, 3);
    for (int k = 0; k < n; k++) {
        int i = backwards ? n - 1 - k : k;
        l.counts[i] = counts[i];
        l.displs[i] = at;
        at += counts[i] + pick(rng, 4);
    }
    l.extent = at + 1;
    return l;
}

static int *alloc_ints(int n, int fill)
{
    int *p = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    for (int i = 0; i < n; i++) p[i] = fill;
    return p;
}

/* Rank r's element k of the block for `to` (to = -1: its one block). */
static int value(int seed, int r, int to, int k) { return seed * 1000003 + r * 65537 + (to + 1) * 4099 + k; }

static void check_same(const int *mine, const int *host, int n, const char *what, int pattern, int root)
{
    for (int i = 0; i < n; i++)
        if (mine[i] != host[i]) {
            t_fail("%s (%s, root %d): element %d is %d, host has %d", what, pattern_names[pattern], root, i, mine[i], host[i]);
            return;
        }
}

/* ---- rooted ------------------------------------------------------------------------------ */

static void run_gather(MPI_Comm comm, const layout *l, int root, int pattern, int seed, int in_place, int vector)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int *send = alloc_ints(l->counts[rank], 0), *out[2];
    for (int k = 0; k < l->counts[rank]; k++) send[k] = value(seed, rank, -1, k);
    for (int a = 0; a < 2; a++) {
        out[a] = alloc_ints(l->extent, -7);
        const void *sb = send;
        if (in_place && rank == root) {
            for (int k = 0; k < l->counts[rank]; k++) out[a][l->displs[rank] + k] = send[k];
            sb = MPI_IN_PLACE;
        }
        if (vector)
            T_OK((a ? MPI_Gatherv : PMPI_Gatherv)(sb, l->counts[rank], MPI_INT, out[a], l->counts, l->displs, MPI_INT, root, comm));
        else
            T_OK((a ? MPI_Gather : PMPI_Gather)(sb, l->counts[0], MPI_INT, out[a], l->counts[0], MPI_INT, root, comm));
    }
    if (rank == root) check_same(out[1], out[0], l->extent, vector ? "gatherv" : "gather", pattern, root);
    free(out[0]);
    free(out[1]);
    free(send);
}

static void run_scatter(MPI_Comm comm, const layout *l, int root, int pattern, int seed, int in_place, int vector)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int *send = alloc_ints(l->extent, -5), *out[2];
    for (int i = 0; i < size; i++)
        for (int k = 0; k < l->counts[i]; k++) send[l->displs[i] + k] = value(seed, root, i, k);
    for (int a = 0; a < 2; a++) {
        out[a] = alloc_ints(l->counts[rank] + 2, -7);
        void *rb = in_place && rank == root ? MPI_IN_PLACE : out[a];
        if (vector)
            T_OK((a ? MPI_Scatterv : PMPI_Scatterv)(send, l->counts, l->displs, MPI_INT, rb, l->counts[rank], MPI_INT, root, comm));
        else
            T_OK((a ? MPI_Scatter : PMPI_Scatter)(send, l->counts[0], MPI_INT, rb, l->counts[0], MPI_INT, root, comm));
    }
    check_same(out[1], out[0], l->counts[rank] + 2, vector ? "scatterv" : "scatter", pattern, root);
    free(out[0]);
    free(out[1]);
    free(send);
}

/* ---- allgather ---------------------------------------------------------------------------- */

static void run_allgather(MPI_Comm comm, const layout *l, int pattern, int seed, int in_place, int vector)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int *send = alloc_ints(l->counts[rank], 0), *out[2];
    for (int k = 0; k < l->counts[rank]; k++) send[k] = value(seed, rank, -1, k);
    for (int a = 0; a < 2; a++) {
        out[a] = alloc_ints(l->extent + size * l->counts[0], -7);
        const void *sb = send;
        if (in_place) {
            int at = vector ? l->displs[rank] : rank * l->counts[0];
            for (int k = 0; k < l->counts[rank]; k++) out[a][at + k] = send[k];
            sb = MPI_IN_PLACE;
        }
        if (vector)
            T_OK((a ? MPI_Allgatherv : PMPI_Allgatherv)(sb, l->counts[rank], MPI_INT, out[a], l->counts, l->displs, MPI_INT, comm));
        else
            T_OK((a ? MPI_Allgather : PMPI_Allgather)(sb, l->counts[0], MPI_INT, out[a], l->counts[0], MPI_INT, comm));
    }
    check_same(out[1], out[0], l->extent + size * l->counts[0], vector ? "allgatherv" : "allgather", pattern, -1);
    free(out[0]);
    free(out[1]);
    free(send);
}

/* ---- alltoall ------------------------------------------------------------------------------ */

/* matrix[i * size + j]: elements rank i sends to rank j. */
static void run_alltoall(MPI_Comm comm, const int *matrix, uint64_t *rng, int pattern, int seed, int in_place, int kind)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int sc[MAXP], rc[MAXP];
    /* In place, one vector describes both directions: the counts must be symmetric. */
    for (int j = 0; j < size; j++) {
        int lo = rank < j ? rank : j, hi = rank < j ? j : rank;
        sc[j] = kind == 0 ? matrix[0] : in_place ? matrix[lo * size + hi] : matrix[rank * size + j];
        rc[j] = kind == 0 ? matrix[0] : in_place ? matrix[lo * size + hi] : matrix[j * size + rank];
    }
    layout s = make_layout(sc, size, rng), r = make_layout(rc, size, rng);
    if (in_place) s = r;
    if (kind == 0) { /* Alltoall: blocks back to back */
        for (int j = 0; j < size; j++) s.displs[j] = r.displs[j] = j * sc[0];
        s.extent = r.extent = size * sc[0] + 1;
    }
    int *send = alloc_ints(s.extent, -7), *out[2];
    for (int j = 0; j < size; j++)
        for (int k = 0; k < sc[j]; k++) send[s.displs[j] + k] = value(seed, rank, j, k);
    MPI_Datatype types[MAXP];
    int sbytes[MAXP], rbytes[MAXP];
    for (int j = 0; j < size; j++) {
        types[j] = MPI_INT;
        sbytes[j] = s.displs[j] * (int)sizeof(int);
        rbytes[j] = r.displs[j] * (int)sizeof(int);
    }
    static const char *names[] = {"alltoall", "alltoallv", "alltoallw"};
    for (int a = 0; a < 2; a++) {
        out[a] = alloc_ints(r.extent, -7);
        /* The host runs the in-place case out of place from the same data (Open MPI 4.1.4's
         * in-place Alltoallw corrupts memory). */
        const void *sb = send;
        if (in_place && a) {
            memcpy(out[a], send, sizeof(int) * (size_t)r.extent);
            sb = MPI_IN_PLACE;
        }
        if (kind == 0)
            T_OK((a ? MPI_Alltoall : PMPI_Alltoall)(sb, sc[0], MPI_INT, out[a], rc[0], MPI_INT, comm));
        else if (kind == 1)
            T_OK((a ? MPI_Alltoallv : PMPI_Alltoallv)(sb, sc, s.displs, MPI_INT, out[a], rc, r.displs, MPI_INT, comm));
        else
            T_OK((a ? MPI_Alltoallw : PMPI_Alltoallw)(sb, sc, sbytes, types, out[a], rc, rbytes, types, comm));
    }
    check_same(out[1], out[0], r.extent, names[kind], pattern, -1);
    free(out[0]);
    free(out[1]);
    free(send);
}

/* ---- one case of every call ------------------------------------------------------------ */

static void run_case(MPI_Comm comm, int pattern, int seed)
{
    int size;
    MPI_Comm_size(comm, &size);
    uint64_t rng = (uint64_t)seed * 7919 + (uint64_t)pattern;
    int counts[MAXP] = {0}, matrix[MAXP * MAXP] = {0};
    int outlier = pick(&rng, size);
    for (int i = 0; i < size; i++) counts[i] = count_of(pattern, &rng, i, outlier);
    for (int i = 0; i < size * size; i++) matrix[i] = count_of(pattern, &rng, i % size, outlier);
    layout l = make_layout(counts, size, &rng), uniform = l;
    for (int i = 0; i < size; i++) uniform.counts[i] = counts[0], uniform.displs[i] = i * counts[0];
    uniform.extent = size * counts[0] + 1;
    int in_place = seed & 1;
    for (int root = 0; root < size; root++) {
        run_gather(comm, &l, root, pattern, seed, in_place, 1);
        run_gather(comm, &uniform, root, pattern, seed, !in_place, 0);
        run_scatter(comm, &l, root, pattern, seed, in_place, 1);
        run_scatter(comm, &uniform, root, pattern, seed, !in_place, 0);
    }
    run_allgather(comm, &l, pattern, seed, in_place, 1);
    run_allgather(comm, &uniform, pattern, seed, !in_place, 0);
    /* One rank: nodecoll hands the call to the host, whose Alltoallw on one rank reads past
     * the send buffer (Open MPI 4.1.4, ompi_datatype_sndrcv). */
    for (int kind = 0; kind < (size > 1 ? 3 : 2); kind++) run_alltoall(comm, matrix, &rng, pattern, seed, (seed + kind) & 1, kind);
}

/* ---- derived datatypes ------------------------------------------------------------------ */

/* Every family with a derived type that leaves gaps (one int every 8 bytes) on one side and
 * MPI_INT on the other, as MPI allows when the type signatures match, and with derived
 * types on both sides; the whole receive buffer, gaps included, must equal the host's. */
static void run_derived(MPI_Comm comm, int seed)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Datatype gappy;
    MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &gappy);
    MPI_Type_commit(&gappy);
    uint64_t rng = (uint64_t)seed * 104729u;
    static const char *names[] = {"gather", "gatherv", "scatter", "scatterv", "allgather",
                                  "allgatherv", "alltoall", "alltoallv", "alltoallw"};
    for (int call = 0; call < 9; call++)
        for (int sides = 0; sides < 3; sides++) { /* derived send / derived receive / both */
            /* Every other case is large enough for single-copy reads (24 KiB packed and up). */
            int n = (int)(t_rand(&rng) % 40) + (sides == call % 3 ? 6000 : 0), root = (int)(t_rand(&rng) % (uint64_t)size);
            MPI_Datatype st = sides != 1 ? gappy : MPI_INT, rt = sides != 0 ? gappy : MPI_INT;
            size_t cap = (size_t)(2 * size * n + 4);
            int *send = alloc_ints((int)cap, 0), *out[2], counts[MAXP], displs[MAXP], bytes[MAXP];
            MPI_Datatype stypes[MAXP], rtypes[MAXP];
            for (size_t k = 0; k < cap; k++) send[k] = value(seed, rank, call, (int)k);
            for (int q = 0; q < size; q++) {
                counts[q] = n, displs[q] = q * n;
                stypes[q] = q % 2 ? st : MPI_INT, rtypes[q] = q % 2 ? rt : MPI_INT;
                bytes[q] = q * n * 2 * (int)sizeof(int); /* room for the gappy form */
            }
            for (int a = 0; a < 2; a++) {
                out[a] = alloc_ints((int)cap, -7);
                switch (call) {
                case 0: T_OK((a ? MPI_Gather : PMPI_Gather)(send, n, st, out[a], n, rt, root, comm)); break;
                case 1: T_OK((a ? MPI_Gatherv : PMPI_Gatherv)(send, n, st, out[a], counts, displs, rt, root, comm)); break;
                case 2: T_OK((a ? MPI_Scatter : PMPI_Scatter)(send, n, st, out[a], n, rt, root, comm)); break;
                case 3: T_OK((a ? MPI_Scatterv : PMPI_Scatterv)(send, counts, displs, st, out[a], n, rt, root, comm)); break;
                case 4: T_OK((a ? MPI_Allgather : PMPI_Allgather)(send, n, st, out[a], n, rt, comm)); break;
                case 5: T_OK((a ? MPI_Allgatherv : PMPI_Allgatherv)(send, n, st, out[a], counts, displs, rt, comm)); break;
                case 6: T_OK((a ? MPI_Alltoall : PMPI_Alltoall)(send, n, st, out[a], n, rt, comm)); break;
                case 7:
                    T_OK((a ? MPI_Alltoallv : PMPI_Alltoallv)(send, counts, displs, st, out[a], counts, displs, rt, comm));
                    break;
                default:
                    T_OK((a ? MPI_Alltoallw : PMPI_Alltoallw)(send, counts, bytes, stypes, out[a], counts, bytes, rtypes, comm));
                }
            }
            char what[64];
            snprintf(what, sizeof what, "%s, derived %s", names[call], sides == 0 ? "send" : sides == 1 ? "receive" : "both");
            check_same(out[1], out[0], (int)cap, what, 0, root);
            free(out[0]);
            free(out[1]);
            free(send);
        }
    if (t_size > 1 && !getenv("NODECOLL_CMA"))
        T_CHECK(nodecoll_stat_calls("allgatherv", "packed") > 0, "derived datatypes never took the packed path");
    MPI_Type_free(&gappy);
}

/* Receive types whose runs are long (512 B of every 640 B): the blocks are read in place
 * (counted "typed"), on one node by vectored single-copy reads once a block leaves the slot,
 * across nodes from the leader's copy (Alltoall: the remote blocks through one scratch);
 * Scatter's single receive buffer likewise.
 * Senders use MPI_INT with the same signature. */
static void run_derived_runs(MPI_Comm comm)
{
    enum { RUN = 128, STRIDE = 160 };
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Datatype run, runs;
    MPI_Type_contiguous(RUN, MPI_INT, &run);
    MPI_Type_create_resized(run, 0, STRIDE * (MPI_Aint)sizeof(int), &runs);
    MPI_Type_commit(&runs);
    static const char *names[] = {"gather", "allgather", "alltoall", "alltoallw", "scatter", "gather"};
    for (int call = 0; call < 6; call++) /* 5: Gather in place (the root's block is input: staged) */
        for (int big = 0; big < 2; big++) {
            int n = big ? 64 : 4, root = (call + big) % size, ints = n * RUN, cap = size * n * STRIDE + 4;
            int *send = alloc_ints(size * ints, 0), *out[2], counts[MAXP], bytes[MAXP], scounts[MAXP], sbytes[MAXP];
            MPI_Datatype rtypes[MAXP], stypes[MAXP];
            for (int k = 0; k < size * ints; k++) send[k] = value(7, rank, call, k);
            for (int q = 0; q < size; q++) {
                rtypes[q] = q % 2 ? MPI_INT : runs, counts[q] = q % 2 ? ints : n, bytes[q] = q * n * STRIDE * (int)sizeof(int);
                stypes[q] = MPI_INT, scounts[q] = ints, sbytes[q] = q * ints * (int)sizeof(int);
            }
            uint64_t typed = nodecoll_stat_calls(names[call], "typed");
            for (int a = 0; a < 2; a++) {
                out[a] = alloc_ints(cap, -7);
                for (int k = 0; call == 5 && rank == root && k < n; k++) /* my block, in its layout */
                    memcpy(out[a] + (root * n + k) * STRIDE, send + k * RUN, RUN * sizeof(int));
                switch (call) {
                case 0: T_OK((a ? MPI_Gather : PMPI_Gather)(send, ints, MPI_INT, out[a], n, runs, root, comm)); break;
                case 1: T_OK((a ? MPI_Allgather : PMPI_Allgather)(send, ints, MPI_INT, out[a], n, runs, comm)); break;
                case 2: T_OK((a ? MPI_Alltoall : PMPI_Alltoall)(send, ints, MPI_INT, out[a], n, runs, comm)); break;
                case 4: T_OK((a ? MPI_Scatter : PMPI_Scatter)(send, ints, MPI_INT, out[a], n, runs, root, comm)); break;
                case 5:
                    T_OK((a ? MPI_Gather : PMPI_Gather)(rank == root ? MPI_IN_PLACE : send, ints, MPI_INT, out[a], n, runs,
                                                   root, comm));
                    break;
                default:
                    T_OK((a ? MPI_Alltoallw : PMPI_Alltoallw)(send, scounts, sbytes, stypes, out[a], counts, bytes, rtypes, comm));
                }
            }
            char what[64];
            snprintf(what, sizeof what, "%s, receive runs of %d B, %d per block", names[call], RUN * 4, n);
            check_same(out[1], out[0], cap, what, 0, root);
            int receives = (call != 0 && call != 5) || rank == root;
            if (size > 1 && receives && call != 5)
                T_CHECK(nodecoll_stat_calls(names[call], "typed") > typed, "%s: not read in place", what);
            free(out[0]);
            free(out[1]);
            free(send);
        }
    MPI_Type_free(&runs);
    MPI_Type_free(&run);
}

/* ---- zero-size peers ------------------------------------------------------------------- */

/* Rank 0 exchanges nothing; the others exchange a ring.  Rank 0 must return from Alltoallv
 * without waiting for them: the others enter the call only after rank 0 has left it (a
 * message from rank 0 says so), so a rank 0 that waited for them would deadlock (a watchdog
 * turns that into a failure).  Ordered, not timed: it cannot flake when oversubscribed. */
typedef struct ring_call {
    int *send, *recv, *sc, *rc, *displs;
    MPI_Comm comm;
} ring_call;

static void ring_alltoallv(void *ctx)
{
    ring_call *r = ctx;
    T_OK(MPI_Alltoallv(r->send, r->sc, r->displs, MPI_INT, r->recv, r->rc, r->displs, MPI_INT, r->comm));
}

static void run_zero_peer_check(MPI_Comm comm)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    const char *check = getenv("NODECOLL_CHECK"); /* (which makes every call wait for every rank) */
    if (size < 3 || (check && atoi(check))) return;
    int sc[MAXP] = {0}, rc[MAXP] = {0}, displs[MAXP] = {0}, send[4] = {rank, rank, rank, rank}, recv[4] = {0};
    if (rank != 0) {
        int right = rank % (size - 1) + 1, left = (rank - 2 + size - 1) % (size - 1) + 1;
        sc[right] = rc[left] = 1;
    }
    ring_call ring = {send, recv, sc, rc, displs, comm};
    ring_alltoallv(&ring); /* warm up */
    MPI_Barrier(comm);
    run_rank0_first(comm, ring_alltoallv, &ring,
                    "FAIL: alltoallv: a rank with only zero-size peers waited for them (deadlock)\n");
    if (rank != 0) T_CHECK(recv[0] == (rank - 2 + size - 1) % (size - 1) + 1, "alltoallv ring: got %d", recv[0]);
    MPI_Barrier(comm);
}

/* ---- calls back to back ---------------------------------------------------------------- */

/* Calls with no other synchronisation between them: a publisher of a small block returns
 * at once and may run ahead of its readers until its ring of slots wraps (64 inline flags,
 * NODECOLL_SEGMENTS ring segments).  Every sender overwrites its buffer right after each
 * call and the data changes every call, so a reader that copied from the sender's buffer
 * instead of the slot, or from a slot the sender had already refilled, sees the wrong
 * call's values; the last rank falls behind now and then, so the ring wraps while it is
 * late.  Sizes: a block that rides in the flag, one in a ring segment, and one beyond a
 * small NODECOLL_MOVE_SLOT (the round's direct reads). */
typedef struct b2b_bufs {
    int *send, *recv;
    int n, rank, size, bad;
} b2b_bufs;

static void b2b_expect(b2b_bufs *b, const int *got, int seed, int from, int to, int k)
{
    if (*got != value(seed, from, to, k) && !b->bad++)
        t_fail("back to back, %d ints, call %d: element %d from rank %d is %d, expected %d", b->n, seed, k, from, *got,
               value(seed, from, to, k));
}

static void b2b_overwrite(b2b_bufs *b, int blocks)
{
    for (int i = 0; i < blocks * b->n; i++) b->send[i] = -3;
}

static void b2b_gather(MPI_Comm comm, b2b_bufs *b, int it, int root)
{
    int n = b->n, me = b->rank;
    for (int k = 0; k < n; k++) b->send[k] = value(it, me, -1, k);
    T_OK(MPI_Gather(b->send, n, MPI_INT, b->recv, n, MPI_INT, root, comm));
    b2b_overwrite(b, 1);
    for (int i = 0; me == root && i < b->size; i++)
        for (int k = 0; k < n; k++) b2b_expect(b, &b->recv[i * n + k], it, i, -1, k);
}

static void b2b_scatter(MPI_Comm comm, b2b_bufs *b, int it, int root)
{
    int n = b->n, me = b->rank;
    for (int i = 0; me == root && i < b->size; i++)
        for (int k = 0; k < n; k++) b->send[i * n + k] = value(it, me, i, k);
    T_OK(MPI_Scatter(b->send, n, MPI_INT, b->recv, n, MPI_INT, root, comm));
    b2b_overwrite(b, b->size);
    for (int k = 0; k < n; k++) b2b_expect(b, &b->recv[k], it, root, me, k);
}

static void b2b_allgather(MPI_Comm comm, b2b_bufs *b, int it)
{
    int n = b->n, me = b->rank;
    for (int k = 0; k < n; k++) b->send[k] = value(it, me, -1, k);
    T_OK(MPI_Allgather(b->send, n, MPI_INT, b->recv, n, MPI_INT, comm));
    b2b_overwrite(b, 1);
    for (int i = 0; i < b->size; i++)
        for (int k = 0; k < n; k++) b2b_expect(b, &b->recv[i * n + k], it, i, -1, k);
}

static void b2b_alltoall(MPI_Comm comm, b2b_bufs *b, int it)
{
    int n = b->n, me = b->rank;
    for (int i = 0; i < b->size; i++)
        for (int k = 0; k < n; k++) b->send[i * n + k] = value(it, me, i, k);
    T_OK(MPI_Alltoall(b->send, n, MPI_INT, b->recv, n, MPI_INT, comm));
    b2b_overwrite(b, b->size);
    for (int i = 0; i < b->size; i++)
        for (int k = 0; k < n; k++) b2b_expect(b, &b->recv[i * n + k], it, i, me, k);
}

/* `late` falls behind now and then. */
static void b2b_maybe_late(const b2b_bufs *b, int it, int late)
{
    if (b->rank == late && it % 50 == 0) usleep(2000);
}

static void run_back_to_back(MPI_Comm comm)
{
    static const int sizes[] = {2, 40, 1500}; /* ints: in the flag, a ring segment, beyond a small slot */
    /* (emulated nodes run every call through the host between nodes: fewer calls) */
    int calls = getenv("NODECOLL_RANKS_PER_NODE") ? 20 : t_scale(200);
    b2b_bufs b = {0};
    MPI_Comm_rank(comm, &b.rank);
    MPI_Comm_size(comm, &b.size);
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        b.n = sizes[s];
        b.bad = 0;
        b.send = alloc_ints(b.size * b.n, 0);
        b.recv = alloc_ints(b.size * b.n, 0);
        /* Gather's senders run ahead of a late root, Scatter's root ahead of a late receiver. */
        for (int it = 1; it <= calls; it++) {
            b2b_maybe_late(&b, it, 0);
            b2b_gather(comm, &b, it, 0);
        }
        for (int it = 1; it <= calls; it++) {
            b2b_maybe_late(&b, it, b.size - 1);
            b2b_scatter(comm, &b, it, 0);
        }
        for (int it = 1; it <= calls; it++) {
            b2b_maybe_late(&b, it, b.size - 1);
            b2b_gather(comm, &b, it, it % b.size);
            b2b_scatter(comm, &b, it, it % b.size);
            b2b_allgather(comm, &b, it);
            b2b_alltoall(comm, &b, it);
        }
        free(b.send);
        free(b.recv);
    }
}

/* ---- nodecoll's messages stay invisible ------------------------------------------------ */

/* A wildcard receive the program posted before an Alltoall must not take any of the call's
 * own messages (across nodes they travel point to point): it completes with the program's
 * own message, sent after the call, and the Alltoall delivers the right data. */
static void run_wildcard_receive(MPI_Comm comm)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    /* (One rank: nodecoll hands the call to the host, and MPICH 4.0.2's own Alltoall on one rank
     * hangs while a wildcard receive is posted.) */
    if (size == 1) return;
    int mine[2] = {-1, -1}, note[2] = {rank, 4242}, *send = alloc_ints(size * 64, 0), *out[2];
    for (int k = 0; k < size * 64; k++) send[k] = value(5, rank, k / 64, k % 64);
    MPI_Request req;
    watch("FAIL: alltoall with a wildcard receive posted: deadlock (the receive took the call's own message)\n");
    T_OK(MPI_Irecv(mine, 2, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &req));
    for (int a = 0; a < 2; a++) {
        out[a] = alloc_ints(size * 64, -7);
        T_OK((a ? MPI_Alltoall : PMPI_Alltoall)(send, 64, MPI_INT, out[a], 64, MPI_INT, comm));
    }
    check_same(out[1], out[0], size * 64, "alltoall with a wildcard receive posted", 0, -1);
    T_OK(MPI_Send(note, 2, MPI_INT, (rank + 1) % size, 9, comm));
    MPI_Status st;
    T_OK(MPI_Wait(&req, &st));
    watch(NULL);
    int from = (rank + size - 1) % size;
    T_CHECK(mine[0] == from && mine[1] == 4242 && st.MPI_SOURCE == from && st.MPI_TAG == 9,
            "a wildcard receive took (%d, %d) from rank %d tag %d, want the program's (%d, 4242) from %d tag 9",
            mine[0], mine[1], st.MPI_SOURCE, st.MPI_TAG, from, from);
    free(out[0]);
    free(out[1]);
    free(send);
}

/* ---- bad arguments -------------------------------------------------------------------- */

static int error_class(int err)
{
    int cls = err;
    if (err != MPI_SUCCESS) MPI_Error_class(err, &cls);
    return cls;
}

static void run_errors(MPI_Comm comm)
{
    int size, buf[64] = {0}, out[64 * MAXP] = {0}, counts[MAXP], displs[MAXP];
    MPI_Comm_size(comm, &size);
    for (int i = 0; i < size; i++) counts[i] = 1, displs[i] = i;
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    const char *names[] = {"gather root", "scatter negative", "allgather null type", "alltoall negative",
                           "gatherv root", "allgatherv null type"};
    for (int c = 0; c < 6; c++) {
        int cls[2];
        for (int a = 0; a < 2; a++) {
            int err;
            switch (c) {
            case 0: err = (a ? MPI_Gather : PMPI_Gather)(buf, 1, MPI_INT, out, 1, MPI_INT, size, comm); break;
            case 1: err = (a ? MPI_Scatter : PMPI_Scatter)(buf, -1, MPI_INT, out, -1, MPI_INT, 0, comm); break;
            case 2: err = (a ? MPI_Allgather : PMPI_Allgather)(buf, 1, MPI_DATATYPE_NULL, out, 1, MPI_DATATYPE_NULL, comm); break;
            case 3: err = (a ? MPI_Alltoall : PMPI_Alltoall)(buf, -1, MPI_INT, out, -1, MPI_INT, comm); break;
            case 4: err = (a ? MPI_Gatherv : PMPI_Gatherv)(buf, 1, MPI_INT, out, counts, displs, MPI_INT, -2, comm); break;
            default:
                err = (a ? MPI_Allgatherv : PMPI_Allgatherv)(buf, 1, MPI_DATATYPE_NULL, out, counts, displs, MPI_DATATYPE_NULL, comm);
            }
            cls[a] = error_class(err);
        }
        T_CHECK(cls[0] == cls[1], "%s: nodecoll error class %d, host %d", names[c], cls[1], cls[0]);
    }
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_ARE_FATAL);
}

/* The fast path ran (not the host) where the settings allow it. */
static void check_fast_path(void)
{
    static const char *colls[] = {"gather", "gatherv", "scatter", "scatterv", "allgather", "allgatherv",
                                  "alltoall", "alltoallv", "alltoallw"};
    if (t_size == 1 || getenv("NODECOLL_CMA")) return;
    for (int i = 0; i < 9; i++) {
        T_CHECK(nodecoll_stat_calls(colls[i], "cma") > 0, "%s never took the fast path", colls[i]);
        T_CHECK(nodecoll_stat_calls(colls[i], "pmpi:no-cma") == 0, "%s fell back without single-copy", colls[i]);
    }
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv);
    int cases = argc > 1 ? atoi(argv[1]) : 2;
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    for (int seed = 1; seed <= cases; seed++)
        for (int p = 0; p < P_COUNT; p++) run_case(comm, p, seed);
    check_fast_path();
    run_derived(comm, cases + 2);
    run_derived_runs(comm);
    run_zero_peer_check(comm);
    run_back_to_back(comm);
    run_wildcard_receive(comm);
    run_errors(comm);
    /* The communicator still works after the errors. */
    run_case(comm, P_UNEVEN, cases + 1);
    MPI_Comm_free(&comm);
    return t_finish("test_move");
}
