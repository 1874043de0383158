/*
 * The one table of collectives.  A collective is described once (buffers, where its result
 * lands, how many bytes it must move) and called through a family of entry points, so the
 * nodecoll call and the host call can never differ in anything but the entry point.
 */
#include "bench.h"

#include <stdio.h>
#include <string.h>

#define ENTRY_POINTS(X)                                                                    \
    X(barrier, Barrier) X(bcast, Bcast) X(reduce, Reduce) X(allreduce, Allreduce)          \
    X(gather, Gather) X(gatherv, Gatherv) X(scatter, Scatter) X(scatterv, Scatterv)        \
    X(allgather, Allgather) X(allgatherv, Allgatherv) X(alltoall, Alltoall)                \
    X(alltoallv, Alltoallv) X(alltoallw, Alltoallw) X(reduce_scatter, Reduce_scatter)      \
    X(reduce_scatter_block, Reduce_scatter_block) X(scan, Scan) X(exscan, Exscan)

/* The member types come from the MPI's own prototypes, so const-ness and MPI_Count
 * differences between Open MPI and MPICH cannot make the two families disagree. */
struct mpi_api {
#define AS_MEMBER(lower, Upper) __typeof__(PMPI_##Upper) *lower;
    ENTRY_POINTS(AS_MEMBER)
#undef AS_MEMBER
};

/* MPI_* resolves to nodecoll when libnodecoll precedes libmpi on the link line (or is
 * preloaded); PMPI_* always reaches the host MPI. */
static const struct mpi_api api_nodecoll = {
#define AS_MPI(lower, Upper) .lower = MPI_##Upper,
    ENTRY_POINTS(AS_MPI)
#undef AS_MPI
};

static const struct mpi_api api_host = {
#define AS_PMPI(lower, Upper) .lower = PMPI_##Upper,
    ENTRY_POINTS(AS_PMPI)
#undef AS_PMPI
};

static int run_barrier(const struct mpi_api *a, const struct call *c)
{
    return a->barrier(c->comm);
}

static int run_bcast(const struct mpi_api *a, const struct call *c)
{
    return a->bcast(c->sbuf, c->count, c->type, c->root, c->comm);
}

static int run_reduce(const struct mpi_api *a, const struct call *c)
{
    return a->reduce(c->sbuf, c->rbuf, c->count, c->type, c->op, c->root, c->comm);
}

static int run_allreduce(const struct mpi_api *a, const struct call *c)
{
    return a->allreduce(c->sbuf, c->rbuf, c->count, c->type, c->op, c->comm);
}

static int run_gather(const struct mpi_api *a, const struct call *c)
{
    return a->gather(c->sbuf, c->count, c->type, c->rbuf, c->count, c->type, c->root, c->comm);
}

static int run_gatherv(const struct mpi_api *a, const struct call *c)
{
    return a->gatherv(c->sbuf, c->count, c->type, c->rbuf, c->counts, c->displs, c->type,
                      c->root, c->comm);
}

static int run_scatter(const struct mpi_api *a, const struct call *c)
{
    return a->scatter(c->sbuf, c->count, c->type, c->rbuf, c->count, c->type, c->root,
                      c->comm);
}

static int run_scatterv(const struct mpi_api *a, const struct call *c)
{
    return a->scatterv(c->sbuf, c->counts, c->displs, c->type, c->rbuf, c->count, c->type,
                       c->root, c->comm);
}

static int run_allgather(const struct mpi_api *a, const struct call *c)
{
    return a->allgather(c->sbuf, c->count, c->type, c->rbuf, c->count, c->type, c->comm);
}

static int run_allgatherv(const struct mpi_api *a, const struct call *c)
{
    return a->allgatherv(c->sbuf, c->count, c->type, c->rbuf, c->counts, c->displs, c->type,
                         c->comm);
}

static int run_alltoall(const struct mpi_api *a, const struct call *c)
{
    return a->alltoall(c->sbuf, c->count, c->type, c->rbuf, c->count, c->type, c->comm);
}

static int run_alltoallv(const struct mpi_api *a, const struct call *c)
{
    return a->alltoallv(c->sbuf, c->counts, c->displs, c->type, c->rbuf, c->counts, c->displs,
                        c->type, c->comm);
}

static int run_alltoallw(const struct mpi_api *a, const struct call *c)
{
    return a->alltoallw(c->sbuf, c->counts, c->bdispls, c->types, c->rbuf, c->counts,
                        c->bdispls, c->types, c->comm);
}

static int run_reduce_scatter(const struct mpi_api *a, const struct call *c)
{
    return a->reduce_scatter(c->sbuf, c->rbuf, c->counts, c->type, c->op, c->comm);
}

static int run_reduce_scatter_block(const struct mpi_api *a, const struct call *c)
{
    return a->reduce_scatter_block(c->sbuf, c->rbuf, c->count, c->type, c->op, c->comm);
}

static int run_scan(const struct mpi_api *a, const struct call *c)
{
    return a->scan(c->sbuf, c->rbuf, c->count, c->type, c->op, c->comm);
}

static int run_exscan(const struct mpi_api *a, const struct call *c)
{
    return a->exscan(c->sbuf, c->rbuf, c->count, c->type, c->op, c->comm);
}

#define RT COLL_ROOTED
#define DF COLL_DEFAULT
#define RD COLL_REDUCES
#define AD COLL_ALLDEP
/* reads / writes: P^2, P, 1 coefficients of n (see docs/benchmark.md for the reasoning).
 * Vector variants use equal counts, so they share the traffic of their plain form. */
static const struct coll table[] = {
    {"barrier", run_barrier, DF | COLL_SIZELESS | AD, BLK_NONE, BLK_NONE, OUT_NONE, {0, 0, 0}, {0, 0, 0}, PAT_UNIFORM},
    {"bcast", run_bcast, DF | RT | COLL_OUT_SEND, BLK_ONE, BLK_NONE, OUT_ALL, {0, 0, 1}, {0, 1, -1}, PAT_UNIFORM},
    {"reduce", run_reduce, DF | RT | RD, BLK_ONE, BLK_ONE, OUT_ROOT, {0, 1, 0}, {0, 0, 1}, PAT_UNIFORM},
    {"allreduce", run_allreduce, DF | RD | AD, BLK_ONE, BLK_ONE, OUT_ALL, {0, 1, 0}, {0, 1, 0}, PAT_UNIFORM},
    {"gather", run_gather, DF | RT, BLK_ONE, BLK_ALL, OUT_ROOT, {0, 1, 0}, {0, 1, 0}, PAT_UNIFORM},
    {"gatherv", run_gatherv, RT, BLK_ONE, BLK_ALL, OUT_ROOT, {0, 1, 0}, {0, 1, 0}, PAT_UNIFORM},
    {"scatter", run_scatter, DF | RT, BLK_ALL, BLK_ONE, OUT_ALL, {0, 1, 0}, {0, 1, 0}, PAT_UNIFORM},
    {"scatterv", run_scatterv, RT, BLK_ALL, BLK_ONE, OUT_ALL, {0, 1, 0}, {0, 1, 0}, PAT_UNIFORM},
    {"allgather", run_allgather, DF | AD, BLK_ONE, BLK_ALL, OUT_ALL, {0, 1, 0}, {1, 0, 0}, PAT_UNIFORM},
    {"allgatherv", run_allgatherv, AD, BLK_ONE, BLK_ALL, OUT_ALL, {0, 1, 0}, {1, 0, 0}, PAT_UNIFORM},
    {"alltoall", run_alltoall, DF | AD, BLK_ALL, BLK_ALL, OUT_ALL, {1, 0, 0}, {1, 0, 0}, PAT_UNIFORM},
    {"alltoallv", run_alltoallv, AD, BLK_ALL, BLK_ALL, OUT_ALL, {1, 0, 0}, {1, 0, 0}, PAT_UNIFORM},
    {"alltoallw", run_alltoallw, AD, BLK_ALL, BLK_ALL, OUT_ALL, {1, 0, 0}, {1, 0, 0}, PAT_UNIFORM},
    /* Seed 001's nonuniform cases (size: the large block / the block per neighbour).  Bounds:
     * every rank writes the large block; a ring rank reads and writes two blocks. */
    {"allgatherv_skewed", run_allgatherv, DF | AD, BLK_ALL, BLK_ALL, OUT_ALL, {0, 1, 0}, {0, 1, 0}, PAT_SKEWED},
    {"alltoallw_ring", run_alltoallw, DF | AD, BLK_ALL, BLK_ALL, OUT_ALL, {0, 2, 0}, {0, 2, 0}, PAT_RING},
    {"reduce_scatter", run_reduce_scatter, RD | AD, BLK_ALL, BLK_ONE, OUT_ALL, {1, 0, 0}, {0, 1, 0}, PAT_UNIFORM},
    {"reduce_scatter_block", run_reduce_scatter_block, DF | RD | AD, BLK_ALL, BLK_ONE, OUT_ALL,
     {1, 0, 0}, {0, 1, 0}, PAT_UNIFORM},
    {"scan", run_scan, RD, BLK_ONE, BLK_ONE, OUT_ALL, {0, 1, 0}, {0, 1, 0}, PAT_UNIFORM},
    {"exscan", run_exscan, RD, BLK_ONE, BLK_ONE, OUT_NOT_FIRST, {0, 1, -1}, {0, 1, -1}, PAT_UNIFORM},
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
    int keep = c->pattern == PAT_UNIFORM ? (int)strlen(c->name) : (int)strcspn(c->name, "_");
    snprintf(out, len, "%.*s", keep, c->name);
}

const struct mpi_api *coll_api(enum variant v)
{
    return v == VAR_NODECOLL ? &api_nodecoll : &api_host;
}

const char *variant_name(enum variant v)
{
    return v == VAR_NODECOLL ? "nodecoll" : "host";
}

size_t coll_blocks(enum blocks b, int nranks)
{
    return b == BLK_NONE ? 0 : b == BLK_ONE ? 1 : (size_t)nranks;
}

double coll_poly(const signed char c[3], int nranks)
{
    double p = nranks;
    return c[0] * p * p + c[1] * p + c[2];
}
