/* Which algorithm runs: one table for every collective (select.c), overridable per setting. */
#ifndef NC_SELECT_H
#define NC_SELECT_H

#include <stddef.h>

#include "comm.h"

nc_alg_id nc_select(const nc_comm *c, nc_coll_id coll, size_t bytes);

/* How node leaders spread node regions of `total` bytes in an Allgather(v): ring, recursive
 * doubling or dissemination; `skewed` is seed 001's outlier test on the node volumes. */
nc_alg_id nc_select_spread(const nc_comm *c, size_t total, int skewed);

#endif
