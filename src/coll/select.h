/* Which algorithm runs: one table for every collective (select.c), overridable per setting. */
#ifndef NC_SELECT_H
#define NC_SELECT_H

#include <stddef.h>

#include "comm.h"

nc_alg_id nc_select(const nc_comm *c, nc_coll_id coll, size_t bytes);

#endif
