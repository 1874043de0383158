/* Every registered algorithm (one file each under src/coll/<family>/), and what they share.
 * Which one runs is decided by the registry (registry.c), the only place selection lives. */
#ifndef NC_ALGORITHMS_H
#define NC_ALGORITHMS_H

#include "engine.h"

extern const nc_algorithm nc_barrier_flat, nc_barrier_tree, nc_barrier_dissemination;

#endif
