#include "ops.h"

#include <complex.h>
#include <float.h>
#include <stdbool.h>
#include <stdint.h>

/* Storage types.  The pair types are laid out exactly as MPI's MINLOC/MAXLOC types. */
typedef struct { float v; int i; } nc_float_int;
typedef struct { double v; int i; } nc_double_int;
typedef struct { long v; int i; } nc_long_int;
typedef struct { int v; int i; } nc_int_int;
typedef struct { short v; int i; } nc_short_int;
typedef struct { long double v; int i; } nc_long_double_int;
typedef struct { float v; float i; } nc_real_real;       /* MPI_2REAL */
typedef struct { double v; double i; } nc_double_double; /* MPI_2DOUBLE_PRECISION */

typedef int8_t T_I8;  typedef uint8_t T_U8;  typedef int16_t T_I16; typedef uint16_t T_U16;
typedef int32_t T_I32; typedef uint32_t T_U32; typedef int64_t T_I64; typedef uint64_t T_U64;
typedef float T_F32; typedef double T_F64; typedef long double T_F80;
typedef float _Complex T_C32; typedef double _Complex T_C64; typedef long double _Complex T_C80;
typedef bool T_BOOL;
typedef nc_float_int T_FLOAT_INT; typedef nc_double_int T_DOUBLE_INT; typedef nc_long_int T_LONG_INT;
typedef nc_int_int T_INT_INT; typedef nc_short_int T_SHORT_INT; typedef nc_long_double_int T_LONG_DOUBLE_INT;
typedef nc_real_real T_REAL_REAL; typedef nc_double_double T_DOUBLE_DOUBLE;
typedef int32_t T_FLOG32; typedef int64_t T_FLOG64;

/* Arithmetic type per element: SUM and PROD of integers wrap (two's complement, as every MPI
 * does) instead of overflowing signed arithmetic, which C leaves undefined.  16-bit values
 * are multiplied as unsigned int because uint16_t operands would be promoted to int. */
typedef uint8_t W_I8; typedef uint8_t W_U8; typedef unsigned W_I16; typedef unsigned W_U16;
typedef uint32_t W_I32; typedef uint32_t W_U32; typedef uint64_t W_I64; typedef uint64_t W_U64;
typedef T_F32 W_F32; typedef T_F64 W_F64; typedef T_F80 W_F80;
typedef T_C32 W_C32; typedef T_C64 W_C64; typedef T_C80 W_C80;

/* One expression per operation: a is the incoming value (lower ranks), b the accumulator
 * (higher ranks); W is the arithmetic type of the element. */
#define E_SUM(W, a, b) ((W)(a) + (W)(b))
#define E_PROD(W, a, b) ((W)(a) * (W)(b))
/* (converted back to the element type by the assignment in the kernel) */
#define E_MIN(W, a, b) ((a) < (b) ? (a) : (b))
#define E_MAX(W, a, b) ((a) > (b) ? (a) : (b))
#define E_LAND(W, a, b) ((a) && (b))
#define E_LOR(W, a, b) ((a) || (b))
#define E_LXOR(W, a, b) (!(a) != !(b))
#define E_BAND(W, a, b) ((a) & (b))
#define E_BOR(W, a, b) ((a) | (b))
#define E_BXOR(W, a, b) ((a) ^ (b))
/* MPI: the smaller (larger) value wins; on a tie, the smaller index. */
#define E_MINLOC(W, a, b) ((a).v < (b).v || ((a).v == (b).v && (a).i < (b).i) ? (a) : (b))
#define E_MAXLOC(W, a, b) ((a).v > (b).v || ((a).v == (b).v && (a).i < (b).i) ? (a) : (b))
/* Fortran LOGICAL, as the host MPI reads and writes it (nc_fortran_logical_set). */
static struct {
    long long true_value, false_value;
    int exact;
} flog = {1, 0, 0};
#define FLOG_IS(x) (flog.exact ? (long long)(x) == flog.true_value : (long long)(x) != flog.false_value)
#define FLOG_OF(truth) ((truth) ? flog.true_value : flog.false_value)
#define E_FLOG_LAND(W, a, b) FLOG_OF(FLOG_IS(a) && FLOG_IS(b))
#define E_FLOG_LOR(W, a, b) FLOG_OF(FLOG_IS(a) || FLOG_IS(b))
#define E_FLOG_LXOR(W, a, b) FLOG_OF(FLOG_IS(a) != FLOG_IS(b))

void nc_fortran_logical_set(long long true_value, long long false_value, int exact)
{
    flog.true_value = true_value;
    flog.false_value = false_value;
    flog.exact = exact;
}

/* The pair types only take MINLOC/MAXLOC and the logical types only logical ops, which ignore W. */
#define W_OF(ELEM) W_##ELEM
typedef void W_BOOL, W_FLOAT_INT, W_DOUBLE_INT, W_LONG_INT, W_INT_INT, W_SHORT_INT, W_LONG_DOUBLE_INT, W_REAL_REAL,
    W_DOUBLE_DOUBLE, W_FLOG32, W_FLOG64;

/* The loop is simple enough for the vectorizer (checked with -fopt-info-vec, see
 * docs/design.md).  Callers never pass overlapping buffers, hence restrict: no run-time
 * overlap test in front of the vector loop. */
#define NC_KERNEL(OP, ELEM)                                                                  \
    static void k_##OP##_##ELEM(const void *in, void *inout, size_t n, void *ctx)           \
    {                                                                                        \
        const T_##ELEM *restrict a = in;                                                     \
        T_##ELEM *restrict b = inout;                                                        \
        for (size_t i = 0; i < n; i++) b[i] = E_##OP(W_OF(ELEM), a[i], b[i]);                  \
    }

/* Which types each op is defined on (MPI-4.0 section 6.9.2). */
#define NC_INTEGERS(X, OP) X(OP, I8) X(OP, U8) X(OP, I16) X(OP, U16) X(OP, I32) X(OP, U32) X(OP, I64) X(OP, U64)
#define NC_FLOATS(X, OP) X(OP, F32) X(OP, F64) X(OP, F80)
#define NC_COMPLEX(X, OP) X(OP, C32) X(OP, C64) X(OP, C80)
#define NC_PAIRS(X, OP)                                                                                   \
    X(OP, FLOAT_INT) X(OP, DOUBLE_INT) X(OP, LONG_INT) X(OP, INT_INT) X(OP, SHORT_INT) X(OP, LONG_DOUBLE_INT) \
    X(OP, REAL_REAL) X(OP, DOUBLE_DOUBLE)
/* Fortran LOGICAL takes the logical ops only, in their own form (E_FLOG_<OP>). */
#define NC_FORTRAN_LOGICAL(X, OP) X(FLOG_##OP, FLOG32) X(FLOG_##OP, FLOG64)

#define NC_ARITH(X, OP) NC_INTEGERS(X, OP) NC_FLOATS(X, OP) NC_COMPLEX(X, OP)
#define NC_ORDERED(X, OP) NC_INTEGERS(X, OP) NC_FLOATS(X, OP)
#define NC_LOGICAL(X, OP) NC_INTEGERS(X, OP) X(OP, BOOL)
#define NC_BITWISE(X, OP) NC_INTEGERS(X, OP)

#define NC_DEFINED(X)                                                              \
    NC_ARITH(X, SUM) NC_ARITH(X, PROD) NC_ORDERED(X, MIN) NC_ORDERED(X, MAX)       \
    NC_LOGICAL(X, LAND) NC_LOGICAL(X, LOR) NC_LOGICAL(X, LXOR) NC_BITWISE(X, BAND) \
    NC_BITWISE(X, BOR) NC_BITWISE(X, BXOR) NC_PAIRS(X, MINLOC) NC_PAIRS(X, MAXLOC)                    \
    NC_FORTRAN_LOGICAL(X, LAND) NC_FORTRAN_LOGICAL(X, LOR) NC_FORTRAN_LOGICAL(X, LXOR)

#define NC_KERNEL_INTO(OP, ELEM)                                                                      \
    static void k_into_##OP##_##ELEM(const void *lower, const void *upper, void *out, size_t n)          \
    {                                                                                                 \
        const T_##ELEM *restrict a = lower, *restrict b = upper;                                      \
        T_##ELEM *restrict c = out;                                                                   \
        for (size_t i = 0; i < n; i++) c[i] = E_##OP(W_OF(ELEM), a[i], b[i]);                          \
    }

NC_DEFINED(NC_KERNEL)
NC_DEFINED(NC_KERNEL_INTO)

/* (the Fortran LOGICAL kernels k_FLOG_<OP>_<ELEM> serve op <OP>) */
#define NC_OP_FLOG_LAND NC_OP_LAND
#define NC_OP_FLOG_LOR NC_OP_LOR
#define NC_OP_FLOG_LXOR NC_OP_LXOR
#define NC_TABLE_ENTRY(OP, ELEM) [NC_OP_##OP][NC_ELEM_##ELEM] = k_##OP##_##ELEM,
static const nc_reduce_fn kernels[NC_OP_COUNT][NC_ELEM_COUNT] = {NC_DEFINED(NC_TABLE_ENTRY)};
#define NC_TABLE_ENTRY_INTO(OP, ELEM) [NC_OP_##OP][NC_ELEM_##ELEM] = k_into_##OP##_##ELEM,
static const nc_reduce_into_fn kernels_into[NC_OP_COUNT][NC_ELEM_COUNT] = {NC_DEFINED(NC_TABLE_ENTRY_INTO)};

static const size_t elem_sizes[NC_ELEM_COUNT] = {
#define NC_SIZE_ENTRY(ELEM) [NC_ELEM_##ELEM] = sizeof(T_##ELEM),
    NC_ELEMS(NC_SIZE_ENTRY)
};

static const char *const op_names[] = {
#define NC_OP_NAME(name) #name,
    NC_OPS(NC_OP_NAME)
};
static const char *const elem_names[] = {
#define NC_ELEM_NAME(name) #name,
    NC_ELEMS(NC_ELEM_NAME)
};

nc_reduce_fn nc_kernel(nc_op_id op, nc_elem_id elem)
{
    return op < NC_OP_COUNT && elem < NC_ELEM_COUNT ? kernels[op][elem] : NULL;
}

/* Element types with bytes outside their value: x87's long double (10 bytes of 16) and the
 * pairs whose index leaves a hole.  A kernel stores only values, so a result built by the
 * three-operand kernel in a buffer would keep that buffer's old bytes there; the copy and
 * fold that serve these instead leave an input's bytes, as every other algorithm does (and
 * the host MPIs). */
#define NC_LONG_DOUBLE_PADDED (LDBL_MANT_DIG == 64)
static const bool padded[NC_ELEM_COUNT] = {
    [NC_ELEM_F80] = NC_LONG_DOUBLE_PADDED, [NC_ELEM_C80] = NC_LONG_DOUBLE_PADDED,
    [NC_ELEM_LONG_DOUBLE_INT] = true,
    [NC_ELEM_DOUBLE_INT] = sizeof(T_DOUBLE_INT) > sizeof(double) + sizeof(int),
    [NC_ELEM_LONG_INT] = sizeof(T_LONG_INT) > sizeof(long) + sizeof(int),
    [NC_ELEM_SHORT_INT] = sizeof(T_SHORT_INT) > sizeof(short) + sizeof(int),
};

nc_reduce_into_fn nc_kernel_into(nc_op_id op, nc_elem_id elem)
{
    return op < NC_OP_COUNT && elem < NC_ELEM_COUNT && !padded[elem] ? kernels_into[op][elem] : NULL;
}

size_t nc_elem_size(nc_elem_id elem) { return elem_sizes[elem]; }
const char *nc_op_name(nc_op_id op) { return op_names[op]; }
const char *nc_elem_name(nc_elem_id elem) { return elem_names[elem]; }
