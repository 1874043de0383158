/* Reduction kernels: one generic definition per operation, instantiated for every element
 * type it is defined on (ops.c).  No MPI here: the adapter maps MPI ops and datatypes to
 * these ids, and user-defined operations come in as a callback. */
#ifndef NC_OPS_H
#define NC_OPS_H

#include <stddef.h>

#define NC_OPS(X) X(SUM) X(PROD) X(MIN) X(MAX) X(LAND) X(LOR) X(LXOR) X(BAND) X(BOR) X(BXOR) X(MINLOC) X(MAXLOC)

/* Element types by representation; the adapter maps every predefined MPI type it accelerates
 * onto one of these.  FLOG32/FLOG64 are Fortran LOGICALs of 4 and 8 bytes (true and false as
 * the host MPI defines them: nc_fortran_logical_set); REAL_REAL and DOUBLE_DOUBLE are
 * Fortran's MINLOC/MAXLOC pairs, whose index has the value's type (MPI_2REAL,
 * MPI_2DOUBLE_PRECISION). */
#define NC_ELEMS(X)                                                                             \
    X(I8) X(U8) X(I16) X(U16) X(I32) X(U32) X(I64) X(U64) X(F32) X(F64) X(F80) X(C32) X(C64)  \
    X(C80) X(BOOL) X(FLOAT_INT) X(DOUBLE_INT) X(LONG_INT) X(INT_INT) X(SHORT_INT)             \
    X(LONG_DOUBLE_INT) X(FLOG32) X(FLOG64) X(REAL_REAL) X(DOUBLE_DOUBLE)

typedef enum {
#define NC_ENUM_OP(name) NC_OP_##name,
    NC_OPS(NC_ENUM_OP)
#undef NC_ENUM_OP
    NC_OP_COUNT
} nc_op_id;

typedef enum {
#define NC_ENUM_ELEM(name) NC_ELEM_##name,
    NC_ELEMS(NC_ENUM_ELEM)
#undef NC_ENUM_ELEM
    NC_ELEM_COUNT
} nc_elem_id;

/* inout[i] = in[i] op inout[i]: the MPI convention, where `in` holds the lower ranks. */
typedef void (*nc_reduce_fn)(const void *in, void *inout, size_t count, void *ctx);
/* out[i] = lower[i] op upper[i], out overlapping neither input: one pass where a copy and a
 * fold would take two (the large reductions' slices run at memory speed only so). */
typedef void (*nc_reduce_into_fn)(const void *lower, const void *upper, void *out, size_t count);

/* An operation bound to an element type: what the algorithms call. */
typedef struct nc_reduction {
    nc_reduce_fn fn;
    void *ctx;          /* for user-defined operations */
    size_t elem_size;   /* bytes of one element as packed */
    int commutative;
    const void *host;   /* the adapter's op and datatype, for steps through the host MPI */
    nc_reduce_into_fn into; /* a predefined op's three-operand kernel, or NULL (a user op) */
} nc_reduction;

/* The kernel for a predefined op on an element type, or NULL where MPI does not define it. */
nc_reduce_fn nc_kernel(nc_op_id op, nc_elem_id elem);
/* Its three-operand form (NULL where nc_kernel is, and for element types with bytes outside
 * their value, which it would leave as they were in `out`). */
nc_reduce_into_fn nc_kernel_into(nc_op_id op, nc_elem_id elem);
size_t nc_elem_size(nc_elem_id elem);
/* How the host MPI reads and writes Fortran LOGICAL: the value it writes for .TRUE. and for
 * .FALSE., and whether it reads only `true_value` as true (exact) or anything but
 * `false_value`.  Set once, before any FLOG kernel runs (default: 1, 0, not exact). */
void nc_fortran_logical_set(long long true_value, long long false_value, int exact);
const char *nc_op_name(nc_op_id op);
const char *nc_elem_name(nc_elem_id elem);

#endif
