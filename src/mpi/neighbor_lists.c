/* A communicator's virtual topology for the neighbourhood collectives (coll/comm.h,
 * nc_neighbors): read once, when its state is set up, and freed with the state, so a freed
 * communicator's lists go with it and a handle MPI reuses for another communicator starts
 * afresh.  The topology queries are slow (Open MPI's MPI_Cart_shift computes coordinates
 * each time) and never change for a communicator. */
#include "neighbor_lists.h"

#include <stdlib.h>
#include <string.h>

#include "../core/fatal.h"

/* MPI_PROC_NULL as the algorithms spell it. */
static int rank_or_none(int r) { return r == MPI_PROC_NULL ? -1 : r; }

/* One allocation for the lists and what is derived from them (ints all). */
static nc_neighbors *alloc_neighbors(int indegree, int outdegree)
{
    size_t in = (size_t)indegree, out = (size_t)outdegree;
    nc_neighbors *nb = nc_calloc_or_die(1, sizeof *nb + sizeof(int) * (3 * in + 2 * out + 2));
    int *at = (int *)(void *)(nb + 1);
    nb->indegree = indegree;
    nb->outdegree = outdegree;
    nb->in = at;
    nb->in_occurrence = at += in;
    nb->in_match = at += in;
    nb->out = at += in;
    nb->out_previous = at + out;
    return nb;
}

/* A Cartesian grid (degree: twice its dimensions): per dimension the neighbour below, then the
 * one above, both ways. */
static nc_neighbors *read_cartesian(MPI_Comm comm, int degree)
{
    nc_neighbors *nb = alloc_neighbors(degree, degree);
    nb->cartesian = 1;
    for (int d = 0; d < degree / 2; d++) {
        int below, above;
        PMPI_Cart_shift(comm, d, 1, &below, &above);
        nb->in[2 * d] = nb->out[2 * d] = rank_or_none(below);
        nb->in[2 * d + 1] = nb->out[2 * d + 1] = rank_or_none(above);
    }
    return nb;
}

/* MPI_Graph_create: my neighbours are both my sources and my destinations. */
static nc_neighbors *read_graph(MPI_Comm comm, int rank, int n)
{
    nc_neighbors *nb = alloc_neighbors(n, n);
    if (n) PMPI_Graph_neighbors(comm, rank, n, nb->in);
    if (n) memcpy(nb->out, nb->in, sizeof(int) * (size_t)n);
    return nb;
}

/* MPI_Dist_graph_create(_adjacent): weights, if any, are read (the host wants room for them)
 * and ignored. */
static nc_neighbors *read_dist_graph(MPI_Comm comm, int indegree, int outdegree, int weighted)
{
    nc_neighbors *nb = alloc_neighbors(indegree, outdegree);
    int *weights = weighted ? nc_alloc_or_die(sizeof(int) * (size_t)(indegree + outdegree + 1)) : NULL;
    PMPI_Dist_graph_neighbors(comm, indegree, nb->in, weighted ? weights : MPI_UNWEIGHTED, outdegree, nb->out,
                              weighted ? weights + indegree : MPI_UNWEIGHTED);
    free(weights);
    return nb;
}

/* The m-th out-edge of mine towards myself (NC_NO_EDGE: none). */
static int own_out_edge(const nc_neighbors *nb, int me, int m)
{
    for (int j = 0; j < nb->outdegree; j++)
        if (nb->out[j] == me && m-- == 0) return j;
    return NC_NO_EDGE;
}

/* Occurrences, matches known without asking anybody, and each out-edge's predecessor to the
 * same rank (`last`: one int per comm rank, scratch). */
static void derive(nc_neighbors *nb, int me, int *last)
{
    for (int k = 0; k < nb->indegree; k++) {
        int r = nb->in[k] = rank_or_none(nb->in[k]);
        nb->in_occurrence[k] = r < 0 ? 0 : last[r]++;
    }
    for (int k = 0; k < nb->indegree; k++) {
        int r = nb->in[k];
        if (r < 0) nb->in_match[k] = NC_NO_EDGE;
        else if (nb->cartesian) nb->in_match[k] = k ^ 1;
        else nb->in_match[k] = r == me ? own_out_edge(nb, me, nb->in_occurrence[k]) : -1;
    }
    for (int j = 0; j < nb->outdegree; j++) {
        int r = nb->out[j] = rank_or_none(nb->out[j]);
        if (r >= 0) last[r] = -1;
    }
    for (int j = 0; j < nb->outdegree; j++) {
        int r = nb->out[j];
        nb->out_previous[j] = r < 0 ? -1 : last[r];
        if (r >= 0) last[r] = j;
    }
}

int nc_mpi_neighbor_degrees(MPI_Comm comm, int *indegree, int *outdegree, int *weighted)
{
    int kind = MPI_UNDEFINED, n = 0, rank = 0, w = 0;
    *indegree = *outdegree = 0;
    if (PMPI_Topo_test(comm, &kind) != MPI_SUCCESS) kind = MPI_UNDEFINED;
    if (kind == MPI_CART) {
        PMPI_Cartdim_get(comm, &n);
        *indegree = *outdegree = 2 * n;
    } else if (kind == MPI_GRAPH) {
        PMPI_Comm_rank(comm, &rank);
        PMPI_Graph_neighbors_count(comm, rank, &n);
        *indegree = *outdegree = n;
    } else if (kind == MPI_DIST_GRAPH) {
        PMPI_Dist_graph_neighbors_count(comm, indegree, outdegree, &w);
    } else {
        kind = MPI_UNDEFINED;
    }
    if (weighted) *weighted = w;
    return kind;
}

void nc_mpi_neighbor_lists_read(nc_comm *c, MPI_Comm comm)
{
    int in, out, weighted;
    int kind = nc_mpi_neighbor_degrees(comm, &in, &out, &weighted);
    if (kind == MPI_UNDEFINED) return; /* (every rank alike) */
    nc_neighbors *nb = kind == MPI_CART    ? read_cartesian(comm, in)
                       : kind == MPI_GRAPH ? read_graph(comm, c->rank, in)
                                           : read_dist_graph(comm, in, out, weighted);
    int *last = nc_calloc_or_die((size_t)c->size, sizeof(int));
    derive(nb, c->rank, last);
    free(last);
    int mine = nb->indegree > nb->outdegree ? nb->indegree : nb->outdegree;
    PMPI_Allreduce(&mine, &nb->max_degree, 1, MPI_INT, MPI_MAX, comm);
    c->neighbors = nb;
}

void nc_mpi_neighbor_lists_free(nc_comm *c)
{
    free(c->neighbors);
    c->neighbors = NULL;
}
