/* Nonblocking and persistent data-movement collectives against the host MPI: MPI_Igather(v),
 * MPI_Iscatter(v), MPI_Iallgather(v), MPI_Ialltoall(v,w) and their persistent forms, each
 * result compared byte for byte (gaps included) with the same call through the host's
 * blocking PMPI_ form on the same input.
 *
 * Cases: random counts with zeros and large (single-copy) blocks, v-forms whose blocks are
 * permuted with gaps, derived send and receive types (vector, indexed, a resized int; one
 * rank's type differing from its peers' with the same signature), MPI_IN_PLACE where MPI
 * allows it, every root, garbage (NULL or poisoned arrays, MPI_DATATYPE_NULL, count -1) in
 * every argument that is not significant at a rank.  Several requests outstanding on one
 * communicator and on two, with a blocking collective issued among them, completed by
 * Waitall in reverse order, Testany and Waitsome loops and the other completion calls;
 * persistent requests started several times with new data each time; datatypes freed right
 * after the call that uses them.
 *
 * Argument: rounds per collective and form (default 8; every root of the rooted ones). */
#include "common.h"

/* MPICH's MPI_STATUSES_IGNORE is the address 1, which GCC takes for a too-small array. */
#pragma GCC diagnostic ignored "-Wstringop-overflow"

#define MAXP 16
enum { LARGE = 12000 }; /* elements: past the move slot, read single-copy */

enum { GATHER, GATHERV, SCATTER, SCATTERV, ALLGATHER, ALLGATHERV, ALLTOALL, ALLTOALLV, ALLTOALLW, NCOLLS };
static const char *coll_names[NCOLLS] = {"gather",    "gatherv",    "scatter",  "scatterv", "allgather",
                                         "allgatherv", "alltoall", "alltoallv", "alltoallw"};
static int is_vector(int coll)
{
    return coll == GATHERV || coll == SCATTERV || coll == ALLGATHERV || coll >= ALLTOALLV;
}
static int is_rooted(int coll) { return coll <= SCATTERV; }

enum { ORACLE, NONBLOCKING, PERSISTENT };

/* Element types, each a whole number of ints: the signature unit of a block is its count
 * times its type's ints. */
enum { GAPPY, VEC2, IDX3, NKINDS };
static MPI_Datatype kinds[NKINDS];
#define gappy kinds[GAPPY] /* one int every 8 bytes */
#define vec2 kinds[VEC2]   /* vector(2, 1, 3, MPI_INT): 2 ints 12 bytes apart */
#define idx3 kinds[IDX3]   /* indexed {1, 2} at {0, 3}: 3 ints */

static MPI_Datatype make_type(int kind)
{
    MPI_Datatype t;
    int lens[2] = {1, 2}, displs[2] = {0, 3};
    if (kind == GAPPY) MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &t);
    else if (kind == VEC2) MPI_Type_vector(2, 1, 3, MPI_INT, &t);
    else MPI_Type_indexed(2, lens, displs, MPI_INT, &t);
    MPI_Type_commit(&t);
    return t;
}

static int kind_of(MPI_Datatype t) { return t == gappy ? GAPPY : t == vec2 ? VEC2 : IDX3; }
static const char *type_name(MPI_Datatype t)
{
    static const char *names[NKINDS] = {"gappy", "vector", "indexed"};
    return t == MPI_INT ? "int" : names[kind_of(t)];
}

static MPI_Aint extent_of(MPI_Datatype t)
{
    MPI_Aint lb, extent;
    MPI_Type_get_extent(t, &lb, &extent);
    return extent;
}

/* Where each block lies in a buffer: counts in elements, displacements in elements of the
 * vector's type (in bytes for Alltoallw), a type per block (Alltoallw). */
typedef struct layout {
    int counts[MAXP], displs[MAXP];
    MPI_Datatype types[MAXP];
    size_t bytes;
} layout;

typedef struct mcase {
    int coll, root, in_place, garbage; /* garbage: 0 none, 1 NULL, 2 poisoned values */
    int form;
    MPI_Comm comm;
    int rank, size;
    MPI_Datatype stype, rtype;
    int one_count;                   /* my single block (Gather's send, Scatter's receive) */
    layout s, r;                     /* send and receive vectors */
    char *send, *recv, *expect;
    size_t one_bytes;
    MPI_Request req;
    MPI_Datatype fresh[NKINDS];           /* types made for this call and freed right after it */
} mcase;

/* Whether nodecoll serves the calls (else the host's own forms do): several ranks and single
 * copy.  Open MPI 4.1.4's persistent collectives on one rank use their datatype at each
 * start without holding it (a crash once the user freed it), so types are freed while
 * pending only where nodecoll serves the call. */
static int served;

/* Whether persistent calls are tested: MPICH 4.0.2's own persistent collectives (where the
 * host serves them) deliver nothing from the second start on, abort in MPI_Testall, and in
 * MPI_Request_free after a start with a derived datatype (plain MPICH programs show each). */
static int persistent_tested;

static int poison_ints[MAXP];               /* -7: a rank that reads them where they do not count misbehaves */
static MPI_Datatype poison_types[MAXP];     /* MPI_DATATYPE_NULL */

static int pick(uint64_t *rng, int n) { return (int)(t_rand(rng) % (uint64_t)n); }

/* A count of elements: zero, small, or large enough for single-copy reads. */
static int draw_count(uint64_t *rng, int pattern)
{
    switch (pattern) {
    case 0: return 0;
    case 1: return 1 + pick(rng, 60);
    case 2: return pick(rng, 4) ? pick(rng, 40) : 0;
    case 3: return pick(rng, 3) ? pick(rng, 20) : LARGE;
    default: return pick(rng, 5) ? 0 : 1 + pick(rng, 3000);
    }
}

/* Blocks in a random order with gaps of 0-3 steps, every block's bytes its count times its
 * type's extent; displacements in steps (v-forms: the type's extent), or in bytes. */
static void place_blocks(layout *l, int n, MPI_Aint step, int in_bytes, uint64_t *rng)
{
    int order[MAXP];
    t_permutation(order, n, rng);
    size_t at = (size_t)pick(rng, 3) * (size_t)step, end = at;
    for (int k = 0; k < n; k++) {
        int i = order[k];
        l->displs[i] = (int)(in_bytes ? at : at / (size_t)step);
        at += (size_t)l->counts[i] * (size_t)extent_of(l->types[i]);
        at = (at + (size_t)step - 1) / (size_t)step * (size_t)step + (size_t)pick(rng, 4) * (size_t)step;
        if (at > end) end = at;
    }
    l->bytes = end + (size_t)step;
}

/* Blocks back to back (the uniform forms). */
static void uniform_blocks(layout *l, int n, int count, MPI_Datatype type)
{
    for (int i = 0; i < n; i++) l->counts[i] = count, l->displs[i] = i * count, l->types[i] = type;
    l->bytes = (size_t)n * (size_t)count * (size_t)extent_of(type) + 8;
}

/* Send and receive types of a case (mode drawn alike on every rank): both MPI_INT; both
 * vec2 or idx3; MPI_INT on one side and the resized int on the other; or, per rank, the
 * resized int on odd ranks (peers with different types of the same signature). */
static void draw_types(mcase *c, uint64_t *rng)
{
    int mode = pick(rng, 4), flip = pick(rng, 2);
    /* (Allgather(v): the hosts need one receive type of one size everywhere, see design.md) */
    if (mode == 3 && (c->coll == ALLGATHER || c->coll == ALLGATHERV)) mode = 2;
    switch (mode) {
    case 0: c->stype = c->rtype = MPI_INT; break;
    case 1: c->stype = c->rtype = flip ? vec2 : idx3; break;
    case 2: c->stype = flip ? MPI_INT : gappy, c->rtype = flip ? gappy : MPI_INT; break;
    default: c->stype = c->rtype = c->rank % 2 ? gappy : MPI_INT; break;
    }
}

/* Alltoallw's types per block: the case's, or MPI_INT every other block where the unit is one int. */
static MPI_Datatype block_type(MPI_Datatype type, int block)
{
    return (type == gappy || type == MPI_INT) && block % 2 ? MPI_INT : type;
}

/* Element counts of every pair, drawn alike on every rank: matrix[i * size + j] is what
 * rank i sends to rank j (the rooted and allgather forms use row 0). */
static void draw_counts(int *matrix, int size, int uniform, int symmetric, uint64_t *rng)
{
    static const int uniform_counts[] = {0, 1, 7, 60, 3000, LARGE};
    int pattern = pick(rng, 5);
    int one = uniform_counts[pick(rng, 6)];
    for (int i = 0; i < size * size; i++) matrix[i] = uniform ? one : draw_count(rng, pattern);
    for (int i = 0; symmetric && i < size; i++)
        for (int j = 0; j < i; j++) matrix[i * size + j] = matrix[j * size + i];
}

static void build_layouts(mcase *c, const int *matrix, uint64_t *local)
{
    int n = c->size, me = c->rank;
    for (int i = 0; i < n; i++) {
        int rooted_or_all = c->coll <= ALLGATHERV; /* (one count per rank: row 0) */
        c->s.counts[i] = rooted_or_all ? matrix[i] : matrix[me * n + i];
        c->r.counts[i] = rooted_or_all ? matrix[i] : matrix[i * n + me];
        c->s.types[i] = c->coll == ALLTOALLW ? block_type(c->stype, i) : c->stype;
        c->r.types[i] = c->coll == ALLTOALLW ? block_type(c->rtype, i) : c->rtype;
    }
    c->one_count = matrix[me];
    if (!is_vector(c->coll)) {
        uniform_blocks(&c->s, n, matrix[0], c->stype);
        uniform_blocks(&c->r, n, matrix[0], c->rtype);
        c->one_count = matrix[0];
    } else {
        int w = c->coll == ALLTOALLW;
        place_blocks(&c->s, n, w ? 4 : extent_of(c->stype), w, local);
        place_blocks(&c->r, n, w ? 4 : extent_of(c->rtype), w, local);
    }
    /* (MPICH 4.0.2's blocking Allgatherv on one rank ignores the displacement: the oracle.) */
    if (c->size == 1 && c->coll == ALLGATHERV) c->r.displs[0] = 0;
    if (c->in_place && c->coll >= ALLTOALL) c->s = c->r;
}

static int is_gather(int coll) { return coll == GATHER || coll == GATHERV; }
static int is_scatter(int coll) { return coll == SCATTER || coll == SCATTERV; }

static size_t send_bytes(const mcase *c) { return is_gather(c->coll) ? c->one_bytes : c->s.bytes; }
static size_t recv_bytes(const mcase *c) { return is_scatter(c->coll) ? c->one_bytes : c->r.bytes; }

static size_t one_bytes(const mcase *c)
{
    MPI_Datatype t = is_scatter(c->coll) ? c->rtype : c->stype;
    return (size_t)c->one_count * (size_t)extent_of(t) + 8;
}

/* A case of the collective, form, root and communicator `c` names: everything but the data. */
static mcase draw_case(mcase c, uint64_t *rng, uint64_t *local)
{
    int coll = c.coll;
    c.req = MPI_REQUEST_NULL;
    MPI_Comm_rank(c.comm, &c.rank);
    MPI_Comm_size(c.comm, &c.size);
    c.in_place = pick(rng, 3) == 0;
    c.garbage = pick(rng, 3);
#if defined(OPEN_MPI) && OPEN_MPI
    /* Where the host serves it, Open MPI 4.1.4's in-place Alltoall family is not to be
     * trusted: Alltoallw corrupts memory, Ialltoallv with zero counts beside another pending
     * call on the communicator takes that call's messages (a plain Open MPI program hangs),
     * Ialltoallv of a resized type at 4 ranks delivers wrong bytes, then hangs (also with
     * NODECOLL_ENABLE=0). */
    if (!served && coll >= ALLTOALL) c.in_place = 0;
#endif
    draw_types(&c, rng);
    int matrix[MAXP * MAXP];
    draw_counts(matrix, c.size, !is_vector(coll), c.in_place && coll >= ALLTOALL, rng);
    build_layouts(&c, matrix, local);
    c.one_bytes = one_bytes(&c);
    c.send = malloc(send_bytes(&c));
    c.recv = malloc(recv_bytes(&c));
    c.expect = malloc(recv_bytes(&c));
    for (int k = 0; k < NKINDS; k++) c.fresh[k] = MPI_DATATYPE_NULL;
    return c;
}

static void free_case(mcase *c)
{
    free(c->send);
    free(c->recv);
    free(c->expect);
}

/* New data for a start: send bytes from (salt, rank); the receive buffers a marker, or in
 * place, where they hold input too (the root's or my own block, or all of Alltoall's),
 * bytes from (salt, rank) as well.  The oracle's receive buffer starts the same. */
static void fill(mcase *c, int salt)
{
    unsigned char *s = (unsigned char *)c->send, *r = (unsigned char *)c->recv;
    for (size_t i = 0; i < send_bytes(c); i++) s[i] = (unsigned char)(i * 7 + (size_t)c->rank * 31 + (size_t)salt * 11);
    for (size_t i = 0; i < recv_bytes(c); i++)
        r[i] = c->in_place ? (unsigned char)(i * 5 + (size_t)c->rank * 17 + (size_t)salt) : (unsigned char)(0xA0 ^ i);
    memcpy(c->expect, c->recv, recv_bytes(c));
}

/* Every argument of a call, valid or (where not significant) garbage. */
typedef struct margs {
    const void *sbuf;
    void *rbuf;
    int scount, rcount;
    const int *scounts, *sdispls, *rcounts, *rdispls;
    MPI_Datatype stype, rtype;
    const MPI_Datatype *stypes, *rtypes;
} margs;

/* The garbage of a case: NULL or poisoned. */
static const int *garbage_ints(const mcase *c) { return c->garbage == 1 ? NULL : poison_ints; }
static const MPI_Datatype *garbage_types(const mcase *c) { return c->garbage == 1 ? NULL : poison_types; }

static void spoil_send(margs *a, const mcase *c)
{
    a->scount = -1;
    a->stype = MPI_DATATYPE_NULL;
    a->scounts = a->sdispls = garbage_ints(c);
    a->stypes = garbage_types(c);
}

static void spoil_recv(margs *a, const mcase *c)
{
    a->rcount = -1;
    a->rtype = MPI_DATATYPE_NULL;
    a->rcounts = a->rdispls = garbage_ints(c);
    a->rtypes = garbage_types(c);
}

/* The call's arguments for `form`: the host's oracle gets valid values everywhere (and runs
 * Alltoall in place out of place, from a copy: Open MPI's in-place Alltoallw corrupts
 * memory), nodecoll garbage where the standard says the value does not matter. */
static margs arguments(const mcase *c, int form, char *rbuf, char *copy)
{
    int root = c->rank == c->root, rooted_send = is_gather(c->coll);
    int scount = rooted_send ? c->one_count : c->s.counts[0];
    int rcount = is_scatter(c->coll) ? c->one_count : c->r.counts[0];
    margs a = {c->send, rbuf, scount, rcount, c->s.counts, c->s.displs, c->r.counts, c->r.displs,
               c->stype, c->rtype, c->s.types, c->r.types};
    if (c->coll <= ALLGATHERV && !is_rooted(c->coll)) a.scount = c->one_count;
    int spoil = c->garbage && form != ORACLE;
    if (c->in_place && c->coll >= ALLTOALL) {
        if (form == ORACLE) {
            memcpy(copy, rbuf, c->r.bytes);
            a.sbuf = copy;
            a.scount = a.rcount, a.scounts = a.rcounts, a.sdispls = a.rdispls, a.stype = a.rtype, a.stypes = a.rtypes;
        } else {
            a.sbuf = MPI_IN_PLACE;
            if (spoil) spoil_send(&a, c);
        }
    } else if (c->in_place && (c->coll == ALLGATHER || c->coll == ALLGATHERV || (rooted_send && root))) {
        a.sbuf = MPI_IN_PLACE;
        if (spoil) a.scount = -1, a.stype = MPI_DATATYPE_NULL;
    } else if (c->in_place && root) { /* Scatter(v) */
        a.rbuf = MPI_IN_PLACE;
        if (spoil) a.rcount = -1, a.rtype = MPI_DATATYPE_NULL;
    }
    if (spoil && is_rooted(c->coll) && !root) {
        if (rooted_send) a.rbuf = NULL, spoil_recv(&a, c);
        else a.sbuf = NULL, spoil_send(&a, c);
    }
    return a;
}

/* Types made afresh for the call and freed right after it (MPI allows that while it is
 * pending): the same type maps as the case's, so the oracle's result stands. */
static MPI_Datatype fresh(mcase *c, MPI_Datatype t)
{
    if (t == MPI_INT || t == MPI_DATATYPE_NULL) return t;
    int k = kind_of(t);
    if (c->fresh[k] == MPI_DATATYPE_NULL) c->fresh[k] = make_type(k);
    return c->fresh[k];
}

static void use_fresh_types(mcase *c, margs *a, MPI_Datatype *stypes, MPI_Datatype *rtypes)
{
    a->stype = fresh(c, a->stype);
    a->rtype = fresh(c, a->rtype);
    for (int i = 0; c->coll == ALLTOALLW && i < c->size; i++) {
        if (a->stypes && a->stypes != poison_types) stypes[i] = fresh(c, a->stypes[i]);
        if (a->rtypes && a->rtypes != poison_types) rtypes[i] = fresh(c, a->rtypes[i]);
    }
    if (a->stypes && a->stypes != poison_types) a->stypes = stypes;
    if (a->rtypes && a->rtypes != poison_types) a->rtypes = rtypes;
}

static void free_fresh_types(mcase *c)
{
    for (int k = 0; k < NKINDS; k++)
        if (c->fresh[k] != MPI_DATATYPE_NULL) MPI_Type_free(&c->fresh[k]);
}

/* The host's blocking call, the nonblocking one or the persistent init, by form. */
#define T_CALL(form, req, Name, IName, ...)                                                        \
    ((form) == ORACLE ? PMPI_##Name(__VA_ARGS__)                                                   \
     : (form) == NONBLOCKING ? MPI_##IName(__VA_ARGS__, req)                                      \
                             : T_INIT_OR_FAIL(Name, __VA_ARGS__, MPI_INFO_NULL, req))
#ifdef T_PERSISTENT
#define T_INIT_OR_FAIL(Name, ...) T_INIT(Name)(__VA_ARGS__)
#else
#define T_INIT_OR_FAIL(Name, ...) MPI_ERR_OTHER
#endif

/* Calls the case's collective in `form` into rbuf (nodecoll's run, or the oracle's). */
static void post(mcase *c, int form, char *rbuf, int fresh_types)
{
    char *copy = form == ORACLE && c->in_place && c->coll >= ALLTOALL ? malloc(c->r.bytes) : NULL;
    margs a = arguments(c, form, rbuf, copy);
    MPI_Datatype stypes[MAXP], rtypes[MAXP];
    if (fresh_types) use_fresh_types(c, &a, stypes, rtypes);
    MPI_Request *req = &c->req;
    int err;
    switch (c->coll) {
    case GATHER:
        err = T_CALL(form, req, Gather, Igather, a.sbuf, a.scount, a.stype, a.rbuf, a.rcount, a.rtype, c->root,
                     c->comm);
        break;
    case GATHERV:
        err = T_CALL(form, req, Gatherv, Igatherv, a.sbuf, a.scount, a.stype, a.rbuf, a.rcounts, a.rdispls, a.rtype,
                     c->root, c->comm);
        break;
    case SCATTER:
        err = T_CALL(form, req, Scatter, Iscatter, a.sbuf, a.scount, a.stype, a.rbuf, a.rcount, a.rtype, c->root,
                     c->comm);
        break;
    case SCATTERV:
        err = T_CALL(form, req, Scatterv, Iscatterv, a.sbuf, a.scounts, a.sdispls, a.stype, a.rbuf, a.rcount, a.rtype,
                     c->root, c->comm);
        break;
    case ALLGATHER:
        err = T_CALL(form, req, Allgather, Iallgather, a.sbuf, a.scount, a.stype, a.rbuf, a.rcount, a.rtype, c->comm);
        break;
    case ALLGATHERV:
        err = T_CALL(form, req, Allgatherv, Iallgatherv, a.sbuf, a.scount, a.stype, a.rbuf, a.rcounts, a.rdispls,
                     a.rtype, c->comm);
        break;
    case ALLTOALL:
        err = T_CALL(form, req, Alltoall, Ialltoall, a.sbuf, a.scount, a.stype, a.rbuf, a.rcount, a.rtype, c->comm);
        break;
    case ALLTOALLV:
        err = T_CALL(form, req, Alltoallv, Ialltoallv, a.sbuf, a.scounts, a.sdispls, a.stype, a.rbuf, a.rcounts,
                     a.rdispls, a.rtype, c->comm);
        break;
    default:
        err = T_CALL(form, req, Alltoallw, Ialltoallw, a.sbuf, a.scounts, a.sdispls, a.stypes, a.rbuf, a.rcounts,
                     a.rdispls, a.rtypes, c->comm);
    }
    T_CHECK(err == MPI_SUCCESS, "%s (form %d) returned %d", coll_names[c->coll], form, err);
    if (fresh_types) free_fresh_types(c);
    free(copy);
}

/* The oracle for the data now in the case's buffers. */
static void oracle(mcase *c) { post(c, ORACLE, c->expect, 0); }

static void check(const mcase *c, const char *what, int start)
{
    int root = c->rank == c->root;
    int receives = is_gather(c->coll) ? root : !(is_scatter(c->coll) && root && c->in_place);
    if (!receives) return;
    for (size_t i = 0; i < recv_bytes(c); i++)
        if (c->recv[i] != c->expect[i]) {
            t_fail("%s %s (root %d, %s, garbage %d, types %s/%s, start %d): byte %zu of %zu is %d, host has %d", what,
                   coll_names[c->coll], c->root, c->in_place ? "in place" : "not in place", c->garbage,
                   type_name(c->stype), type_name(c->rtype), start, i, recv_bytes(c), (unsigned char)c->recv[i],
                   (unsigned char)c->expect[i]);
            return;
        }
}

/* ---- completion ---------------------------------------------------------------------------- */

static void wait_each(MPI_Request *reqs, int n)
{
    for (int i = n - 1; i >= 0; i--) MPI_Wait(&reqs[i], MPI_STATUS_IGNORE);
}

static void test_each(MPI_Request *reqs, int n)
{
    for (int i = 0; i < n; i++)
        for (int flag = 0; !flag;) MPI_Test(&reqs[i], &flag, MPI_STATUS_IGNORE);
}

static void get_status_then_wait(MPI_Request *reqs, int n)
{
    for (int i = 0; i < n; i++)
        for (int flag = 0; !flag;) MPI_Request_get_status(reqs[i], &flag, MPI_STATUS_IGNORE);
    MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
}

/* Completes every request of reqs (persistent ones stay allocated, inactive) with one of the
 * completion calls, `how`.  The any and some forms loop until each request has completed
 * once; where nodecoll serves the calls one more call must then find nothing active (MPICH
 * 4.0.2 never reports its own completed persistent collectives inactive: its loop would
 * not end). */
static void complete(MPI_Request *reqs, int n, int how)
{
    MPI_Request reversed[2 * MAXP];
    int index, flag, outcount = 0, indices[2 * MAXP], done = 0;
    MPI_Status statuses[2 * MAXP];
    switch (how) {
    case 0: /* Waitall, in the reverse of the order they were issued */
        for (int i = 0; i < n; i++) reversed[i] = reqs[n - 1 - i];
        MPI_Waitall(n, reversed, statuses);
        for (int i = 0; i < n; i++) reqs[n - 1 - i] = reversed[i];
        break;
    case 1:
        for (flag = 0; !flag;) MPI_Testall(n, reqs, &flag, MPI_STATUSES_IGNORE);
        break;
    case 2:
        for (; done < n; done++) MPI_Waitany(n, reqs, &index, MPI_STATUS_IGNORE);
        if (served) MPI_Waitany(n, reqs, &outcount, MPI_STATUS_IGNORE);
        break;
    case 3:
        for (; done < n; done += flag) MPI_Testany(n, reqs, &index, &flag, MPI_STATUS_IGNORE);
        if (served) MPI_Testany(n, reqs, &outcount, &flag, MPI_STATUS_IGNORE);
        break;
    case 4:
        for (; done < n; done += outcount) MPI_Waitsome(n, reqs, &outcount, indices, statuses);
        if (served) MPI_Waitsome(n, reqs, &outcount, indices, statuses);
        break;
    case 5:
        for (; done < n; done += outcount) MPI_Testsome(n, reqs, &outcount, indices, MPI_STATUSES_IGNORE);
        if (served) MPI_Testsome(n, reqs, &outcount, indices, MPI_STATUSES_IGNORE);
        break;
    case 6: wait_each(reqs, n); break;
    case 7: test_each(reqs, n); break;
    default: get_status_then_wait(reqs, n); break;
    }
    if (served && how >= 2 && how <= 5)
        T_CHECK(outcount == MPI_UNDEFINED, "completion call %d: %d left active after all completed", how, outcount);
}

static int draw_completion(uint64_t *rng) { return pick(rng, 9); }

/* ---- one call at a time -------------------------------------------------------------------- */

/* Nonblocking: one call, completed by a drawn completion call. */
static void one_nonblocking(int coll, int root, MPI_Comm comm, uint64_t *rng, uint64_t *local, int salt)
{
    mcase c = draw_case((mcase){.coll = coll, .form = NONBLOCKING, .root = root, .comm = comm}, rng, local);
    fill(&c, salt);
    oracle(&c);
    post(&c, NONBLOCKING, c.recv, pick(rng, 4) == 0 && served);
    complete(&c.req, 1, draw_completion(rng));
    T_CHECK(c.req == MPI_REQUEST_NULL, "%s: completion left the request set", coll_names[coll]);
    check(&c, "nonblocking", 0);
    free_case(&c);
}

#ifdef T_PERSISTENT
/* Persistent: made once (its types perhaps freed at once), started `starts` times with new
 * data each time. */
static void one_persistent(int coll, int root, MPI_Comm comm, uint64_t *rng, uint64_t *local, int salt, int starts)
{
    mcase c = draw_case((mcase){.coll = coll, .form = PERSISTENT, .root = root, .comm = comm}, rng, local);
    post(&c, PERSISTENT, c.recv, pick(rng, 3) == 0 && served);
    for (int start = 0; start < starts; start++) {
        fill(&c, salt + start);
        oracle(&c);
        MPI_Start(&c.req);
        complete(&c.req, 1, draw_completion(rng));
        T_CHECK(c.req != MPI_REQUEST_NULL, "%s: completion freed a persistent request", coll_names[coll]);
        check(&c, "persistent", start);
    }
    MPI_Request_free(&c.req);
    free_case(&c);
}
#endif

/* ---- several at once ------------------------------------------------------------------------ */

/* K calls of drawn collectives, alternately on comm and dup, nonblocking or persistent (then
 * started), all issued before any completes, a blocking Allgather among them; completed
 * together by a drawn completion call. */
static void overlapping(MPI_Comm comm, MPI_Comm dup, uint64_t *rng, uint64_t *local, int salt)
{
    enum { K = 6 };
    int size;
    MPI_Comm_size(comm, &size);
    mcase c[K];
    MPI_Request reqs[K];
    for (int k = 0; k < K; k++) {
        int coll = pick(rng, size > 1 ? NCOLLS : NCOLLS - 1);
        int root = pick(rng, size);
#ifdef T_PERSISTENT
        int form = pick(rng, 3) == 0 && persistent_tested ? PERSISTENT : NONBLOCKING;
#else
        int form = NONBLOCKING;
#endif
        c[k] = draw_case((mcase){.coll = coll, .form = form, .root = root, .comm = k % 2 ? dup : comm}, rng, local);
        fill(&c[k], salt + k);
        oracle(&c[k]); /* (all before any is issued: the host's blocking calls do not progress ours) */
    }
    for (int k = 0; k < K; k++) {
        post(&c[k], c[k].form, c[k].recv, pick(rng, 4) == 0 && served);
        if (c[k].form == PERSISTENT) MPI_Start(&c[k].req);
        reqs[k] = c[k].req;
    }
    int mine = salt, all[MAXP];
    MPI_Allgather(&mine, 1, MPI_INT, all, 1, MPI_INT, comm); /* (runs after the pending calls on comm) */
    T_CHECK(all[size - 1] == salt, "a blocking Allgather among pending calls: %d, not %d", all[size - 1], salt);
    complete(reqs, K, draw_completion(rng));
    for (int k = 0; k < K; k++) {
        check(&c[k], "overlapping", k);
        if (c[k].form == PERSISTENT) MPI_Request_free(&reqs[k]);
        free_case(&c[k]);
    }
}

/* Every collective's nodecoll path served the calls (where single copy works). */
static void check_served(const uint64_t *before)
{
    if (!served) return;
    for (int i = 0; i < NCOLLS; i++) {
        T_CHECK(nodecoll_stat_calls(coll_names[i], "pmpi:*") == before[i], "%s: calls went to the host", coll_names[i]);
        T_CHECK(nodecoll_stat_calls(coll_names[i], "cma") > 0, "%s: nodecoll served none", coll_names[i]);
    }
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv);
    int rounds = t_scale(argc > 1 ? atoi(argv[1]) : 8);
    if (t_size > MAXP) {
        if (t_rank == 0) printf("test_nonblocking_move: at most %d ranks\n", MAXP);
        MPI_Finalize();
        return 0;
    }
    served = t_size > 1 && !getenv("NODECOLL_CMA");
#ifdef MPICH_VERSION
    persistent_tested = served;
#else
    persistent_tested = 1;
#endif
    for (int i = 0; i < MAXP; i++) poison_ints[i] = -7, poison_types[i] = MPI_DATATYPE_NULL;
    for (int k = 0; k < NKINDS; k++) kinds[k] = make_type(k);
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    /* A communicator is set up by its first blocking collective; before that the host
     * serves nonblocking calls. */
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Barrier(dup);
    uint64_t before[NCOLLS];
    for (int i = 0; i < NCOLLS; i++) before[i] = nodecoll_stat_calls(coll_names[i], "pmpi:*");
    uint64_t rng = 20261201, local = 977 + (uint64_t)t_rank;
    /* (Alltoallw on one rank: the host's, which reads past the send buffer, Open MPI 4.1.4.) */
    int ncolls = t_size > 1 ? NCOLLS : NCOLLS - 1;
    for (int coll = 0; coll < ncolls; coll++)
        for (int round = 0; round < (is_rooted(coll) && rounds < t_size ? t_size : rounds); round++) { /* every root */
            int root = (round + coll) % t_size;
            one_nonblocking(coll, root, round % 2 ? dup : MPI_COMM_WORLD, &rng, &local, round);
#ifdef T_PERSISTENT
            if (persistent_tested)
                one_persistent(coll, root, round % 2 ? MPI_COMM_WORLD : dup, &rng, &local, 10 * round, 3);
#endif
        }
    for (int round = 0; round < rounds; round++) overlapping(MPI_COMM_WORLD, dup, &rng, &local, 100 + round);
    check_served(before);
    MPI_Comm_free(&dup);
    for (int k = 0; k < NKINDS; k++) MPI_Type_free(&kinds[k]);
    return t_finish("test_nonblocking_move");
}
