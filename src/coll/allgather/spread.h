/* How node leaders spread the node regions of an Allgather(v) among themselves over the
 * bridge (spread.c): ring, recursive doubling or dissemination, chosen by the registry
 * (nc_registry_spread) when the algorithm is planned. */
#ifndef NC_ALLGATHER_SPREAD_H
#define NC_ALLGATHER_SPREAD_H

#include "../engine.h"

/* Every node's region in one buffer: node k's is [off[k], off[k+1]) of all. */
typedef struct nc_regions {
    char *all;
    size_t *off;
    int nodes;
} nc_regions;

/* A step: the leaders exchange regions until each holds all of them. */
typedef struct nc_spread_step {
    int pc;
    nc_alg_id pattern; /* NC_ALG_RING, NC_ALG_RECURSIVE_DOUBLING or NC_ALG_DISSEMINATION */
    int round;
    const nc_regions *g;
    nc_bridge_req req;
} nc_spread_step;

void nc_spread_setup(nc_spread_step *st, nc_alg_id pattern, const nc_regions *g);
nc_step nc_spread_progress(nc_op *op, nc_spread_step *st);

#endif
