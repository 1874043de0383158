/* Nonblocking and persistent reductions against the host MPI: MPI_Ireduce, MPI_Iallreduce,
 * MPI_Ireduce_scatter(_block), MPI_Iscan, MPI_Iexscan and their persistent inits, each
 * result compared byte for byte with the same call made through the host's blocking PMPI_
 * form on the same data.  Drawn: the collective, the form, the datatype and op (predefined
 * integer, floating and pair types with their ops, a commutative user op, a non-commutative
 * one on a pair type, on a derived type without gaps and on one with gaps), the count (zero,
 * a few elements, around the inline and segment sizes, a few 100 KiB), the root, in place or
 * not.  Insignificant arguments hold garbage on the nodecoll run (Reduce's recvbuf off the
 * root, Exscan's at rank 0).  Also: several requests outstanding on one communicator and on
 * a second, completed by Waitall in reverse order, Testany loops and Waitsome loops;
 * persistent requests started many times with new data each time; the user op and the
 * derived type freed while requests using them are pending or persistent; an active request
 * freed with MPI_Request_free. */
#include "common.h"

/* MPICH's MPI_STATUSES_IGNORE is the address 1, which GCC takes for a too-small array. */
#pragma GCC diagnostic ignored "-Wstringop-overflow"

enum { C_REDUCE, C_ALLREDUCE, C_RS, C_RSB, C_SCAN, C_EXSCAN, C_COLLS };
static const char *coll_names[] = {"reduce", "allreduce", "reduce_scatter", "reduce_scatter_block", "scan", "exscan"};

/* How a call is made: the host's blocking call (the reference), nonblocking, persistent,
 * blocking (beside pending ones). */
enum { F_HOST, F_NONBLOCKING, F_PERSISTENT, F_BLOCKING };
/* How many of the forms run: persistent ones only where nodecoll serves them (on one rank
 * the host does, and MPICH 4.0.2's own fail MPI_Testall and never leave an MPI_Testany loop). */
static int forms;
static const char *form_names[] = {"host", "nonblocking", "persistent", "blocking"};

/* Stands where an argument is not significant on the nodecoll run: never to be touched. */
#define GARBAGE ((void *)(uintptr_t)0x10)

/* ---- datatypes and ops -------------------------------------------------------------------- */

typedef struct kind {
    const char *name;
    MPI_Datatype type;
    MPI_Op op;
    size_t extent;                    /* bytes per element in a buffer */
    size_t data_bytes;                /* compared of each (MPI_DOUBLE_INT's padding is no data) */
    void (*gen)(char *x, uint64_t v); /* one element's data (its gaps keep what the fill wrote) */
} kind;

static void gen_int(char *x, uint64_t v)
{
    int i = (int)v;
    memcpy(x, &i, sizeof i);
}
static void gen_small_long(char *x, uint64_t v) /* (products of a few stay exact) */
{
    long l = (long)(v % 7) - 3;
    memcpy(x, &l, sizeof l);
}
static void gen_double(char *x, uint64_t v) /* (integers: sums are exact in any order) */
{
    double d = (double)((int)(v % 2001) - 1000);
    memcpy(x, &d, sizeof d);
}
static void gen_float(char *x, uint64_t v)
{
    float f = (float)((int)(v % 200001) - 100000);
    memcpy(x, &f, sizeof f);
}
typedef struct double_int {
    double d;
    int i;
} double_int;
static void gen_double_int(char *x, uint64_t v) /* (padding zero everywhere: only data is compared) */
{
    double_int p;
    memset(&p, 0, sizeof p);
    p.d = (double)(v % 5);
    p.i = (int)((v >> 8) % 1000);
    memcpy(x, &p, sizeof p);
}
static void gen_two_int(char *x, uint64_t v)
{
    int p[2] = {(int)(v % 9), (int)((v >> 8) % 1000)};
    memcpy(x, p, sizeof p);
}
/* An affine map x -> a x + b as (a, b): b lies half an extent after a (pairs, or the gapped
 * layout). */
static void gen_affine(char *x, uint64_t v, size_t b_at)
{
    unsigned a = (unsigned)v | 1u, b = (unsigned)(v >> 32);
    memcpy(x, &a, sizeof a);
    memcpy(x + b_at, &b, sizeof b);
}
static void gen_affine_pair(char *x, uint64_t v) { gen_affine(x, v, sizeof(int)); }
static void gen_affine_gapped(char *x, uint64_t v) { gen_affine(x, v, 2 * sizeof(int)); }

/* inout = in + inout, wrapping. */
static void user_sum(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    for (int i = 0; i < *len; i++) {
        unsigned a, b;
        memcpy(&a, (char *)in + i * sizeof a, sizeof a);
        memcpy(&b, (char *)inout + i * sizeof b, sizeof b);
        b += a;
        memcpy((char *)inout + i * sizeof b, &b, sizeof b);
    }
}

/* The derived types the calls were given: MPI hands a user function that very handle (a
 * function serving several types compares it), valid even once the user freed it while the
 * operation was pending. */
static MPI_Datatype given_types[64];
static int given_count, foreign_handles;
static MPI_Datatype given(MPI_Datatype type)
{
    if (given_count < 64) given_types[given_count++] = type;
    return type;
}
static void check_given(MPI_Datatype type)
{
    for (int i = 0; i < given_count; i++)
        if (given_types[i] == type) return;
    foreign_handles++;
}

/* inout = in o inout (composition, not commutative).  The layout comes from the datatype
 * handle, which must be valid while the user's handle may be freed. */
static void user_affine(void *in, void *inout, int *len, MPI_Datatype *type)
{
    check_given(*type);
    MPI_Aint lb, extent;
    MPI_Type_get_extent(*type, &lb, &extent);
    size_t b_at = (size_t)extent / 2;
    for (int i = 0; i < *len; i++) {
        char *x = (char *)in + (size_t)i * (size_t)extent, *y = (char *)inout + (size_t)i * (size_t)extent;
        unsigned a1, b1, a2, b2;
        memcpy(&a1, x, sizeof a1);
        memcpy(&b1, x + b_at, sizeof b1);
        memcpy(&a2, y, sizeof a2);
        memcpy(&b2, y + b_at, sizeof b2);
        unsigned a = a1 * a2, b = a1 * b2 + b1;
        memcpy(y, &a, sizeof a);
        memcpy(y + b_at, &b, sizeof b);
    }
}

static MPI_Op sum_op, affine_op;
static MPI_Datatype pair_type, gapped_type;

/* (a, b) with gaps: resized(vector(2, 1, 2, int), 0, 16): a at 0, b at 8. */
static MPI_Datatype make_gapped_type(void)
{
    MPI_Datatype vector, gapped;
    MPI_Type_vector(2, 1, 2, MPI_INT, &vector);
    MPI_Type_create_resized(vector, 0, 4 * sizeof(int), &gapped);
    MPI_Type_free(&vector);
    MPI_Type_commit(&gapped);
    return given(gapped);
}

enum { K_AFFINE_GAPPED = 9, KINDS = 10 };
static kind kinds[KINDS];

static void make_kinds(void)
{
    MPI_Op_create(user_sum, 1, &sum_op);
    MPI_Op_create(user_affine, 0, &affine_op);
    MPI_Type_contiguous(2, MPI_INT, &pair_type);
    MPI_Type_commit(&pair_type);
    given(pair_type);
    gapped_type = make_gapped_type();
    kind all[KINDS] = {
        {"int sum", MPI_INT, MPI_SUM, sizeof(int), sizeof(int), gen_int},
        {"long prod", MPI_LONG, MPI_PROD, sizeof(long), sizeof(long), gen_small_long},
        {"double sum", MPI_DOUBLE, MPI_SUM, sizeof(double), sizeof(double), gen_double},
        {"float max", MPI_FLOAT, MPI_MAX, sizeof(float), sizeof(float), gen_float},
        {"unsigned bxor", MPI_UNSIGNED, MPI_BXOR, sizeof(unsigned), sizeof(unsigned), gen_int},
        {"double_int minloc", MPI_DOUBLE_INT, MPI_MINLOC, sizeof(double_int), sizeof(double) + sizeof(int),
         gen_double_int},
        {"2int maxloc", MPI_2INT, MPI_MAXLOC, 2 * sizeof(int), 2 * sizeof(int), gen_two_int},
        {"int user sum", MPI_INT, sum_op, sizeof(int), sizeof(int), gen_int},
        {"contiguous(2,int) user affine", pair_type, affine_op, 2 * sizeof(int), 2 * sizeof(int), gen_affine_pair},
        {"gapped user affine", gapped_type, affine_op, 4 * sizeof(int), 4 * sizeof(int), gen_affine_gapped},
    };
    memcpy(kinds, all, sizeof all);
}

/* ---- one call ------------------------------------------------------------------------------ */

typedef struct rcase {
    int coll, form, kind, root, in_place;
    int count;   /* elements (Reduce_scatter_block: per rank) */
    int *counts; /* Reduce_scatter: per rank */
} rcase;

/* A case as one rank sees it: its buffers' lengths in elements. */
static size_t in_elems(const rcase *c, int size)
{
    size_t total = 0;
    switch (c->coll) {
    case C_RS:
        for (int q = 0; q < size; q++) total += (size_t)c->counts[q];
        return total;
    case C_RSB: return (size_t)c->count * (size_t)size;
    default: return (size_t)c->count;
    }
}

static size_t result_elems(const rcase *c, int rank)
{
    switch (c->coll) {
    case C_REDUCE: return rank == c->root ? (size_t)c->count : 0;
    case C_RS: return (size_t)c->counts[rank];
    case C_EXSCAN: return rank == 0 ? 0 : (size_t)c->count; /* (undefined at rank 0) */
    default: return (size_t)c->count;
    }
}

/* The receive buffer's length: in place it holds the whole input. */
static size_t recv_elems(const rcase *c, int rank, int size)
{
    size_t n = c->coll == C_RS ? (size_t)c->counts[rank] : c->coll == C_RSB ? (size_t)c->count : (size_t)c->count;
    return c->in_place ? in_elems(c, size) : n;
}

/* Whether this rank passes MPI_IN_PLACE (Reduce: only the root may). */
static int passes_in_place(const rcase *c, int rank) { return c->in_place && (c->coll != C_REDUCE || rank == c->root); }

#ifdef T_PERSISTENT
#define T_PERSISTENT_FORM(form, req, Name, ...) (form) == F_PERSISTENT ? T_INIT(Name)(__VA_ARGS__, MPI_INFO_NULL, req) :
#else
#define T_PERSISTENT_FORM(form, req, Name, ...)
#endif
#define T_FORMS(form, req, Name, IName, ...)                                                  \
    ((form) == F_HOST       ? PMPI_##Name(__VA_ARGS__)                                        \
     : (form) == F_BLOCKING ? MPI_##Name(__VA_ARGS__)                                         \
     : T_PERSISTENT_FORM(form, req, Name, __VA_ARGS__) MPI_##IName(__VA_ARGS__, req))

/* Makes call c in `form` on `recv` (and `send` unless in place); the nodecoll forms get
 * garbage where an argument is not significant. */
static int call(const rcase *c, int form, const void *send, void *recv, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                MPI_Request *req)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    const void *s = passes_in_place(c, rank) ? MPI_IN_PLACE : send;
    /* (Open MPI 4.1's own Iexscan on one rank, which nodecoll leaves to it, writes rank 0's
     * recvbuf) */
    int insignificant = (c->coll == C_REDUCE && rank != c->root) ||
                        (c->coll == C_EXSCAN && rank == 0 && !c->in_place && size > 1);
    void *r = insignificant && form != F_HOST ? GARBAGE : recv;
    switch (c->coll) {
    case C_REDUCE: return T_FORMS(form, req, Reduce, Ireduce, s, r, c->count, type, op, c->root, comm);
    case C_ALLREDUCE: return T_FORMS(form, req, Allreduce, Iallreduce, s, r, c->count, type, op, comm);
    case C_RS: return T_FORMS(form, req, Reduce_scatter, Ireduce_scatter, s, r, c->counts, type, op, comm);
    case C_RSB: return T_FORMS(form, req, Reduce_scatter_block, Ireduce_scatter_block, s, r, c->count, type, op, comm);
    case C_SCAN: return T_FORMS(form, req, Scan, Iscan, s, r, c->count, type, op, comm);
    default: return T_FORMS(form, req, Exscan, Iexscan, s, r, c->count, type, op, comm);
    }
}

/* A call in flight: its case, buffers and request.  `type` and `op` are what the nodecoll
 * run uses (the user may free them); the reference uses the kind's own. */
typedef struct run {
    rcase c;
    MPI_Comm comm;
    int rank, size;
    char *send, *got, *want;
    MPI_Datatype type;
    MPI_Op op;
    MPI_Request req;
    int started;
} run;

/* Random bytes everywhere (gaps included), then each element's data. */
static void fill(char *buf, size_t elems, const kind *k, uint64_t seed)
{
    size_t bytes = elems * k->extent;
    for (size_t i = 0; i < bytes; i++) buf[i] = (char)t_rand(&seed);
    for (size_t e = 0; e < elems; e++) k->gen(buf + e * k->extent, t_rand(&seed));
}

static void run_open(run *r, const rcase *c, MPI_Comm comm)
{
    r->c = *c;
    r->comm = comm;
    MPI_Comm_rank(comm, &r->rank);
    MPI_Comm_size(comm, &r->size);
    size_t extent = kinds[c->kind].extent;
    r->send = malloc(in_elems(c, r->size) * extent + 1);
    r->got = malloc(recv_elems(c, r->rank, r->size) * extent + 1);
    r->want = malloc(recv_elems(c, r->rank, r->size) * extent + 1);
    r->type = kinds[c->kind].type;
    r->op = kinds[c->kind].op;
    r->req = MPI_REQUEST_NULL;
    r->started = 0;
}

/* The host's answer to r's call in r->want.  (MPICH 4.0.2's own Reduce_scatter(_block) gets
 * a non-commutative user op on a derived type wrong, and corrupts its heap: there the answer
 * is the block of the host's Allreduce, which MPI defines it to be, moved by the datatype.) */
static int host_answer(const run *r, const kind *k)
{
    int derived = k->type == pair_type || k->type == gapped_type;
#if defined(MPICH_VERSION)
    if ((r->c.coll == C_RS || r->c.coll == C_RSB) && derived) {
        size_t total = in_elems(&r->c, r->size), first = 0;
        for (int q = 0; q < r->rank; q++) first += r->c.coll == C_RS ? (size_t)r->c.counts[q] : (size_t)r->c.count;
        char *whole = malloc(total * k->extent + 1), *packed = malloc(total * k->extent + 1);
        memcpy(whole, r->c.in_place ? r->want : r->send, total * k->extent);
        int err = PMPI_Allreduce(MPI_IN_PLACE, whole, (int)total, k->type, k->op, r->comm), at = 0;
        int mine = (int)(r->c.coll == C_RS ? (size_t)r->c.counts[r->rank] : (size_t)r->c.count);
        PMPI_Pack(whole + first * k->extent, mine, k->type, packed, (int)(total * k->extent + 1), &at, MPI_COMM_SELF);
        at = 0;
        PMPI_Unpack(packed, (int)(total * k->extent + 1), &at, r->want, mine, k->type, MPI_COMM_SELF);
        free(whole);
        free(packed);
        return err;
    }
#endif
    (void)derived;
    return call(&r->c, F_HOST, r->send, r->want, k->type, k->op, r->comm, NULL);
}

/* New inputs (drawn from `salt`), and the host's answer for them in `want`. */
static void run_prepare(run *r, uint64_t salt)
{
    const kind *k = &kinds[r->c.kind];
    uint64_t seed = salt * 7919 + (uint64_t)r->rank;
    fill(r->send, in_elems(&r->c, r->size), k, seed);
    fill(r->got, recv_elems(&r->c, r->rank, r->size), k, seed + 1000003);
    if (passes_in_place(&r->c, r->rank)) fill(r->got, in_elems(&r->c, r->size), k, seed);
    memcpy(r->want, r->got, recv_elems(&r->c, r->rank, r->size) * k->extent);
    int err = host_answer(r, k);
    T_CHECK(err == MPI_SUCCESS, "host %s of %s failed: %d", coll_names[r->c.coll], k->name, err);
}

/* Issues a nonblocking call, starts a persistent one (made at its first start), or makes a
 * blocking one. */
static void run_start(run *r)
{
    int err = MPI_SUCCESS;
    if (r->c.form != F_PERSISTENT || !r->started)
        err = call(&r->c, r->c.form, r->send, r->got, r->type, r->op, r->comm, &r->req);
    if (err == MPI_SUCCESS && r->c.form == F_PERSISTENT) err = MPI_Start(&r->req);
    T_CHECK(err == MPI_SUCCESS, "%s %s failed: %d", form_names[r->c.form], coll_names[r->c.coll], err);
    r->started = 1;
}

static void run_check(const run *r, const char *how)
{
    const kind *k = &kinds[r->c.kind];
    size_t n = result_elems(&r->c, r->rank);
    if (r->c.coll == C_EXSCAN && r->rank == 0 && r->c.in_place) n = (size_t)r->c.count; /* (input, left alone) */
    size_t e = 0;
    while (e < n && memcmp(r->got + e * k->extent, r->want + e * k->extent, k->data_bytes) == 0) e++;
    if (e == n) return;
    char got[80], want[80];
    for (size_t i = 0; i < k->extent && i < 32; i++) {
        snprintf(got + 2 * i, 3, "%02x", (unsigned char)r->got[e * k->extent + i]);
        snprintf(want + 2 * i, 3, "%02x", (unsigned char)r->want[e * k->extent + i]);
    }
    t_fail("%s %s of %d x %s, root %d%s (%s): element %zu of %zu is %s, the host's %s", form_names[r->c.form],
           coll_names[r->c.coll], r->c.count, k->name, r->c.root, r->c.in_place ? ", in place" : "", how, e, n, got,
           want);
}

static void run_close(run *r)
{
    if (r->req != MPI_REQUEST_NULL) MPI_Request_free(&r->req); /* (an inactive persistent request) */
    free(r->send);
    free(r->got);
    free(r->want);
}

/* ---- drawing cases -------------------------------------------------------------------------- */

/* Around the inline line (112 B), ring segments (4K..64K), the flat and single-copy
 * thresholds (16K, 32K), and a few 100 KiB. */
static int draw_count(uint64_t *seed, size_t extent, int parts)
{
    static const size_t bytes[] = {0, 1, 24, 112, 120, 4096, 8200, 16384, 33000, 65536, 100 << 10, 300 << 10};
    size_t b = bytes[t_rand(seed) % (sizeof bytes / sizeof bytes[0])];
    size_t n = b / extent / (size_t)parts + t_rand(seed) % 3;
    return b == 0 ? 0 : (int)n;
}

static int *case_counts; /* Reduce_scatter's, of the case last drawn */

/* A case of `form`, of a drawn kind or of kind `forced` (>= 0). */
static rcase draw_case(uint64_t *seed, int form, int forced)
{
    rcase c;
    c.coll = (int)(t_rand(seed) % C_COLLS);
    c.form = form;
    c.kind = (int)(t_rand(seed) % KINDS);
    if (forced >= 0) c.kind = forced;
    c.root = (int)(t_rand(seed) % (uint64_t)t_size);
    c.in_place = t_rand(seed) % 3 == 0;
    size_t extent = kinds[c.kind].extent;
    int blocked = c.coll == C_RS || c.coll == C_RSB;
    c.count = draw_count(seed, extent, blocked ? t_size : 1);
    /* (MPICH 4.0.2's own in-place Reduce at a root other than 0 crashes from about 4 KiB) */
    if (c.coll == C_REDUCE && c.in_place && c.root != 0 && (size_t)c.count * extent > 2048)
        c.count = 2048 / (int)extent;
    c.counts = case_counts;
    for (int q = 0; q < t_size; q++) c.counts[q] = t_rand(seed) % 4 == 0 ? 0 : c.count + (int)(t_rand(seed) % 5);
    return c;
}

/* ---- completion ------------------------------------------------------------------------------ */

/* Completes one request with a drawn completion call. */
static void complete_one(MPI_Request *req, int how)
{
    int flag = 0, index, outcount, indices[1];
    switch (how % 7) {
    case 0: MPI_Wait(req, MPI_STATUS_IGNORE); break;
    case 1: while (!flag) MPI_Test(req, &flag, MPI_STATUS_IGNORE); break;
    case 2: MPI_Waitall(1, req, MPI_STATUSES_IGNORE); break;
    case 3: while (!flag) MPI_Testall(1, req, &flag, MPI_STATUSES_IGNORE); break;
    case 4: MPI_Waitany(1, req, &index, MPI_STATUS_IGNORE); break;
    case 5: MPI_Waitsome(1, req, &outcount, indices, MPI_STATUSES_IGNORE); break;
    default:
        while (!flag) MPI_Request_get_status(*req, &flag, MPI_STATUS_IGNORE);
        MPI_Wait(req, MPI_STATUS_IGNORE);
        break;
    }
}

/* Completes every run's request: Waitall on them in reverse order, a Testany loop, or a
 * Waitsome loop. */
static void complete_all(run *runs, int n, int how)
{
    MPI_Request reqs[16];
    int index, flag, outcount, indices[16];
    for (int i = 0; i < n; i++) reqs[i] = runs[n - 1 - i].req;
    switch (how % 3) {
    case 0: MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE); break;
    case 1:
        for (;;) {
            MPI_Testany(n, reqs, &index, &flag, MPI_STATUS_IGNORE);
            if (flag && index == MPI_UNDEFINED) break;
        }
        break;
    default:
        for (;;) {
            MPI_Waitsome(n, reqs, &outcount, indices, MPI_STATUSES_IGNORE);
            if (outcount == MPI_UNDEFINED) break;
        }
        break;
    }
    for (int i = 0; i < n; i++) {
        runs[n - 1 - i].req = reqs[i];
        T_CHECK((reqs[i] != MPI_REQUEST_NULL) == (runs[n - 1 - i].c.form == F_PERSISTENT),
                "completion %d: a %s request's handle is %s", how % 3, form_names[runs[n - 1 - i].c.form],
                reqs[i] == MPI_REQUEST_NULL ? "null" : "set");
    }
}

/* ---- the scenarios ------------------------------------------------------------------------------ */

static int starts_of(const rcase *c) { return c->form == F_PERSISTENT ? 3 : 1; }

/* One call at a time; a persistent one started three times with new data each time. */
static void one_at_a_time(uint64_t *seed, MPI_Comm comm, int round)
{
    rcase c = draw_case(seed, round % forms == 0 ? F_NONBLOCKING : F_PERSISTENT, -1);
    run r;
    run_open(&r, &c, comm);
    for (int start = 0; start < starts_of(&c); start++) {
        run_prepare(&r, t_rand(seed));
        run_start(&r);
        complete_one(&r.req, round + start);
        run_check(&r, "alone");
    }
    run_close(&r);
}

/* Up to four requests on comm and one on dup outstanding at once, of drawn forms, and a
 * blocking call on comm while they are pending; two rounds (persistent ones started again).
 * In odd rounds the first two requests and the blocking call take the type with gaps, whose
 * layout copies each must keep to itself. */
static void outstanding(uint64_t *seed, MPI_Comm comm, MPI_Comm dup, int round_number)
{
    enum { K = 5 };
    int n = 2 + (int)(t_rand(seed) % (K - 1));
    run runs[K + 1], *blocking = &runs[n];
    int *counts[K + 1];
    for (int i = 0; i <= n; i++) {
        counts[i] = malloc(sizeof(int) * (size_t)t_size);
        case_counts = counts[i];
        int gapped = round_number % 2 && (i < 2 || i == n) ? K_AFFINE_GAPPED : -1;
        rcase c = draw_case(seed, i == n ? F_BLOCKING : F_NONBLOCKING + (int)(t_rand(seed) % (uint64_t)forms), gapped);
        run_open(&runs[i], &c, i == n - 1 ? dup : comm);
    }
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i <= n; i++) run_prepare(&runs[i], t_rand(seed)); /* (every reference before any start) */
        for (int i = 0; i <= n; i++) run_start(&runs[i]);
        run_check(blocking, "beside pending requests");
        int how = (int)(t_rand(seed) % 3);
        complete_all(runs, n, how);
        const char *names[] = {"Waitall reversed", "Testany", "Waitsome"};
        for (int i = 0; i < n; i++) run_check(&runs[i], names[how]);
    }
    for (int i = 0; i <= n; i++) {
        run_close(&runs[i]);
        free(counts[i]);
    }
}

/* The user frees the op and the datatype while a request using them is pending (or, for a
 * persistent one, between its init and its starts); the reference uses live twins of both. */
static void freed_while_pending(uint64_t *seed, MPI_Comm comm, int form)
{
    rcase c = draw_case(seed, form, K_AFFINE_GAPPED);
    run r;
    run_open(&r, &c, comm);
    MPI_Op_create(user_affine, 0, &r.op);
    r.type = make_gapped_type();
    run_prepare(&r, t_rand(seed));
    run_start(&r);
    MPI_Op_free(&r.op);
    MPI_Type_free(&r.type);
    for (int start = 0; start < starts_of(&c); start++) {
        if (start) {
            run_prepare(&r, t_rand(seed));
            run_start(&r);
        }
        complete_one(&r.req, start);
        run_check(&r, "op and type freed");
    }
    run_close(&r);
}

/* An active request freed with MPI_Request_free still completes: a blocking call on the
 * communicator runs after it, so its result is there then. */
static void request_freed_while_active(uint64_t *seed, MPI_Comm comm)
{
    rcase c = draw_case(seed, F_NONBLOCKING, -1);
    run r;
    run_open(&r, &c, comm);
    run_prepare(&r, t_rand(seed));
    run_start(&r);
    MPI_Request_free(&r.req);
    T_CHECK(r.req == MPI_REQUEST_NULL, "Request_free left the handle set");
    MPI_Barrier(comm);
    run_check(&r, "request freed while active");
    run_close(&r);
}

/* With NODECOLL_SETUP_WORLD=1, MPI_COMM_WORLD is set up inside MPI_Init: a first collective
 * on it that is nonblocking is nodecoll's.  Without, the host's (counted pmpi:not-set-up). */
static void world_first_collective_nonblocking(void)
{
    const char *setting = getenv("NODECOLL_SETUP_WORLD");
    uint64_t host_before = nodecoll_stat_calls("allreduce", "pmpi:*");
    uint64_t unset_before = nodecoll_stat_calls("allreduce", "pmpi:not-set-up");
    long mine = t_rank + 1, sum = 0;
    MPI_Request req;
    MPI_Iallreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    T_CHECK(sum == (long)t_size * (t_size + 1) / 2, "first Iallreduce on the world: %ld", sum);
    if (t_size < 2 || getenv("NODECOLL_ENABLE")) return;
    if (setting && !strcmp(setting, "1"))
        T_CHECK(nodecoll_stat_calls("allreduce", "pmpi:*") == host_before,
                "the world's first collective, an Iallreduce, went to the host (NODECOLL_SETUP_WORLD=1)");
    else
        T_CHECK(nodecoll_stat_calls("allreduce", "pmpi:not-set-up") == unset_before + 1,
                "the world's first collective, an Iallreduce, was not the host's (not set up yet)");
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv);
    world_first_collective_nonblocking();
#ifdef T_PERSISTENT
    forms = t_size > 1 ? 2 : 1;
#else
    forms = 1;
#endif
    make_kinds();
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    /* A communicator is set up by its first blocking collective; before that the host
     * serves nonblocking calls. */
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Barrier(dup);
    uint64_t seed = 20261125, host_before[C_COLLS], all_before[C_COLLS];
    for (int i = 0; i < C_COLLS; i++) {
        host_before[i] = nodecoll_stat_calls(coll_names[i], "pmpi:*");
        all_before[i] = nodecoll_stat_calls(coll_names[i], "*");
    }
    case_counts = malloc(sizeof(int) * (size_t)t_size);
    int *single_counts = case_counts;
    for (int round = 0; round < t_scale(40); round++) one_at_a_time(&seed, round % 3 ? MPI_COMM_WORLD : dup, round);
    for (int round = 0; round < t_scale(8); round++) outstanding(&seed, MPI_COMM_WORLD, dup, round);
    case_counts = single_counts;
    /* (Open MPI 4.1's own persistent collectives also crash at a start after the user freed
     * the datatype.) */
    for (int form = F_NONBLOCKING; form < F_NONBLOCKING + forms; form++)
        for (int round = 0; round < 3; round++) freed_while_pending(&seed, round % 2 ? dup : MPI_COMM_WORLD, form);
    /* (MPICH 4.0.2 itself rejects MPI_Request_free of an active nonblocking collective:
     * tested where nodecoll serves the call.) */
    for (int round = 0; t_size > 1 && round < 3; round++) request_freed_while_active(&seed, MPI_COMM_WORLD);
    if (t_size > 1)
        for (int i = 0; i < C_COLLS; i++) {
            uint64_t host = nodecoll_stat_calls(coll_names[i], "pmpi:*") - host_before[i];
            T_CHECK(host == 0, "%llu %s calls went to the host", (unsigned long long)host, coll_names[i]);
            T_CHECK(nodecoll_stat_calls(coll_names[i], "*") > all_before[i], "nodecoll served no %s", coll_names[i]);
        }
    T_CHECK(!foreign_handles, "a user function was given %d datatype handles the calls were not given", foreign_handles);
    free(single_counts);
    MPI_Op_free(&sum_op);
    MPI_Op_free(&affine_op);
    MPI_Type_free(&pair_type);
    MPI_Type_free(&gapped_type);
    MPI_Comm_free(&dup);
    return t_finish("test_nonblocking_reduce");
}
