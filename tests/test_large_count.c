/* MPI-4's large-count collectives against the host: every MPI_<Coll>_c nodecoll accelerates
 * (Bcast, Reduce, Allreduce, Reduce_scatter(_block), Scan, Exscan, Gather(v), Scatter(v),
 * Allgather(v), Alltoall(v,w)) in its blocking, nonblocking (MPI_I<coll>_c) and persistent
 * (MPI_<Coll>_init_c, started twice with new data) form, each result compared byte for byte
 * (gaps included) with the host's blocking PMPI_<Coll>_c on the same input.
 *
 * Drawn per case, alike on every rank: counts (zero, small, past the move slot), roots,
 * MPI_IN_PLACE where MPI allows it, element types (MPI_INT and a resized int with gaps, both
 * one int of signature, mixed between send and receive side and per Alltoallw block; the
 * reductions' int, long, double and unsigned with a predefined op, or a user op made by
 * MPI_Op_create or MPI_Op_create_c), v-forms' blocks in a random order with gaps.  Arguments
 * that are not significant at a rank hold garbage in nodecoll's run (NULL arrays and buffers
 * off the root, -1 counts).  Where
 * nodecoll serves the communicator (more than one rank) the counters must show that it
 * served every call: none went to the host.  Then what nodecoll leaves to the host (invalid
 * arguments, an element larger than a pipeline segment) must reach PMPI_<Coll>_c, give the
 * host's error class or result, and be counted as the int forms' are.
 *
 * Argument: rounds per collective and form (default 3).  Only where the host has the _c
 * forms. */
#include "common.h"

#if MPI_VERSION < 4
#error "built only where the host has MPI-4's large-count forms (tests/test_large_count.cmake)"
#endif

#define MAXP 16
enum { LARGE = 12000 }; /* ints: past the move slot and the inline fragments */

enum { BCAST, REDUCE, ALLREDUCE, RS, RSB, SCAN, EXSCAN, GATHER, GATHERV, SCATTER, SCATTERV, ALLGATHER, ALLGATHERV,
       ALLTOALL, ALLTOALLV, ALLTOALLW, NCOLLS };
static const char *coll_names[NCOLLS] = {
    "bcast",  "reduce",  "allreduce", "reduce_scatter", "reduce_scatter_block", "scan",     "exscan",    "gather",
    "gatherv", "scatter", "scatterv", "allgather",      "allgatherv",           "alltoall", "alltoallv", "alltoallw"};
static int is_reduction(int coll) { return coll >= REDUCE && coll <= EXSCAN; }
static int is_vector(int coll)
{
    return coll == GATHERV || coll == SCATTERV || coll == ALLGATHERV || coll >= ALLTOALLV;
}
static int is_gather(int coll) { return coll == GATHER || coll == GATHERV; }
static int is_scatter(int coll) { return coll == SCATTER || coll == SCATTERV; }
static int is_rooted(int coll) { return coll <= REDUCE || is_gather(coll) || is_scatter(coll); }

enum { ORACLE, BLOCKING, NONBLOCKING, PERSISTENT, NFORMS };
static const char *form_names[NFORMS] = {"host", "blocking", "nonblocking", "persistent"};

/* ---- element types --------------------------------------------------------------------------- */

static MPI_Datatype gappy; /* one int every 8 bytes */
static MPI_Op user_sum_op, user_max_c_op;

static void user_sum(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    for (int i = 0; i < *len; i++) ((int *)inout)[i] += ((const int *)in)[i];
}

/* MPI_Op_create_c's kind of function: its count is an MPI_Count. */
static void user_max_c(void *in, void *inout, MPI_Count *len, MPI_Datatype *type)
{
    (void)type;
    for (MPI_Count i = 0; i < *len; i++)
        if (((const long *)in)[i] > ((long *)inout)[i]) ((long *)inout)[i] = ((const long *)in)[i];
}

/* The reductions' types and ops. */
typedef struct kind {
    const char *name;
    MPI_Datatype type;
    MPI_Op op;
    size_t size;
} kind;
enum { NKINDS = 6 };
static kind kinds[NKINDS];

static MPI_Aint extent_of(MPI_Datatype t)
{
    MPI_Aint lb, extent;
    MPI_Type_get_extent(t, &lb, &extent);
    return extent;
}

/* One element's value (integers, small: every sum and product is exact in any order). */
static void gen(char *x, MPI_Datatype t, uint64_t v)
{
    int i = (int)(v % 2001) - 1000;
    if (t == MPI_DOUBLE) {
        double d = i;
        memcpy(x, &d, sizeof d);
    } else if (t == MPI_LONG) {
        long l = (long)v % 1000000007L;
        memcpy(x, &l, sizeof l);
    } else if (t == MPI_UNSIGNED) {
        unsigned u = (unsigned)(v >> 7);
        memcpy(x, &u, sizeof u);
    } else {
        memcpy(x, &i, sizeof i);
    }
}

/* ---- a case ---------------------------------------------------------------------------------- */

/* One side (send or receive) of a call: blocks of counts[i] elements at displs[i] (in
 * elements of the side's type; in bytes for Alltoallw, with a type per block). */
typedef struct side {
    MPI_Count counts[MAXP];
    MPI_Aint displs[MAXP];
    MPI_Datatype types[MAXP];
    MPI_Datatype type;
    size_t bytes;
} side;

typedef struct tcase {
    int coll, root, in_place, garbage, kind;
    MPI_Comm comm;
    int rank, size;
    MPI_Count count;    /* Bcast's, the reductions' (Reduce_scatter_block: per rank), the single buffer's */
    MPI_Datatype one_type; /* the single buffer's (Gather's and Allgather's send, Scatter's receive) */
    side s, r;
    char *send, *recv, *expect;
    char *oracle_in; /* in-place reductions: the oracle's input, a copy of the receive buffer */
    size_t send_bytes, recv_bytes;
    MPI_Request req;
} tcase;

static int pick(uint64_t *rng, int n) { return (int)(t_rand(rng) % (uint64_t)n); }

static MPI_Count draw_count(uint64_t *rng)
{
    switch (pick(rng, 5)) {
    case 0: return 0;
    case 1: return 1 + pick(rng, 7);
    case 2: return pick(rng, 200);
    case 3: return LARGE;
    default: return pick(rng, 3000);
    }
}

/* Blocks in a random order with gaps of 0-2 elements (or 4-byte steps). */
static void place(side *v, int n, int in_bytes, uint64_t *rng)
{
    int order[MAXP];
    t_permutation(order, n, rng);
    MPI_Aint step = in_bytes ? 4 : extent_of(v->type), at = pick(rng, 3) * step;
    for (int k = 0; k < n; k++) {
        int i = order[k];
        v->displs[i] = in_bytes ? at : at / step;
        at += (MPI_Aint)v->counts[i] * extent_of(v->types[i]);
        at = (at + step - 1) / step * step + pick(rng, 3) * step;
    }
    v->bytes = (size_t)at + 8;
}

/* Blocks back to back, `count` each. */
static void uniform(side *v, int n, MPI_Count count)
{
    for (int i = 0; i < n; i++) v->counts[i] = count, v->displs[i] = (MPI_Aint)i * count, v->types[i] = v->type;
    v->bytes = (size_t)n * (size_t)count * (size_t)extent_of(v->type) + 8;
}

/* Every rank draws the same case (rng shared), its gaps from its own `local`. */
static tcase draw(int coll, int root, MPI_Comm comm, uint64_t *rng, uint64_t *local)
{
    tcase c = {.coll = coll, .root = root, .comm = comm, .req = MPI_REQUEST_NULL};
    MPI_Comm_rank(comm, &c.rank);
    MPI_Comm_size(comm, &c.size);
    int n = c.size, me = c.rank;
    c.in_place = coll != BCAST && pick(rng, 3) == 0;
    c.garbage = pick(rng, 2);
    c.kind = pick(rng, NKINDS);
    c.count = draw_count(rng);
    MPI_Count matrix[MAXP * MAXP];
    for (int i = 0; i < n * n; i++) matrix[i] = draw_count(rng);
    for (int i = 0; c.in_place && i < n; i++) /* (in place, what i sends j is what j sends i) */
        for (int j = 0; j < i; j++) matrix[i * n + j] = matrix[j * n + i];
    c.s.type = pick(rng, 2) ? gappy : MPI_INT;
    c.r.type = pick(rng, 2) ? gappy : MPI_INT;
    if (coll == BCAST) c.s.type = c.r.type;
    for (int i = 0; i < n; i++) {
        int alltoall = coll >= ALLTOALL;
        c.s.counts[i] = alltoall ? matrix[me * n + i] : matrix[i];
        c.r.counts[i] = alltoall ? matrix[i * n + me] : matrix[i];
        /* (Alltoallw: each block's type drawn, every one an int of signature) */
        c.s.types[i] = coll == ALLTOALLW && pick(local, 2) ? MPI_INT : c.s.type;
        c.r.types[i] = coll == ALLTOALLW && pick(local, 2) ? MPI_INT : c.r.type;
    }
    if (is_reduction(coll)) {
        c.s.type = c.r.type = kinds[c.kind].type;
        MPI_Count total = 0;
        for (int i = 0; i < n; i++) total += coll == RS ? c.r.counts[i] : c.count;
        MPI_Count in = coll == RS || coll == RSB ? total : c.count;
        MPI_Count out = coll == RS ? c.r.counts[me] : c.count;
        c.send_bytes = (size_t)in * kinds[c.kind].size + 1;
        c.recv_bytes = (size_t)(c.in_place ? in : out) * kinds[c.kind].size + 1;
        return c;
    }
    c.one_type = is_scatter(coll) ? c.r.type : c.s.type;
    if (is_vector(coll)) {
        if (coll == GATHERV || coll == ALLGATHERV || coll == SCATTERV) c.count = matrix[me];
        place(&c.s, n, coll == ALLTOALLW, local);
        place(&c.r, n, coll == ALLTOALLW, local);
    } else {
        uniform(&c.s, n, c.count);
        uniform(&c.r, n, c.count);
    }
    if (c.in_place && coll >= ALLTOALL) c.s = c.r;
    size_t one = (size_t)c.count * (size_t)extent_of(c.one_type) + 8;
    c.send_bytes = coll == BCAST ? 1 : is_gather(coll) || coll == ALLGATHER || coll == ALLGATHERV ? one : c.s.bytes;
    c.recv_bytes = coll == BCAST ? one : is_scatter(coll) ? one : c.r.bytes;
    return c;
}

/* New data: typed values for the reductions, bytes for the rest; in place, the receive
 * buffer holds input too.  The oracle's buffer starts the same. */
static void fill(tcase *c, int salt)
{
    uint64_t seed = (uint64_t)salt * 7919 + (uint64_t)c->rank * 104729;
    if (is_reduction(c->coll)) {
        size_t size = kinds[c->kind].size;
        for (size_t e = 0; e + 1 < c->send_bytes; e += size) gen(c->send + e, kinds[c->kind].type, t_rand(&seed));
        for (size_t e = 0; e + 1 < c->recv_bytes; e += size) gen(c->recv + e, kinds[c->kind].type, t_rand(&seed));
    } else {
        for (size_t i = 0; i < c->send_bytes; i++) c->send[i] = (char)t_rand(&seed);
        for (size_t i = 0; i < c->recv_bytes; i++) c->recv[i] = (char)t_rand(&seed);
    }
    memcpy(c->expect, c->recv, c->recv_bytes);
}

/* ---- the calls ------------------------------------------------------------------------------- */

#define T_FORMS(form, req, Name, IName, ...)                                        \
    ((form) == ORACLE        ? PMPI_##Name##_c(__VA_ARGS__)                         \
     : (form) == BLOCKING    ? MPI_##Name##_c(__VA_ARGS__)                          \
     : (form) == NONBLOCKING ? MPI_##IName##_c(__VA_ARGS__, req)                    \
                             : MPI_##Name##_init_c(__VA_ARGS__, MPI_INFO_NULL, req))

static const MPI_Count poison_counts[MAXP] = {-7, -7, -7, -7, -7, -7, -7, -7, -7, -7, -7, -7, -7, -7, -7, -7};

/* Calls case c in `form` into rbuf: the oracle gets valid values everywhere, nodecoll garbage
 * (if drawn) where an argument is not significant at this rank. */
static int post(tcase *c, int form, char *rbuf)
{
    int root = c->rank == c->root, spoil = c->garbage && form != ORACLE;
    const void *sbuf = c->in_place && (!is_rooted(c->coll) || root) && !is_scatter(c->coll) ? MPI_IN_PLACE : c->send;
    side *s = &c->s, *r = &c->r;
    MPI_Count scount = is_gather(c->coll) || c->coll == ALLGATHER || c->coll == ALLGATHERV ? c->count : s->counts[0];
    MPI_Count rcount = is_scatter(c->coll) ? c->count : r->counts[0];
    MPI_Datatype stype = s->type, rtype = r->type;
    const MPI_Count *scounts = s->counts, *rcounts = r->counts;
    const MPI_Aint *sdispls = s->displs, *rdispls = r->displs;
    if (is_scatter(c->coll) && c->in_place && root) rbuf = MPI_IN_PLACE;
    /* (MPICH 4.0.2's own in-place Reduce at a root other than 0 crashes from 4 KiB on, a
     * plain MPICH program shows it: the oracle reduces from a copy) */
    if (form == ORACLE && sbuf == MPI_IN_PLACE && c->oracle_in) sbuf = memcpy(c->oracle_in, rbuf, c->recv_bytes);
    if (spoil && sbuf == MPI_IN_PLACE) scount = -1, stype = MPI_DATATYPE_NULL, scounts = poison_counts;
    if (spoil && rbuf == MPI_IN_PLACE) rcount = -1, rtype = MPI_DATATYPE_NULL;
    if (spoil && is_gather(c->coll) && !root) rbuf = NULL, rcount = -1, rtype = MPI_DATATYPE_NULL, rcounts = NULL;
    if (spoil && is_scatter(c->coll) && !root) sbuf = NULL, scount = -1, stype = MPI_DATATYPE_NULL, scounts = NULL;
    if (c->coll == GATHERV && !root && spoil) rdispls = NULL;
    if (c->coll == SCATTERV && !root && spoil) sdispls = NULL;
    /* (MPICH 4.0.2's own Iexscan_c, which serves one rank, refuses a null recvbuf at rank 0) */
    int insignificant =
        (c->coll == REDUCE && !root) || (c->coll == EXSCAN && c->rank == 0 && !c->in_place && c->size > 1);
    void *rred = spoil && insignificant ? NULL : rbuf;
    MPI_Datatype type = kinds[c->kind].type;
    MPI_Op op = kinds[c->kind].op;
    MPI_Request *req = &c->req;
    switch (c->coll) {
    case BCAST: return T_FORMS(form, req, Bcast, Ibcast, rbuf, c->count, rtype, c->root, c->comm);
    case REDUCE: return T_FORMS(form, req, Reduce, Ireduce, sbuf, rred, c->count, type, op, c->root, c->comm);
    case ALLREDUCE: return T_FORMS(form, req, Allreduce, Iallreduce, sbuf, rbuf, c->count, type, op, c->comm);
    case RS: return T_FORMS(form, req, Reduce_scatter, Ireduce_scatter, sbuf, rbuf, rcounts, type, op, c->comm);
    case RSB:
        return T_FORMS(form, req, Reduce_scatter_block, Ireduce_scatter_block, sbuf, rbuf, c->count, type, op, c->comm);
    case SCAN: return T_FORMS(form, req, Scan, Iscan, sbuf, rbuf, c->count, type, op, c->comm);
    case EXSCAN: return T_FORMS(form, req, Exscan, Iexscan, sbuf, rred, c->count, type, op, c->comm);
    case GATHER:
        return T_FORMS(form, req, Gather, Igather, sbuf, scount, stype, rbuf, rcount, rtype, c->root, c->comm);
    case GATHERV:
        return T_FORMS(form, req, Gatherv, Igatherv, sbuf, scount, stype, rbuf, rcounts, rdispls, rtype, c->root,
                       c->comm);
    case SCATTER:
        return T_FORMS(form, req, Scatter, Iscatter, sbuf, scount, stype, rbuf, rcount, rtype, c->root, c->comm);
    case SCATTERV:
        return T_FORMS(form, req, Scatterv, Iscatterv, sbuf, scounts, sdispls, stype, rbuf, rcount, rtype, c->root,
                       c->comm);
    case ALLGATHER: return T_FORMS(form, req, Allgather, Iallgather, sbuf, scount, stype, rbuf, rcount, rtype, c->comm);
    case ALLGATHERV:
        return T_FORMS(form, req, Allgatherv, Iallgatherv, sbuf, scount, stype, rbuf, rcounts, rdispls, rtype,
                       c->comm);
    case ALLTOALL: return T_FORMS(form, req, Alltoall, Ialltoall, sbuf, scount, stype, rbuf, rcount, rtype, c->comm);
    case ALLTOALLV:
        return T_FORMS(form, req, Alltoallv, Ialltoallv, sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype,
                       c->comm);
    default:
        return T_FORMS(form, req, Alltoallw, Ialltoallw, sbuf, scounts, sdispls, s->types, rbuf, rcounts, rdispls,
                       r->types, c->comm);
    }
}

/* What MPI defines at this rank: every received byte, except Exscan's at rank 0 and the
 * receive buffer of a rank that receives nothing. */
static int receives(const tcase *c)
{
    int root = c->rank == c->root;
    if (c->coll == REDUCE || is_gather(c->coll)) return root;
    if (c->coll == EXSCAN) return c->rank != 0;
    return !(is_scatter(c->coll) && root && c->in_place);
}

static void check(const tcase *c, int form, int start)
{
    if (!receives(c)) return;
    for (size_t i = 0; i < c->recv_bytes; i++)
        if (c->recv[i] != c->expect[i]) {
            t_fail("%s_c %s (root %d, %s, garbage %d, kind %s, start %d): byte %zu of %zu is %d, host has %d",
                   coll_names[c->coll], form_names[form], c->root, c->in_place ? "in place" : "not in place",
                   c->garbage, is_reduction(c->coll) ? kinds[c->kind].name : "-", start, i, c->recv_bytes,
                   (unsigned char)c->recv[i], (unsigned char)c->expect[i]);
            return;
        }
}

/* One case in `form`: nodecoll's result against the oracle's. */
static void run(int coll, int form, int root, MPI_Comm comm, uint64_t *rng, uint64_t *local, int salt)
{
    tcase c = draw(coll, root, comm, rng, local);
    c.send = malloc(c.send_bytes);
    c.recv = malloc(c.recv_bytes);
    c.expect = malloc(c.recv_bytes);
    c.oracle_in = c.in_place && is_reduction(coll) ? malloc(c.recv_bytes) : NULL;
    int starts = form == PERSISTENT ? 2 : 1, err = MPI_SUCCESS;
    if (form == PERSISTENT) err = post(&c, form, c.recv);
    for (int start = 0; start < starts && err == MPI_SUCCESS; start++) {
        fill(&c, salt + start);
        T_CHECK(post(&c, ORACLE, c.expect) == MPI_SUCCESS, "%s_c: the host failed", coll_names[coll]);
        if (form == PERSISTENT) err = MPI_Start(&c.req);
        else err = post(&c, form, c.recv);
        if (form != BLOCKING && err == MPI_SUCCESS) err = MPI_Wait(&c.req, MPI_STATUS_IGNORE);
        check(&c, form, start);
    }
    T_CHECK(err == MPI_SUCCESS, "%s_c %s returned %d", coll_names[coll], form_names[form], err);
    if (form == PERSISTENT) MPI_Request_free(&c.req);
    free(c.send);
    free(c.recv);
    free(c.expect);
    free(c.oracle_in);
}

/* ---- what the host serves -------------------------------------------------------------------- */

/* inout += in, element by element, whatever the (contiguous int) type's length. */
static void user_sum_ints(void *in, void *inout, int *len, MPI_Datatype *type)
{
    int size;
    MPI_Type_size(*type, &size);
    for (long i = 0; i < (long)*len * size / (long)sizeof(int); i++) ((int *)inout)[i] += ((const int *)in)[i];
}

static void same_class(const char *what, int mine, int host)
{
    int mine_class = -1, host_class = -2;
    MPI_Error_class(mine, &mine_class);
    MPI_Error_class(host, &host_class);
    T_CHECK(mine != MPI_SUCCESS && mine_class == host_class, "%s: error class %d, the host's %d", what, mine_class,
            host_class);
}

/* Calls nodecoll leaves to the host go to its PMPI_<Coll>_c and are counted as the int forms'
 * are: invalid arguments on every rank (the host's error class comes back), and an element
 * larger than a pipeline segment (64 KiB; its user op is run by the host). */
static void host_served(MPI_Comm comm)
{
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    int x[8] = {0}, y[8] = {0};
    const MPI_Count counts[MAXP] = {0};
    const MPI_Aint displs[MAXP] = {0};
    same_class("MPI_Bcast_c, count -1", MPI_Bcast_c(x, -1, MPI_INT, 0, comm), PMPI_Bcast_c(x, -1, MPI_INT, 0, comm));
    /* (MPICH 4.0.2's own MPI_Allreduce_c with count -1 smashes its stack: an op it refuses) */
    same_class("MPI_Allreduce_c, MPI_OP_NULL", MPI_Allreduce_c(x, y, 1, MPI_INT, MPI_OP_NULL, comm),
               PMPI_Allreduce_c(x, y, 1, MPI_INT, MPI_OP_NULL, comm));
    same_class("MPI_Gatherv_c, send count -1", MPI_Gatherv_c(x, -1, MPI_INT, y, counts, displs, MPI_INT, 0, comm),
               PMPI_Gatherv_c(x, -1, MPI_INT, y, counts, displs, MPI_INT, 0, comm));
    enum { INTS = 16384, N = 2 };
    MPI_Datatype block;
    MPI_Op op;
    MPI_Type_contiguous(INTS, MPI_INT, &block);
    MPI_Type_commit(&block);
    MPI_Op_create(user_sum_ints, 1, &op);
    size_t bytes = sizeof(int) * INTS * N;
    int *in = malloc(bytes), *got = malloc(bytes), *want = malloc(bytes);
    for (int i = 0; i < INTS * N; i++) in[i] = i % 1000 + t_rank;
    int err = MPI_Allreduce_c(in, got, N, block, op, comm);
    PMPI_Allreduce_c(in, want, N, block, op, comm);
    T_CHECK(err == MPI_SUCCESS && !memcmp(got, want, bytes),
            "MPI_Allreduce_c of 64 KiB elements: %d, or not the host's result", err);
    free(in), free(got), free(want);
    MPI_Op_free(&op);
    MPI_Type_free(&block);
    if (t_size == 1) return; /* (a one-rank communicator is the host's: counted as such) */
    /* (an op nodecoll does not know is the host's to judge, counted as one of a type it cannot run) */
    static const char *const names[] = {"bcast", "gatherv", "allreduce"}, *const why[] = {"pmpi:args", "pmpi:args",
                                                                                          "pmpi:type"};
    for (int i = 0; i < 3; i++) {
        uint64_t n = nodecoll_stat_calls(names[i], why[i]);
        T_CHECK(n == (i < 2 ? 1u : 2u), "%s_c left to the host: %llu counted %s", names[i], (unsigned long long)n,
                why[i]);
    }
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv);
    int rounds = t_scale(argc > 1 ? atoi(argv[1]) : 3);
    T_CHECK(t_size <= MAXP, "at most %d ranks", MAXP); /* (the cases' tables) */
    if (t_size > MAXP) return t_finish("test_large_count");
    MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &gappy);
    MPI_Type_commit(&gappy);
    MPI_Op_create(user_sum, 1, &user_sum_op);
    MPI_Op_create_c(user_max_c, 1, &user_max_c_op);
    kind all[NKINDS] = {{"int sum", MPI_INT, MPI_SUM, sizeof(int)},
                        {"long min", MPI_LONG, MPI_MIN, sizeof(long)},
                        {"double max", MPI_DOUBLE, MPI_MAX, sizeof(double)},
                        {"unsigned band", MPI_UNSIGNED, MPI_BAND, sizeof(unsigned)},
                        {"int user sum", MPI_INT, user_sum_op, sizeof(int)},
                        {"long user max (MPI_Op_create_c)", MPI_LONG, user_max_c_op, sizeof(long)}};
    memcpy(kinds, all, sizeof all);
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    /* (set up by a blocking collective: nonblocking calls before that go to the host) */
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Barrier(dup);
    uint64_t rng = 20260417, local = 4409 + (uint64_t)t_rank;
    /* (MPICH 4.0.2's own persistent collectives, which serve one rank, deliver nothing from
     * their second start: persistent forms where nodecoll serves them) */
    int forms = t_size > 1 ? NFORMS : PERSISTENT;
    for (int coll = 0; coll < NCOLLS; coll++)
        for (int round = 0; round < rounds; round++)
            for (int form = BLOCKING; form < forms; form++)
                run(coll, form, (round + form + coll) % t_size, (round + form) % 2 ? dup : MPI_COMM_WORLD, &rng,
                    &local, 100 * round + 10 * form);
    for (int i = 0; i < NCOLLS && t_size > 1; i++) { /* (the only calls of these collectives) */
        uint64_t host = nodecoll_stat_calls(coll_names[i], "pmpi:*");
        T_CHECK(host == 0, "%s_c: %llu calls went to the host", coll_names[i], (unsigned long long)host);
        T_CHECK(nodecoll_stat_calls(coll_names[i], "*") > 0, "%s_c: nodecoll served none", coll_names[i]);
    }
    host_served(dup);
    MPI_Comm_free(&dup);
    MPI_Op_free(&user_sum_op);
    MPI_Op_free(&user_max_c_op);
    MPI_Type_free(&gappy);
    return t_finish("test_large_count");
}
