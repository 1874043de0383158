/*
 * The neighbourhood patterns, each on a communicator of its own with the same ranks as
 * MPI_COMM_WORLD (no reordering):
 *
 *   stencil  a 3-D periodic Cartesian grid (MPI_Dims_create) exchanging the halo of a 7-point
 *            stencil: a local box whose x, y and z faces hold `count`, count/2 and count/4
 *            elements (extents 1 : 2 : 4), packed, one block per face and direction.  On few
 *            ranks a dimension of size 1 or 2 makes a rank its own or its peer's neighbour
 *            both ways, as MPI defines it.
 *   graph    a distributed graph (MPI_Dist_graph_create_adjacent) from each rank to rank + 1,
 *            + 2, + 4 and + 8 (modulo P, each once, not itself), with skewed volumes: `count`
 *            to rank + 1, count/16 to the others (nothing at all when that is 0: Balaji et al.'s
 *            irregular pattern with zero-size neighbours).
 */
#include "bench.h"

#include <string.h>

int pattern_is_neighborhood(enum pattern p)
{
    return p == PAT_STENCIL || p == PAT_GRAPH;
}

/* Blocks back to back, in elements and in bytes. */
static void place(const int *counts, int n, int *displs, MPI_Aint *bytes, MPI_Aint size)
{
    int at = 0;
    for (int i = 0; i < n; i++) {
        displs[i] = at;
        bytes[i] = (MPI_Aint)at * size;
        at += counts[i];
    }
}

static void stencil(struct neighbors *nb, int count)
{
    int nranks, dims[3] = {0, 0, 0}, periods[3] = {1, 1, 1};
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    MPI_Dims_create(nranks, 3, dims);
    MPI_Cart_create(MPI_COMM_WORLD, 3, dims, periods, 0, &nb->comm);
    nb->in = nb->out = 6;
    nb->cartesian = 1;
    for (int d = 0; d < 3; d++) MPI_Cart_shift(nb->comm, d, 1, &nb->sources[2 * d], &nb->sources[2 * d + 1]);
    memcpy(nb->dests, nb->sources, sizeof nb->dests);
    /* in-edge k is fed by out-edge k^1 of its neighbour: the same dimension, the same face */
    for (int j = 0; j < 6; j++) nb->counts[j] = nb->rcounts[j] = count >> (j / 2);
}

/* The offsets 1, 2, 4, 8 that reach distinct ranks other than rank itself, in that order. */
static int graph_offsets(int nranks, int *offsets)
{
    int n = 0;
    for (int k = 0; k < 4; k++) {
        int d = (1 << k) % nranks, seen = d == 0;
        for (int i = 0; i < n; i++) seen |= offsets[i] == d;
        if (!seen) offsets[n++] = d;
    }
    return n;
}

static void graph(struct neighbors *nb, int count)
{
    int nranks, rank, offsets[4], *sources = nb->sources, *dests = nb->dests;
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int n = graph_offsets(nranks, offsets);
    for (int i = 0; i < n; i++) {
        dests[i] = (rank + offsets[i]) % nranks;
        sources[i] = (rank - offsets[i] + nranks) % nranks;
        nb->counts[i] = nb->rcounts[i] = i == 0 ? count : count / 16;
    }
    nb->in = nb->out = n;
    /* (through a variable: gcc takes Open MPI's MPI_UNWEIGHTED for an empty array being read) */
    int *volatile unweighted = MPI_UNWEIGHTED;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, n, sources, unweighted, n, dests, unweighted, MPI_INFO_NULL, 0,
                                   &nb->comm);
}

void neighbors_create(struct neighbors *nb, enum pattern p, int count, MPI_Datatype type)
{
    int size;
    memset(nb, 0, sizeof *nb);
    if (p == PAT_STENCIL) stencil(nb, count);
    else graph(nb, count);
    MPI_Type_size(type, &size);
    place(nb->counts, nb->out, nb->displs, nb->adispls, size);
    place(nb->rcounts, nb->in, nb->rdispls, nb->radispls, size);
    for (int i = 0; i < NEIGHBOR_EDGES; i++) nb->types[i] = type;
    /* nodecoll sets a communicator up in its first blocking collective; the nonblocking and
     * persistent calls that may come first here would otherwise go to the host */
    MPI_Barrier(nb->comm);
}

void neighbors_free(struct neighbors *nb)
{
    MPI_Comm_free(&nb->comm);
}

/* How often list[i] appears in list[0 .. i). */
static int occurrence(const int *list, int i)
{
    int m = 0;
    for (int j = 0; j < i; j++) m += list[j] == list[i];
    return m;
}

/* Each edge a message whose tag pairs it as MPI does: on a Cartesian grid out-edge j feeds
 * in-edge j^1 (tag: the sender's edge), in a graph the m-th edge between two ranks feeds the
 * m-th (tag: m). */
int neighbors_oracle(const struct neighbors *nb, const struct call *c)
{
    MPI_Request req[2 * NEIGHBOR_EDGES];
    MPI_Status st[2 * NEIGHBOR_EDGES];
    MPI_Aint lb, extent;
    int n = 0, err = MPI_SUCCESS;
    MPI_Type_get_extent(c->type, &lb, &extent);
    for (int k = 0; k < nb->in && err == MPI_SUCCESS; k++) {
        int tag = nb->cartesian ? k ^ 1 : occurrence(nb->sources, k);
        if (nb->sources[k] != MPI_PROC_NULL)
            err = PMPI_Irecv((char *)c->rbuf + (MPI_Aint)nb->rdispls[k] * extent, nb->rcounts[k], c->type,
                             nb->sources[k], tag, nb->comm, &req[n++]);
    }
    for (int j = 0; j < nb->out && err == MPI_SUCCESS; j++) {
        int tag = nb->cartesian ? j : occurrence(nb->dests, j);
        if (nb->dests[j] != MPI_PROC_NULL)
            err = PMPI_Isend((char *)c->sbuf + (MPI_Aint)nb->displs[j] * extent, nb->counts[j], c->type, nb->dests[j],
                             tag, nb->comm, &req[n++]);
    }
    int waited = PMPI_Waitall(n, req, st);
    return err != MPI_SUCCESS ? err : waited;
}
