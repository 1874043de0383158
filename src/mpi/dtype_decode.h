/* Committed MPI datatypes as datatype-engine descriptions (src/core/dtype.h). */
#ifndef NC_MPI_DTYPE_DECODE_H
#define NC_MPI_DTYPE_DECODE_H

#include <mpi.h>

#include "../core/dtype.h"

/* The description of a committed datatype, decoded through MPI_Type_get_envelope /
 * MPI_Type_get_contents on first use and cached on the type (an attribute whose delete
 * callback frees it, so a freed and reused handle can never see a stale one).  NULL when
 * the engine cannot describe the type (too deep, too large to probe): the host packs it.
 * The result lives as long as the type; do not free it. */
const nc_dtype *nc_mpi_dtype(MPI_Datatype type);

/* The same, but NULL when decoding needed probing (its result then depends on this
 * process's NODECOLL_DTYPE_PROBE_MAX): for decisions every rank must take alike. */
const nc_dtype *nc_mpi_dtype_unprobed(MPI_Datatype type);

/* The same without the cache: the caller owns (nc_dt_free) the result.  For tests. */
nc_dtype *nc_mpi_dtype_decode(MPI_Datatype type);

void nc_mpi_dtype_release_keyval(void);

/* MPI_Type_get_envelope's combiner (through the large-count form where the MPI has one, which
 * every type answers); -1 on error. */
int nc_mpi_type_combiner(MPI_Datatype type);

/* Whether a type of this combiner is predefined: a named type, or one of the F90 kinds
 * (MPI_Type_create_f90_*), which are predefined in all but name and are never freed. */
int nc_mpi_combiner_predefined(int combiner);

/* The predefined type (the F90 kinds included) a chain of MPI_Type_dup ends in, or `type`
 * itself (any other type): a duplicate of MPI_INT is MPI_INT in all but its handle. */
MPI_Datatype nc_mpi_type_undup(MPI_Datatype type);

#endif
