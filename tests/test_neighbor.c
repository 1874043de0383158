/* Differential test of the neighbourhood collectives: MPI_Neighbor_allgather(v) and
 * MPI_Neighbor_alltoall(v,w), blocking, nonblocking and persistent, through nodecoll on
 * random topologies of each kind: Cartesian grids (1-3 dimensions, periodic or not, so with
 * MPI_PROC_NULL neighbours and, in periodic dimensions of size 1 and 2, a rank that is its
 * own or its peer's neighbour in both directions), MPI_Graph_create graphs, and distributed
 * graphs made with MPI_Dist_graph_create_adjacent (weighted or MPI_UNWEIGHTED) and with
 * MPI_Dist_graph_create; graphs with repeated edges, self-loops and ranks without neighbours.
 *
 * The oracle is MPI's definition of the call, run with the host's point-to-point calls on the
 * neighbour lists the topology queries return: out-block j of a Cartesian rank lands in
 * in-block j^1 of its neighbour (each direction its own tag), and in a graph the m-th edge from
 * s to r feeds r's m-th edge from s.  Where no rank appears twice in a neighbour list, the
 * host's own PMPI_Neighbor_* call must agree with the oracle too; with repeated neighbours the
 * hosts here deliver blocks in other orders (Open MPI 4.1's nonblocking calls on Cartesian
 * grids, MPICH 4.0.2's calls on graphs: docs/design.md), so only nodecoll is held to MPI's
 * rule there.  On one rank the host serves every call, and it is the oracle.  Counts are
 * random per edge (zero, small, past the slot), displacements leave gaps and run backwards,
 * datatypes mix MPI_INT with derived types of the same signature; receive buffers start with
 * a marker and must match the oracle's byte for byte, gaps and MPI_PROC_NULL blocks included.
 * Where the host has MPI-4's large-count forms (MPICH 4), every call runs in those too
 * (MPI_Neighbor_*_c, MPI_Ineighbor_*_c, MPI_Neighbor_*_init_c: MPI_Count counts, MPI_Aint
 * displacements), against the same oracle, and the host's PMPI_Neighbor_*_c where it is right.
 * On more than one rank nodecoll's counters must show that it served every call of every form.
 * Also: a communicator without a topology gives the host's error class.
 *
 * Argument: number of random topologies per kind (default 2). */
#define _DEFAULT_SOURCE /* alarm */
#include "common.h"
#include "watch.h"

enum { K_CART, K_GRAPH, K_ADJACENT, K_DIST, K_KINDS };
static const char *kind_names[] = {"cartesian", "graph", "dist-graph-adjacent", "dist-graph"};
enum { C_ALLGATHER, C_ALLGATHERV, C_ALLTOALL, C_ALLTOALLV, C_ALLTOALLW, C_COLLS };
static const char *coll_names[] = {"neighbor_allgather", "neighbor_allgatherv", "neighbor_alltoall",
                                   "neighbor_alltoallv", "neighbor_alltoallw"};
/* Each form in the classic calls, then in the large-count ones (form + F_LARGE). */
enum { F_BLOCKING, F_NONBLOCKING, F_PERSISTENT, F_LARGE, F_FORMS = 2 * F_LARGE };
static const char *form_names[] = {"blocking", "nonblocking", "persistent", "blocking _c", "nonblocking _c",
                                   "persistent _c"};
#if MPI_VERSION >= 4
#define T_LARGE_COUNT 1 /* (MPI-4's _c forms) */
#endif

#define T_OK(call)                                                                            \
    do {                                                                                      \
        int t_err_ = (call);                                                                  \
        if (t_err_ != MPI_SUCCESS) t_fail("%s returned %d (line %d)", #call, t_err_, __LINE__); \
    } while (0)

static int pick(uint64_t *rng, int n) { return (int)(t_rand(rng) % (uint64_t)n); }

/* A topology as the program sees it through the topology queries. */
typedef struct topo {
    MPI_Comm comm;
    int kind, indeg, outdeg;
    int repeats; /* some rank of the communicator lists a rank twice */
    int *in, *out, *in_tag, *out_tag;
} topo;

/* ---- building topologies ------------------------------------------------------------------ */

static void shuffle(int *v, int n, uint64_t *rng)
{
    for (int i = n - 1; i > 0; i--) {
        int j = pick(rng, i + 1), t = v[i];
        v[i] = v[j];
        v[j] = t;
    }
}

/* Random directed edges (self-loops and repeats among them), the same on every rank. */
static int random_edges(uint64_t *rng, int size, int *src, int *dst, int max)
{
    int n = pick(rng, 3 * size + 1);
    n = n > max ? max : n;
    for (int e = 0; e < n; e++) {
        src[e] = pick(rng, size);
        dst[e] = pick(rng, 4) == 0 ? src[e] : pick(rng, size);
    }
    return n;
}

static MPI_Comm make_cart(uint64_t *rng, int size)
{
    int ndims = 1 + pick(rng, 3), dims[3] = {1, 1, 1}, periods[3];
    for (int left = size, f = 2; left > 1;) { /* size's prime factors, each to a random dimension */
        while (left % f) f++;
        dims[pick(rng, ndims)] *= f;
        left /= f;
    }
    for (int d = 0; d < ndims; d++) periods[d] = pick(rng, 3) != 0;
    MPI_Comm comm;
    MPI_Cart_create(MPI_COMM_WORLD, ndims, dims, periods, 0, &comm);
    return comm;
}

/* MPI_Graph_create wants each edge in both ends' lists: undirected random edges, each list
 * shuffled. */
static MPI_Comm make_graph(uint64_t *rng, int size)
{
    int src[64], dst[64], n = random_edges(rng, size, src, dst, 64);
    int *index = calloc((size_t)size, sizeof(int)), *lists = malloc(sizeof(int) * (size_t)(2 * n + 1)), at = 0;
    for (int r = 0; r < size; r++) {
        int first = at;
        for (int e = 0; e < n; e++) {
            if (src[e] == r) lists[at++] = dst[e];
            if (dst[e] == r && src[e] != r) lists[at++] = src[e];
        }
        shuffle(lists + first, at - first, rng);
        index[r] = at;
    }
    MPI_Comm comm;
    MPI_Graph_create(MPI_COMM_WORLD, size, index, lists, 0, &comm);
    free(index);
    free(lists);
    return comm;
}

static MPI_Comm make_dist(uint64_t *rng, int size, int rank, int adjacent)
{
    int src[64], dst[64], w[64], n = random_edges(rng, size, src, dst, 64), weighted = pick(rng, 2);
    int sources[64], dests[64], nin = 0, nout = 0;
    MPI_Comm comm;
    for (int e = 0; e < 64; e++) w[e] = 1 + pick(rng, 9);
    if (adjacent) {
        for (int e = 0; e < n; e++) {
            if (dst[e] == rank) sources[nin++] = src[e];
            if (src[e] == rank) dests[nout++] = dst[e];
        }
        shuffle(sources, nin, rng);
        shuffle(dests, nout, rng);
        MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, nin, sources, weighted ? w : MPI_UNWEIGHTED, nout, dests,
                                       weighted ? w + 32 : MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &comm);
        return comm;
    }
    /* Each rank names the edges e with e % size == rank, edges of other ranks among them. */
    int degrees[64];
    for (int e = rank; e < n; e += size) {
        sources[nin] = src[e];
        degrees[nin] = 1;
        dests[nin++] = dst[e];
    }
    MPI_Dist_graph_create(MPI_COMM_WORLD, nin, sources, degrees, dests, weighted ? w : MPI_UNWEIGHTED, MPI_INFO_NULL,
                          0, &comm);
    return comm;
}

/* How many times list[i] appears in list[0 .. i). */
static int occurrence(const int *list, int i)
{
    int m = 0;
    for (int j = 0; j < i; j++) m += list[j] == list[i];
    return m;
}

static topo make_topo(int kind, uint64_t *rng)
{
    topo t = {.kind = kind};
    int weighted = 0;
    t.comm = kind == K_CART ? make_cart(rng, t_size) : kind == K_GRAPH ? make_graph(rng, t_size)
                                                                      : make_dist(rng, t_size, t_rank, kind == K_ADJACENT);
    if (kind == K_CART) {
        int ndims;
        MPI_Cartdim_get(t.comm, &ndims);
        t.indeg = t.outdeg = 2 * ndims;
    } else if (kind == K_GRAPH) {
        MPI_Graph_neighbors_count(t.comm, t_rank, &t.indeg);
        t.outdeg = t.indeg;
    } else {
        MPI_Dist_graph_neighbors_count(t.comm, &t.indeg, &t.outdeg, &weighted);
    }
    t.in = malloc(sizeof(int) * (size_t)(t.indeg + 1));
    t.out = malloc(sizeof(int) * (size_t)(t.outdeg + 1));
    t.in_tag = malloc(sizeof(int) * (size_t)(t.indeg + 1));
    t.out_tag = malloc(sizeof(int) * (size_t)(t.outdeg + 1));
    if (kind == K_CART) {
        for (int d = 0; d < t.indeg / 2; d++) MPI_Cart_shift(t.comm, d, 1, &t.in[2 * d], &t.in[2 * d + 1]);
        memcpy(t.out, t.in, sizeof(int) * (size_t)t.indeg);
    } else if (kind == K_GRAPH) {
        MPI_Graph_neighbors(t.comm, t_rank, t.indeg, t.in);
        memcpy(t.out, t.in, sizeof(int) * (size_t)t.indeg);
    } else {
        /* (weight arrays only where the graph has weights) */
        int *w = weighted ? malloc(sizeof(int) * (size_t)(t.indeg + t.outdeg + 1)) : NULL;
        MPI_Dist_graph_neighbors(t.comm, t.indeg, t.in, w ? w : MPI_UNWEIGHTED, t.outdeg, t.out,
                                 w ? w + t.indeg : MPI_UNWEIGHTED);
        free(w);
    }
    /* MPI's pairing as tags: a Cartesian direction, or the edge's occurrence among the edges
     * between the same two ranks. */
    int repeats = 0;
    for (int k = 0; k < t.indeg; k++) {
        t.in_tag[k] = kind == K_CART ? k ^ 1 : occurrence(t.in, k);
        repeats |= t.in[k] != MPI_PROC_NULL && occurrence(t.in, k) > 0;
    }
    for (int j = 0; j < t.outdeg; j++) {
        t.out_tag[j] = kind == K_CART ? j : occurrence(t.out, j);
        repeats |= t.out[j] != MPI_PROC_NULL && occurrence(t.out, j) > 0;
    }
    MPI_Allreduce(&repeats, &t.repeats, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return t;
}

static void free_topo(topo *t)
{
    MPI_Comm_free(&t->comm);
    free(t->in);
    free(t->out);
    free(t->in_tag);
    free(t->out_tag);
}

/* ---- data: types, counts, layouts -------------------------------------------------------- */

/* Datatypes of u ints each (the same signature): MPI_INT (u elements), contiguous, strided,
 * padded, and reversed. */
enum { T_INT, T_CONTIG, T_VECTOR, T_RESIZED, T_REVERSED, T_TYPES };
static MPI_Datatype types[4][T_TYPES];

static void make_types(void)
{
    for (int u = 1; u <= 3; u++) {
        MPI_Datatype contig;
        int blocks[3] = {1, 1, 1}, displs[3] = {2, 1, 0};
        types[u][T_INT] = MPI_INT;
        MPI_Type_contiguous(u, MPI_INT, &types[u][T_CONTIG]);
        MPI_Type_vector(u, 1, 2, MPI_INT, &types[u][T_VECTOR]);
        MPI_Type_contiguous(u, MPI_INT, &contig);
        MPI_Type_create_resized(contig, 0, (MPI_Aint)sizeof(int) * (u + 1), &types[u][T_RESIZED]);
        MPI_Type_free(&contig);
        MPI_Type_indexed(u, blocks, displs + 3 - u, MPI_INT, &types[u][T_REVERSED]);
        for (int k = T_CONTIG; k < T_TYPES; k++) MPI_Type_commit(&types[u][k]);
    }
}

static void free_types(void)
{
    for (int u = 1; u <= 3; u++)
        for (int k = T_CONTIG; k < T_TYPES; k++) MPI_Type_free(&types[u][k]);
}

/* Units (of u ints) on the edge from s to r with pairing tag `tag`, alike at both ends. */
static int edge_units(uint64_t seed, int s, int r, int tag)
{
    uint64_t h = seed * 1000003u + (uint64_t)s * 7919u + (uint64_t)r * 104729u + (uint64_t)tag * 13u;
    uint64_t v = t_rand(&h) % 10;
    return v < 2 ? 0 : v < 8 ? 1 + (int)(t_rand(&h) % 8) : 1000 + (int)(t_rand(&h) % 5000);
}

/* One vector argument: n blocks, each `count` elements of `type` at byte offset off. */
typedef struct vec {
    int n;
    int *counts, *displs;  /* displs in the type's extents (v-forms) */
    MPI_Count *ccounts;    /* the same for the _c forms */
    MPI_Aint *adispls;
    MPI_Aint *bytes;       /* byte offsets (w-form, and for the oracle) */
    MPI_Datatype *types;
    size_t size;           /* buffer bytes */
} vec;

/* Blocks in list order or backwards, 0-2 extents apart; `uniform`: back to back as MPI places
 * the blocks of the non-v forms, and `units` each even when there are none (Open MPI 4.1.4's
 * Neighbor_allgather sends nothing when a rank without in-neighbours gives 0 as its receive
 * count). */
static vec make_vec(int n, const int *units, int u, uint64_t *rng, int per_block_types, int uniform)
{
    vec v = {.n = n};
    size_t m = (size_t)(n > 0 ? n : 1);
    v.counts = malloc(sizeof(int) * m);
    v.displs = malloc(sizeof(int) * m);
    v.bytes = malloc(sizeof(MPI_Aint) * m);
    v.ccounts = malloc(sizeof(MPI_Count) * m);
    v.adispls = malloc(sizeof(MPI_Aint) * m);
    v.types = malloc(sizeof(MPI_Datatype) * m);
    int one = pick(rng, T_TYPES), backwards = !uniform && pick(rng, 3) == 0;
    MPI_Aint at = uniform ? 0 : (MPI_Aint)pick(rng, 3) * 16, lb, extent;
    MPI_Type_get_extent(types[u][one], &lb, &extent);
    v.counts[0] = uniform ? units[0] * (one == T_INT ? u : 1) : 0; /* (a vector of no blocks still passes them) */
    v.displs[0] = 0;
    v.bytes[0] = 0;
    v.types[0] = types[u][one];
    for (int i = 0; i < n; i++) {
        int b = backwards ? n - 1 - i : i, kind = per_block_types ? pick(rng, T_TYPES) : one;
        v.types[b] = types[u][kind];
        v.counts[b] = units[b] * (kind == T_INT ? u : 1);
        MPI_Type_get_extent(v.types[b], &lb, &extent);
        if (!per_block_types) at = (at + extent - 1) / extent * extent; /* (a whole number of extents) */
        v.bytes[b] = at;
        v.displs[b] = (int)(at / extent);
        at += (MPI_Aint)v.counts[b] * extent + (uniform ? 0 : (MPI_Aint)pick(rng, 3) * extent);
    }
    for (int i = 0; i < (n > 0 ? n : 1); i++) {
        v.ccounts[i] = v.counts[i];
        v.adispls[i] = v.displs[i];
    }
    v.size = (size_t)at + 64;
    return v;
}

static void free_vec(vec *v)
{
    free(v->counts);
    free(v->displs);
    free(v->bytes);
    free(v->ccounts);
    free(v->adispls);
    free(v->types);
}

/* ---- one call ------------------------------------------------------------------------------- */

typedef struct call {
    int coll;
    const topo *t;
    vec send, recv;           /* allgather(v): send has one block */
    char *sbuf;
} call;

static int is_alltoall(int coll) { return coll >= C_ALLTOALL; }

/* Each call's arguments. */
#define A_ALLGATHER c->sbuf + s->bytes[0], s->counts[0], s->types[0], rbuf, r->counts[0], r->types[0], comm
#define A_ALLGATHERV c->sbuf + s->bytes[0], s->counts[0], s->types[0], rbuf, r->counts, r->displs, r->types[0], comm
#define A_ALLTOALL c->sbuf, s->counts[0], s->types[0], rbuf, r->counts[0], r->types[0], comm
#define A_ALLTOALLV c->sbuf, s->counts, s->displs, s->types[0], rbuf, r->counts, r->displs, r->types[0], comm
#define A_ALLTOALLW c->sbuf, s->counts, s->bytes, s->types, rbuf, r->counts, r->bytes, r->types, comm
/* (and in the _c forms) */
#define A_ALLGATHER_C \
    c->sbuf + s->bytes[0], s->ccounts[0], s->types[0], rbuf, r->ccounts[0], r->types[0], comm
#define A_ALLGATHERV_C \
    c->sbuf + s->bytes[0], s->ccounts[0], s->types[0], rbuf, r->ccounts, r->adispls, r->types[0], comm
#define A_ALLTOALL_C c->sbuf, s->ccounts[0], s->types[0], rbuf, r->ccounts[0], r->types[0], comm
#define A_ALLTOALLV_C c->sbuf, s->ccounts, s->adispls, s->types[0], rbuf, r->ccounts, r->adispls, r->types[0], comm
#define A_ALLTOALLW_C c->sbuf, s->ccounts, s->bytes, s->types, rbuf, r->ccounts, r->bytes, r->types, comm
#ifdef T_PERSISTENT
#define CALL_INIT(Name, ...) T_INIT(Name)(__VA_ARGS__, MPI_INFO_NULL, req)
#else
#define CALL_INIT(Name, ...) MPI_ERR_OTHER
#endif
/* A call in `form` (blocking: MPI_<BName>, or the host's PMPI_<BName> where api is 0). */
#define CALLS(init, Name, BName, IName, ...)                                          \
    if (form == F_BLOCKING) return (api ? MPI_##BName : PMPI_##BName)(__VA_ARGS__); \
    if (form == F_NONBLOCKING) return MPI_##IName(__VA_ARGS__, req);                \
    return init(Name, __VA_ARGS__);
#ifdef T_LARGE_COUNT
#define CALL_INIT_C(Name, ...) MPI_##Name##_init_c(__VA_ARGS__, MPI_INFO_NULL, req)
#define LARGE_CALLS(Name, IName, ...) \
    if (large) {                      \
        CALLS(CALL_INIT_C, Name, Name##_c, IName##_c, __VA_ARGS__) \
    }
#else
#define LARGE_CALLS(Name, IName, ...) \
    if (large) return MPI_ERR_OTHER;
#endif
#define CASE(C, Name, IName, A, A_C)    \
    case C:                             \
        LARGE_CALLS(Name, IName, A_C)   \
        CALLS(CALL_INIT, Name, Name, IName, A)

/* Whether this MPI has form f. */
static int has_form(int f)
{
#ifndef T_PERSISTENT
    if (f % F_LARGE == F_PERSISTENT) return 0;
#endif
#ifndef T_LARGE_COUNT
    if (f >= F_LARGE) return 0;
#endif
    return 1;
}

/* The call through nodecoll (api 1; any form f) or the host (api 0; blocking, classic or _c). */
static int run(const call *c, int api, int f, char *rbuf, MPI_Request *req)
{
    const vec *s = &c->send, *r = &c->recv;
    MPI_Comm comm = c->t->comm;
    int form = f % F_LARGE, large = f >= F_LARGE;
    switch (c->coll) {
    CASE(C_ALLGATHER, Neighbor_allgather, Ineighbor_allgather, A_ALLGATHER, A_ALLGATHER_C)
    CASE(C_ALLGATHERV, Neighbor_allgatherv, Ineighbor_allgatherv, A_ALLGATHERV, A_ALLGATHERV_C)
    CASE(C_ALLTOALL, Neighbor_alltoall, Ineighbor_alltoall, A_ALLTOALL, A_ALLTOALL_C)
    CASE(C_ALLTOALLV, Neighbor_alltoallv, Ineighbor_alltoallv, A_ALLTOALLV, A_ALLTOALLV_C)
    CASE(C_ALLTOALLW, Neighbor_alltoallw, Ineighbor_alltoallw, A_ALLTOALLW, A_ALLTOALLW_C)
    default: return MPI_ERR_OTHER;
    }
}

/* nodecoll's counters of c's collective: its calls (across nodes under each step they took)
 * and those it handed to the host. */
static void counts_of(const call *c, uint64_t counts[2])
{
    counts[0] = nodecoll_stat_calls(coll_names[c->coll], "*");
    counts[1] = nodecoll_stat_calls(coll_names[c->coll], "pmpi:*");
}

/* On more than one rank, since `before` nodecoll served c in form f (a persistent call is
 * counted when started): counted, and not handed to the host. */
static void check_served(const call *c, int f, const uint64_t before[2], int seed)
{
    uint64_t now[2];
    counts_of(c, now);
    if (t_size > 1 && !getenv("NODECOLL_CMA"))
        T_CHECK(now[0] > before[0] && now[1] == before[1],
                "%s %s on a %s topology (seed %d): not served by nodecoll (calls %llu -> %llu, to the host %llu -> "
                "%llu)", form_names[f], coll_names[c->coll], kind_names[c->t->kind], seed,
                (unsigned long long)before[0], (unsigned long long)now[0], (unsigned long long)before[1],
                (unsigned long long)now[1]);
}

/* MPI's definition, through the host's point to point (every edge a message, zero-size ones
 * too, tagged with its pairing). */
static void oracle(const call *c, char *rbuf)
{
    const topo *t = c->t;
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * (size_t)(t->indeg + t->outdeg + 1));
    int n = 0;
    for (int k = 0; k < t->indeg; k++)
        if (t->in[k] != MPI_PROC_NULL)
            T_OK(PMPI_Irecv(rbuf + c->recv.bytes[k], c->recv.counts[k], c->recv.types[k], t->in[k], t->in_tag[k],
                            t->comm, &reqs[n++]));
    for (int j = 0; j < t->outdeg; j++) {
        int b = is_alltoall(c->coll) ? j : 0;
        if (t->out[j] != MPI_PROC_NULL)
            T_OK(PMPI_Isend(c->sbuf + c->send.bytes[b], c->send.counts[b], c->send.types[b], t->out[j], t->out_tag[j],
                            t->comm, &reqs[n++]));
    }
    MPI_Status *statuses = malloc(sizeof(MPI_Status) * (size_t)(n + 1)); /* (MPICH's MPI_STATUSES_IGNORE upsets gcc) */
    T_OK(PMPI_Waitall(n, reqs, statuses));
    free(statuses);
    free(reqs);
}

#define MARKER 0xEE

static void fill_send(call *c, uint64_t seed)
{
    uint64_t h = seed ^ (uint64_t)t_rank << 32;
    for (size_t i = 0; i + sizeof(int) <= c->send.size; i += sizeof(int)) {
        int v = (int)t_rand(&h);
        memcpy(c->sbuf + i, &v, sizeof v);
    }
}

/* The call's vectors: units per edge alike at both ends of each edge (uniform forms: one
 * count everywhere), u ints per unit, layouts and datatypes this rank's own choice. */
static call make_call(int coll, const topo *t, uint64_t seed)
{
    call c = {.coll = coll, .t = t};
    uint64_t global = seed * 31 + (uint64_t)coll, local = global ^ ((uint64_t)t_rank + 1) * 0x9e3779b97f4a7c15ULL;
    int u = 1 + pick(&global, 3), uniform = coll == C_ALLGATHER || coll == C_ALLTOALL;
    int all = edge_units(seed, coll, 0, 0), w = coll == C_ALLTOALLW;
    int nsend = is_alltoall(coll) ? t->outdeg : 1;
    int *sunits = malloc(sizeof(int) * (size_t)(nsend + 1)), *runits = malloc(sizeof(int) * (size_t)(t->indeg + 1));
    sunits[0] = runits[0] = all;
    for (int j = 0; j < nsend; j++)
        sunits[j] = uniform ? all : coll == C_ALLGATHERV ? edge_units(seed, t_rank, -1, 0)
                                                          : edge_units(seed, t_rank, t->out[j], t->out_tag[j]);
    for (int k = 0; k < t->indeg; k++)
        runits[k] = uniform ? all : coll == C_ALLGATHERV ? edge_units(seed, t->in[k], -1, 0)
                                                          : edge_units(seed, t->in[k], t_rank, t->in_tag[k]);
    c.send = make_vec(nsend, sunits, u, &local, w, uniform);
    c.recv = make_vec(t->indeg, runits, u, &local, w, uniform);
    c.sbuf = malloc(c.send.size);
    fill_send(&c, seed);
    free(sunits);
    free(runits);
    return c;
}

static void free_call(call *c)
{
    free_vec(&c->send);
    free_vec(&c->recv);
    free(c->sbuf);
}

static char *marked(size_t bytes)
{
    char *p = malloc(bytes);
    memset(p, MARKER, bytes);
    return p;
}

static void check_same(const call *c, const char *got, const char *want, const char *who, const char *form, int seed)
{
    for (size_t i = 0; i < c->recv.size; i++)
        if (got[i] != want[i]) {
            t_fail("%s %s on a %s topology (seed %d, %d in-edges): %s's byte %zu is 0x%02x, MPI's definition 0x%02x",
                   form, coll_names[c->coll], kind_names[c->t->kind], seed, c->t->indeg, who, i,
                   (unsigned char)got[i], (unsigned char)want[i]);
            return;
        }
}

/* Where the hosts agree with MPI's definition: without repeated neighbours (both order the
 * blocks between two ranks otherwise), and not MPICH 4.0.2's Neighbor_alltoallw on a
 * distributed graph (it leaves blocks undelivered; a rank without out-neighbours receives
 * nothing at all). */
static int host_is_right(const topo *t, int coll)
{
#ifdef MPICH_VERSION
    if (coll == C_ALLTOALLW && (t->kind == K_ADJACENT || t->kind == K_DIST)) return 0;
#endif
    return !t->repeats;
}

/* Every form of every call on topology t. */
static void run_topo(const topo *t, int seed)
{
    for (int coll = 0; coll < C_COLLS; coll++) {
        call c = make_call(coll, t, (uint64_t)seed * 7 + (uint64_t)t->kind);
        char *want = marked(c.recv.size), *got = marked(c.recv.size);
        if (t_size == 1) { /* (the host serves every call: it is the oracle where it is right) */
            if (t->repeats) goto next;
            T_OK(run(&c, 0, F_BLOCKING, want, NULL));
        } else {
            oracle(&c, want);
            /* the host must agree with the oracle where it is right, classic and _c */
            for (int f = F_BLOCKING; f < F_FORMS && host_is_right(t, coll); f += F_LARGE) {
                if (!has_form(f)) continue;
                memset(got, MARKER, c.recv.size);
                T_OK(run(&c, 0, f, got, NULL));
                check_same(&c, got, want, "the host", form_names[f], seed);
            }
        }
        for (int f = 0; f < F_FORMS; f++) {
            MPI_Request req;
            uint64_t before[2];
            if (!has_form(f)) continue;
            memset(got, MARKER, c.recv.size);
            counts_of(&c, before);
            T_OK(run(&c, 1, f, got, &req));
            if (f % F_LARGE == F_PERSISTENT) T_OK(MPI_Start(&req));
            if (f % F_LARGE != F_BLOCKING) T_OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
            check_served(&c, f, before, seed);
            check_same(&c, got, want, "nodecoll", form_names[f], seed);
            if (f % F_LARGE != F_PERSISTENT) continue;
            /* A second start, with new data. */
            fill_send(&c, (uint64_t)seed * 977);
            memset(want, MARKER, c.recv.size);
            memset(got, MARKER, c.recv.size);
            if (t_size == 1) T_OK(run(&c, 0, F_BLOCKING, want, NULL));
            else oracle(&c, want);
            T_OK(MPI_Start(&req));
            T_OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
            check_same(&c, got, want, "nodecoll", "persistent (second start)", seed);
            T_OK(MPI_Request_free(&req)); /* (the forms after it have the new data and result) */
        }
    next:
        free(want);
        free(got);
        free_call(&c);
    }
}

/* ---- zero-size neighbours ------------------------------------------------------------------ */

/* A ring of every rank, both ways, in which rank 0's edges carry nothing: rank 0 must leave
 * Neighbor_alltoallv without waiting for its neighbours, which enter the call only after a
 * message from rank 0 says it has left (a rank 0 that waited for them would deadlock).
 * Ordered, not timed: it cannot flake when oversubscribed. */
typedef struct zero_call {
    int *send, *recv, *counts, *displs;
    MPI_Comm comm;
} zero_call;

static void zero_ring(void *ctx)
{
    zero_call *z = ctx;
    T_OK(MPI_Neighbor_alltoallv(z->send, z->counts, z->displs, MPI_INT, z->recv, z->counts, z->displs, MPI_INT, z->comm));
}

static void run_zero_neighbors(void)
{
    const char *check = getenv("NODECOLL_CHECK"); /* (which makes every call wait for every rank) */
    if (t_size < 3 || (check && atoi(check))) return;
    int ring[2] = {(t_rank + t_size - 1) % t_size, (t_rank + 1) % t_size}, counts[2], displs[2] = {0, 1};
    int send[2] = {t_rank, t_rank}, recv[2] = {-1, -1};
    for (int i = 0; i < 2; i++) counts[i] = t_rank == 0 || ring[i] == 0 ? 0 : 1;
    int *volatile unweighted = MPI_UNWEIGHTED; /* (gcc takes Open MPI's for an empty array read) */
    MPI_Comm comm;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, ring, unweighted, 2, ring, unweighted, MPI_INFO_NULL, 0, &comm);
    zero_call z = {send, recv, counts, displs, comm};
    zero_ring(&z); /* (sets the communicator up) */
    MPI_Barrier(comm);
    run_rank0_first(comm, zero_ring, &z,
                    "FAIL: neighbor_alltoallv: a rank with only zero-size neighbours waited for them (deadlock)\n");
    for (int i = 0; i < 2; i++)
        T_CHECK(!counts[i] || recv[i] == ring[i], "zero-size ring: in-edge %d has %d, not %d", i, recv[i], ring[i]);
    MPI_Barrier(comm);
    MPI_Comm_free(&comm);
}

/* A communicator without a topology: the host's error class. */
static void run_no_topology(void)
{
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN); /* (Open MPI raises it there) */
    MPI_Barrier(comm); /* (set up: nodecoll judges the call, not a not-set-up fallback) */
    int buf[4] = {0}, out[4], cls[2];
    uint64_t args = nodecoll_stat_calls("neighbor_allgather", "pmpi:args");
    for (int a = 0; a < 2; a++) {
        int err = (a ? MPI_Neighbor_allgather : PMPI_Neighbor_allgather)(buf, 1, MPI_INT, out, 1, MPI_INT, comm);
        cls[a] = err;
        if (err != MPI_SUCCESS) MPI_Error_class(err, &cls[a]);
    }
    T_CHECK(cls[0] != MPI_SUCCESS && cls[0] == cls[1], "no topology: nodecoll's error class %d, the host's %d", cls[1],
            cls[0]);
    T_CHECK(t_size == 1 || nodecoll_stat_calls("neighbor_allgather", "pmpi:args") == args + 1,
            "no topology: not counted as pmpi:args");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_Comm_free(&comm);
}

/* The fast path ran (not the host) where the settings allow it. */
static void check_fast_path(void)
{
    if (t_size == 1 || getenv("NODECOLL_CMA")) return;
    for (int i = 0; i < C_COLLS; i++) {
        T_CHECK(nodecoll_stat_calls(coll_names[i], "cma") > 0, "%s never took the fast path", coll_names[i]);
        T_CHECK(nodecoll_stat_calls(coll_names[i], "pmpi:no-cma") + nodecoll_stat_calls(coll_names[i], "pmpi:not-set-up") == 0,
                "%s went to the host", coll_names[i]);
    }
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv);
    int cases = argc > 1 ? atoi(argv[1]) : 2;
    make_types();
    for (int seed = 1; seed <= cases; seed++)
        for (int kind = 0; kind < K_KINDS; kind++) {
            uint64_t rng = (uint64_t)seed * 101 + (uint64_t)kind;
            topo t = make_topo(kind, &rng);
            run_topo(&t, seed);
            free_topo(&t); /* (the next topology may get the same handle: its lists must be read anew) */
        }
    check_fast_path();
    run_zero_neighbors();
    run_no_topology();
    free_types();
    return t_finish("test_neighbor");
}
