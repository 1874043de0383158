/*
 * The one table of collectives.  A collective is described once (buffers, where its result
 * lands, how many bytes it must move) and called through a family of entry points, so the
 * nodecoll call and the host call can never differ in anything but the entry point.
 */
#include "bench.h"

#include <stdio.h>
#include <string.h>

/* Persistent collectives: MPI-4's MPI_<Coll>_init (MPICH 4), or Open MPI 4.1's MPIX_<Coll>_init
 * from its pcollreq extension (mpi-ext.h).  BENCH_INIT(prefix, Upper) spells one: prefix P
 * gives the host's PMPI_ form. */
#if defined(OPEN_MPI) && defined(__has_include)
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif
#endif
#if MPI_VERSION >= 4
#define BENCH_PERSISTENT 1
#define BENCH_INIT(prefix, Upper) prefix##MPI_##Upper##_init
#define BENCH_PERSISTENT_NAME "MPI_<Coll>_init"
#elif defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define BENCH_PERSISTENT 1
#define BENCH_INIT(prefix, Upper) prefix##MPIX_##Upper##_init
#define BENCH_PERSISTENT_NAME "MPIX_<Coll>_init"
#else
#define BENCH_PERSISTENT 0
#endif

/* Every collective once: its lower-case name, the MPI spelling, and its argument list taken
 * from a `const struct call *c`.  The blocking, nonblocking (MPI_I<coll>) and persistent
 * (<Coll>_init) calls below are all generated from this one list, so the three forms, and
 * nodecoll and the host, can never pass different arguments. */
#define ENTRY_POINTS(X)                                                                         \
    X(barrier, Barrier, (c->comm))                                                              \
    X(bcast, Bcast, (c->sbuf, c->count, c->type, c->root, c->comm))                             \
    X(reduce, Reduce, (c->sbuf, c->rbuf, c->count, c->type, c->op, c->root, c->comm))           \
    X(allreduce, Allreduce, (c->sbuf, c->rbuf, c->count, c->type, c->op, c->comm))              \
    X(gather, Gather, (c->sbuf, c->count, c->type, c->rbuf, c->count, c->type, c->root, c->comm)) \
    X(gatherv, Gatherv,                                                                         \
      (c->sbuf, c->count, c->type, c->rbuf, c->counts, c->displs, c->type, c->root, c->comm))   \
    X(scatter, Scatter,                                                                         \
      (c->sbuf, c->count, c->type, c->rbuf, c->count, c->type, c->root, c->comm))               \
    X(scatterv, Scatterv,                                                                       \
      (c->sbuf, c->counts, c->displs, c->type, c->rbuf, c->count, c->type, c->root, c->comm))   \
    X(allgather, Allgather, (c->sbuf, c->count, c->type, c->rbuf, c->count, c->type, c->comm))  \
    X(allgatherv, Allgatherv,                                                                   \
      (c->sbuf, c->count, c->type, c->rbuf, c->counts, c->displs, c->type, c->comm))            \
    X(alltoall, Alltoall, (c->sbuf, c->count, c->type, c->rbuf, c->count, c->type, c->comm))    \
    X(alltoallv, Alltoallv,                                                                     \
      (c->sbuf, c->counts, c->displs, c->type, c->rbuf, c->counts, c->displs, c->type, c->comm)) \
    X(alltoallw, Alltoallw,                                                                     \
      (c->sbuf, c->counts, c->bdispls, c->types, c->rbuf, c->counts, c->bdispls, c->types,      \
       c->comm))                                                                                \
    X(neighbor_alltoallv, Neighbor_alltoallv,                                                   \
      (c->sbuf, c->counts, c->displs, c->type, c->rbuf, c->rcounts, c->rdispls, c->type, c->comm)) \
    X(neighbor_alltoallw, Neighbor_alltoallw,                                                   \
      (c->sbuf, c->counts, c->adispls, c->types, c->rbuf, c->rcounts, c->radispls, c->types,    \
       c->comm))                                                                                \
    X(reduce_scatter, Reduce_scatter, (c->sbuf, c->rbuf, c->counts, c->type, c->op, c->comm))   \
    X(reduce_scatter_block, Reduce_scatter_block,                                               \
      (c->sbuf, c->rbuf, c->count, c->type, c->op, c->comm))                                    \
    X(scan, Scan, (c->sbuf, c->rbuf, c->count, c->type, c->op, c->comm))                       \
    X(exscan, Exscan, (c->sbuf, c->rbuf, c->count, c->type, c->op, c->comm))

/* The request calls of each family: a nodecoll request is started, waited for and freed by
 * nodecoll's MPI_Start/Wait/Request_free, a host request by PMPI_Start/Wait/Request_free. */
#define REQUEST_POINTS(X) X(wait, Wait) X(start, Start) X(request_free, Request_free)

/* The member types come from the MPI's own prototypes, so const-ness and MPI_Count
 * differences between Open MPI and MPICH cannot make the two families disagree.  MPI_I<coll>
 * is "I" and the lower-case name: MPI_Ibarrier, MPI_Ireduce_scatter_block. */
#if BENCH_PERSISTENT
#define INIT_MEMBER(lower, Upper) __typeof__(BENCH_INIT(P, Upper)) *lower##_init;
#define INIT_ENTRY(prefix, lower, Upper) .lower##_init = BENCH_INIT(prefix, Upper),
#else
#define INIT_MEMBER(lower, Upper)
#define INIT_ENTRY(prefix, lower, Upper)
#endif

struct mpi_api {
#define AS_MEMBER(lower, Upper, args)                                                           \
    __typeof__(PMPI_##Upper) *lower;                                                            \
    __typeof__(PMPI_I##lower) *i##lower;                                                        \
    INIT_MEMBER(lower, Upper)
    ENTRY_POINTS(AS_MEMBER)
#undef AS_MEMBER
#define AS_REQUEST_MEMBER(lower, Upper) __typeof__(PMPI_##Upper) *lower;
    REQUEST_POINTS(AS_REQUEST_MEMBER)
#undef AS_REQUEST_MEMBER
};

/* MPI_* resolves to nodecoll when libnodecoll precedes libmpi on the link line (or is
 * preloaded); PMPI_* always reaches the host MPI. */
#define AS_ENTRY(prefix, lower, Upper)                                                          \
    .lower = prefix##MPI_##Upper, .i##lower = prefix##MPI_I##lower, INIT_ENTRY(prefix, lower, Upper)
#define AS_MPI(lower, Upper, args) AS_ENTRY(, lower, Upper)
#define AS_PMPI(lower, Upper, args) AS_ENTRY(P, lower, Upper)
#define AS_MPI_REQUEST(lower, Upper) .lower = MPI_##Upper,
#define AS_PMPI_REQUEST(lower, Upper) .lower = PMPI_##Upper,
static const struct mpi_api api_nodecoll = {ENTRY_POINTS(AS_MPI) REQUEST_POINTS(AS_MPI_REQUEST)};
static const struct mpi_api api_host = {ENTRY_POINTS(AS_PMPI) REQUEST_POINTS(AS_PMPI_REQUEST)};
#undef AS_ENTRY
#undef AS_MPI
#undef AS_PMPI
#undef AS_MPI_REQUEST
#undef AS_PMPI_REQUEST

/* Strips the parentheses around an argument list of ENTRY_POINTS. */
#define ARGS(...) __VA_ARGS__

#if BENCH_PERSISTENT
#define DEFINE_INIT(lower, args)                                                                \
    static int init_##lower(const struct mpi_api *a, const struct call *c, MPI_Request *req)    \
    {                                                                                           \
        return a->lower##_init(ARGS args, MPI_INFO_NULL, req);                                  \
    }
#define INIT_OF(lower) init_##lower
#else
#define DEFINE_INIT(lower, args)
#define INIT_OF(lower) NULL
#endif

/* run_<coll>: the blocking call; post_<coll>: the nonblocking one; init_<coll>: the
 * persistent request; forms_<coll>: the three, for the table below. */
#define DEFINE_FORMS(lower, Upper, args)                                                        \
    static int run_##lower(const struct mpi_api *a, const struct call *c)                       \
    {                                                                                           \
        return a->lower(ARGS args);                                                             \
    }                                                                                           \
    static int post_##lower(const struct mpi_api *a, const struct call *c, MPI_Request *req)    \
    {                                                                                           \
        return a->i##lower(ARGS args, req);                                                     \
    }                                                                                           \
    DEFINE_INIT(lower, args)                                                                    \
    static const struct coll_forms forms_##lower = {run_##lower, post_##lower, INIT_OF(lower)};
ENTRY_POINTS(DEFINE_FORMS)
#undef DEFINE_FORMS

#define RT COLL_ROOTED
#define DF COLL_DEFAULT
#define RD COLL_REDUCES
#define AD COLL_ALLDEP
/* Vector variants use equal counts, so they share the traffic of their plain form.  The two
 * nonuniform cases of Balaji et al. (docs/design.md, "References"): n is the large block
 * (skewed) or the block per ring neighbour (ring). */
static const struct coll table[] = {
    {"barrier", &forms_barrier, DF | COLL_SIZELESS | AD, BLK_NONE, BLK_NONE, OUT_NONE, TR_NONE, PAT_UNIFORM},
    {"bcast", &forms_bcast, DF | RT | COLL_OUT_SEND, BLK_ONE, BLK_NONE, OUT_ALL, TR_BCAST, PAT_UNIFORM},
    {"reduce", &forms_reduce, DF | RT | RD, BLK_ONE, BLK_ONE, OUT_ROOT, TR_REDUCE, PAT_UNIFORM},
    {"allreduce", &forms_allreduce, DF | RD | AD, BLK_ONE, BLK_ONE, OUT_ALL, TR_EACH, PAT_UNIFORM},
    {"gather", &forms_gather, DF | RT, BLK_ONE, BLK_ALL, OUT_ROOT, TR_EACH, PAT_UNIFORM},
    {"gatherv", &forms_gatherv, RT, BLK_ONE, BLK_ALL, OUT_ROOT, TR_EACH, PAT_UNIFORM},
    {"scatter", &forms_scatter, DF | RT, BLK_ALL, BLK_ONE, OUT_ALL, TR_EACH, PAT_UNIFORM},
    {"scatterv", &forms_scatterv, RT, BLK_ALL, BLK_ONE, OUT_ALL, TR_EACH, PAT_UNIFORM},
    {"allgather", &forms_allgather, DF | AD, BLK_ONE, BLK_ALL, OUT_ALL, TR_ALLGATHER, PAT_UNIFORM},
    {"allgatherv", &forms_allgatherv, AD, BLK_ONE, BLK_ALL, OUT_ALL, TR_ALLGATHER, PAT_UNIFORM},
    {"alltoall", &forms_alltoall, DF | AD, BLK_ALL, BLK_ALL, OUT_ALL, TR_ALLTOALL, PAT_UNIFORM},
    {"alltoallv", &forms_alltoallv, AD, BLK_ALL, BLK_ALL, OUT_ALL, TR_ALLTOALL, PAT_UNIFORM},
    {"alltoallw", &forms_alltoallw, AD, BLK_ALL, BLK_ALL, OUT_ALL, TR_ALLTOALL, PAT_UNIFORM},
    {"allgatherv_skewed", &forms_allgatherv, DF | AD, BLK_ALL, BLK_ALL, OUT_ALL, TR_SKEWED, PAT_SKEWED},
    {"alltoallw_ring", &forms_alltoallw, DF | AD, BLK_ALL, BLK_ALL, OUT_ALL, TR_RING, PAT_RING},
    /* Neighbourhood collectives (neighbors.c; n: the largest block). */
    {"neighbor_alltoallv_stencil", &forms_neighbor_alltoallv, DF, BLK_EDGES, BLK_EDGES, OUT_ALL, TR_STENCIL,
     PAT_STENCIL},
    {"neighbor_alltoallw_stencil", &forms_neighbor_alltoallw, 0, BLK_EDGES, BLK_EDGES, OUT_ALL, TR_STENCIL,
     PAT_STENCIL},
    {"neighbor_alltoallv_graph", &forms_neighbor_alltoallv, DF, BLK_EDGES, BLK_EDGES, OUT_ALL, TR_EACH, PAT_GRAPH},
    {"reduce_scatter", &forms_reduce_scatter, RD | AD, BLK_ALL, BLK_ONE, OUT_ALL, TR_RSCATTER, PAT_UNIFORM},
    {"reduce_scatter_block", &forms_reduce_scatter_block, DF | RD | AD, BLK_ALL, BLK_ONE, OUT_ALL,
     TR_RSCATTER, PAT_UNIFORM},
    {"scan", &forms_scan, RD, BLK_ONE, BLK_ONE, OUT_ALL, TR_EACH, PAT_UNIFORM},
    {"exscan", &forms_exscan, RD, BLK_ONE, BLK_ONE, OUT_NOT_FIRST, TR_EXSCAN, PAT_UNIFORM},
};
#undef RT
#undef DF
#undef RD
#undef AD

int coll_count(void)
{
    return (int)(sizeof table / sizeof table[0]);
}

const struct coll *coll_at(int index)
{
    return &table[index];
}

int coll_find(const char *name)
{
    return table_find(table, coll_count(), sizeof table[0], name);
}

/* The name nodecoll counts a call under: a pattern's suffix is not part of it. */
void coll_call_name(const struct coll *c, char *out, size_t len)
{
    int keep = c->pattern == PAT_UNIFORM ? (int)strlen(c->name) : (int)(strrchr(c->name, '_') - c->name);
    snprintf(out, len, "%.*s", keep, c->name);
}

const char *coll_persistent_name(void)
{
#if BENCH_PERSISTENT
    return BENCH_PERSISTENT_NAME;
#else
    return NULL;
#endif
}

const struct mpi_api *coll_api(enum variant v)
{
    return v == VAR_NODECOLL ? &api_nodecoll : &api_host;
}

const char *variant_name(enum variant v)
{
    return v == VAR_NODECOLL ? "nodecoll" : "host";
}

int api_wait(const struct mpi_api *api, MPI_Request *req)
{
    return api->wait(req, MPI_STATUS_IGNORE);
}

int api_start(const struct mpi_api *api, MPI_Request *req)
{
    return api->start(req);
}

int api_request_free(const struct mpi_api *api, MPI_Request *req)
{
    return api->request_free(req);
}

static const char *const mode_names[MODE_COUNT] = {"blocking", "nonblocking", "persistent"};

const char *mode_name(enum mode m)
{
    return mode_names[m];
}

int mode_find(const char *name)
{
    for (int m = 0; m < MODE_COUNT; m++)
        if (!strcmp(name, mode_names[m])) return m;
    return -1;
}

size_t coll_blocks(enum blocks b, int nranks)
{
    return b == BLK_NONE ? 0 : b == BLK_ONE ? 1 : b == BLK_EDGES ? NEIGHBOR_EDGES : (size_t)nranks;
}

/* docs/benchmark.md, "Lower bounds", gives the reasoning row by row: every input byte that
 * reaches a result is read at least once, every result byte is written once. */
void coll_traffic(const struct coll *c, int nranks, double *reads, double *writes)
{
    double p = nranks, r = 0, w = 0;
    switch (c->traffic) {
    case TR_NONE: break;
    case TR_BCAST: r = 1, w = p - 1; break;
    case TR_REDUCE: r = p, w = 1; break;
    case TR_EACH: r = w = p; break;
    case TR_ALLGATHER: r = p, w = p * p; break;
    case TR_ALLTOALL: r = w = p * p; break;
    case TR_RSCATTER: r = p * p, w = p; break;
    case TR_EXSCAN: r = w = p - 1; break;
    /* rank 0's block, read once, lands in every result; the one-element blocks are left out */
    case TR_SKEWED: r = 1, w = p; break;
    /* at P = 2 both neighbours are the same rank, and a rank alone has none */
    case TR_RING: r = w = p * (nranks > 2 ? 2 : nranks - 1); break;
    /* each rank's six faces, 2 (n + n/2 + n/4) >= 3n; the graph's n to rank + 1 is TR_EACH */
    case TR_STENCIL: r = w = 3 * p; break;
    }
    *reads = r;
    *writes = w;
}
