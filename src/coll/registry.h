/* The registry: which algorithm runs each collective (registry.c). */
#ifndef NC_REGISTRY_H
#define NC_REGISTRY_H

#include "engine.h"

/* The algorithm for the call `a` describes, moving `bytes` (as the table counts them): the
 * one a NODECOLL_<COLL>_ALG setting forces if it applies, else the first row of the table
 * that matches and whose algorithm applies.  The same on every rank (settings agreed at
 * setup, sizes fixed by the type signatures). */
const nc_algorithm *nc_registry_select(const nc_comm *c, const nc_args *a, size_t bytes);
/* The same for the node algorithm of a step (the node Bcast inside a call). */
const nc_algorithm *nc_registry_select_step(const nc_comm *c, const nc_args *a, size_t bytes);

#endif
