/* Differential test of the reductions: MPI_Reduce (every root), MPI_Allreduce,
 * MPI_Reduce_scatter_block, MPI_Reduce_scatter, MPI_Scan, MPI_Exscan, in place and not,
 * every predefined op on every predefined C datatype MPI defines it for, a commutative and
 * a non-commutative user-defined op.
 *
 * The oracle is a serial fold written here, independently of nodecoll's kernels: every rank
 * generates every rank's input from the same seed, so it can compute the exact rank-order
 * result (not PMPI_Reduce: Open MPI 4.1.4 sums MPI_INT8_T wrongly).  Integers, MIN/MAX,
 * logical, bitwise and pair results must match exactly; so must PROD, whose inputs are
 * powers of two.  Floating-point SUM of random values must match the rank-order fold
 * x0 + (x1 + (... + x[P-1])) bit for bit under NODECOLL_REPRODUCIBLE=1, and otherwise lie
 * within P * eps * sum |x| of it (any order of P-1 additions errs by at most that).
 * Allreduce results must also be identical on every rank.
 *
 * Bad calls (op/type pairs MPI forbids, negative count, root out of range) must return the
 * same error class as the host MPI's PMPI_ call (except where the host aborts instead:
 * MPICH 4.0.2 on MPI_LAND with MPI_DOUBLE and on a negative count).
 *
 * NODECOLL_TEST_FORTRAN_TYPES=1 runs the matrix on the predefined Fortran datatypes instead
 * (INTEGER, INTEGERn, REAL, DOUBLE PRECISION, REALn, COMPLEX, DOUBLE COMPLEX, COMPLEXn,
 * LOGICAL, 2INTEGER, 2REAL, 2DOUBLE_PRECISION, with MPI-4.0 6.9.2's ops: no logical op on
 * a Fortran integer), called from C, where nodecoll's reductions must serve every one of
 * them.  LOGICAL's oracle is the host's own PMPI_Reduce_local, which defines its true and
 * false; inputs include values other than 0 and 1.
 *
 * Argument: the stride through the case matrix (1: every case; larger to fit the time
 * budget where the host MPI is slow, oversubscribed MPICH). */
#include <complex.h>
#include <float.h>
#include <math.h>
#include <stdbool.h>

#include "common.h"

enum { O_SUM, O_PROD, O_MIN, O_MAX, O_LAND, O_LOR, O_LXOR, O_BAND, O_BOR, O_BXOR, O_MINLOC, O_MAXLOC, O_USER_SUM,
       O_USER_AFFINE, O_COUNT };
static const char *op_names[] = {"sum", "prod", "min", "max", "land", "lor", "lxor", "band", "bor", "bxor",
                                 "minloc", "maxloc", "user-sum", "user-affine"};
static MPI_Op mpi_ops[O_COUNT];

enum { C_COLL_REDUCE, C_ALLREDUCE, C_RSB, C_RS, C_SCAN, C_EXSCAN, C_COLLS };
static const char *coll_names[] = {"reduce", "allreduce", "reduce_scatter_block", "reduce_scatter", "scan", "exscan"};

/* Which ops each group takes (MPI-4.0 6.9.2); the user ops run on one type each. */
enum { G_INT, G_MULTI, G_BYTE, G_FLOAT, G_COMPLEX, G_BOOL, G_PAIR };
#define B(o) (1u << O_##o)
static const unsigned group_ops[] = {
    [G_INT] = B(SUM) | B(PROD) | B(MIN) | B(MAX) | B(LAND) | B(LOR) | B(LXOR) | B(BAND) | B(BOR) | B(BXOR),
    [G_MULTI] = B(SUM) | B(PROD) | B(MIN) | B(MAX) | B(BAND) | B(BOR) | B(BXOR),
    [G_BYTE] = B(BAND) | B(BOR) | B(BXOR),
    [G_FLOAT] = B(SUM) | B(PROD) | B(MIN) | B(MAX),
    [G_COMPLEX] = B(SUM) | B(PROD),
    [G_BOOL] = B(LAND) | B(LOR) | B(LXOR),
    [G_PAIR] = B(MINLOC) | B(MAXLOC),
};

/* ---- the serial oracle, one set of functions per C type ---------------------------------- */

typedef struct ttype {
    const char *name;
    MPI_Datatype type;
    size_t size;
    int group;
    void (*gen)(void *x, int op, uint64_t *rng);
    void (*combine)(int op, const void *in, void *inout); /* inout = in op inout */
    int (*same)(const void *a, const void *b);
    double (*magnitude)(const void *x); /* |x| (floating types), for the SUM bound */
    double (*distance)(const void *a, const void *b);
    double eps;
    int (*gaps_same)(const void *a, const void *b); /* types with gaps: the gap bytes agree */
} ttype;

/* Integers wrap like two's complement: computed in uint64_t, then truncated. */
#define DEF_INT(T, N)                                                                               \
    static void gen_##N(void *x, int op, uint64_t *rng)                                             \
    {                                                                                               \
        uint64_t v = t_rand(rng);                                                                   \
        if (op == O_LAND || op == O_LOR || op == O_LXOR) v = (v % 4 == 0) ? 0 : (v % 3 ? 1 : 7);      \
        T t = (T)v;                                                                                 \
        memcpy(x, &t, sizeof t);                                                                    \
    }                                                                                               \
    static void combine_##N(int op, const void *in, void *inout)                                    \
    {                                                                                               \
        T a, b;                                                                                     \
        memcpy(&a, in, sizeof a);                                                                   \
        memcpy(&b, inout, sizeof b);                                                                \
        switch (op) {                                                                               \
        case O_USER_SUM:                                                                            \
        case O_SUM: b = (T)((uint64_t)a + (uint64_t)b); break;                                      \
        case O_PROD: b = (T)((uint64_t)a * (uint64_t)b); break;                                     \
        case O_MIN: b = a < b ? a : b; break;                                                       \
        case O_MAX: b = a > b ? a : b; break;                                                       \
        case O_LAND: b = a && b; break;                                                             \
        case O_LOR: b = a || b; break;                                                              \
        case O_LXOR: b = !a != !b; break;                                                           \
        case O_BAND: b = a & b; break;                                                              \
        case O_BOR: b = a | b; break;                                                               \
        case O_BXOR: b = a ^ b; break;                                                              \
        }                                                                                           \
        memcpy(inout, &b, sizeof b);                                                                \
    }                                                                                               \
    static int same_##N(const void *a, const void *b) { return !memcmp(a, b, sizeof(T)); }

/* x87's long double holds its value in 10 of its 16 bytes.  Inputs get zeros in the other 6,
 * so a result must have zeros there too: its bytes come from an input, as the host's do,
 * never from what the receive buffer held before (check_padding). */
#define LONG_DOUBLE_PADDED (LDBL_MANT_DIG == 64)
#define HOLDS_LONG_DOUBLE(T) _Generic((T)0, long double: 1, long double _Complex: 1, default: 0)
static void zero_long_double_padding(void *x, size_t size)
{
    for (size_t at = 0; LONG_DOUBLE_PADDED && at < size; at += sizeof(long double))
        memset((char *)x + at + 10, 0, sizeof(long double) - 10);
}

/* PROD inputs are +-2^k so any order of multiplication is exact; MIN/MAX are exact anyway. */
#define DEF_FLOAT(T, N, EPS)                                                                        \
    static void gen_##N(void *x, int op, uint64_t *rng)                                             \
    {                                                                                               \
        uint64_t v = t_rand(rng);                                                                   \
        T t = op == O_PROD ? (T)((v & 1 ? -1 : 1) * ldexp(1.0, (int)(v >> 1) % 5 - 2))              \
                           : (T)((double)(int64_t)v / 9.3e18);                                       \
        memcpy(x, &t, sizeof t);                                                                    \
        if (HOLDS_LONG_DOUBLE(T)) zero_long_double_padding(x, sizeof t);                            \
    }                                                                                               \
    static void combine_##N(int op, const void *in, void *inout)                                    \
    {                                                                                               \
        T a, b;                                                                                     \
        memcpy(&a, in, sizeof a);                                                                   \
        memcpy(&b, inout, sizeof b);                                                                \
        b = op == O_SUM ? a + b : op == O_PROD ? a * b : op == O_MIN ? (a < b ? a : b) : (a > b ? a : b); \
        memcpy(inout, &b, sizeof b);                                                                \
    }                                                                                               \
    static int same_##N(const void *a, const void *b)                                               \
    {                                                                                               \
        T x, y;                                                                                     \
        memcpy(&x, a, sizeof x);                                                                    \
        memcpy(&y, b, sizeof y);                                                                    \
        return x == y;                                                                              \
    }                                                                                               \
    static double magnitude_##N(const void *a)                                                      \
    {                                                                                               \
        T x;                                                                                        \
        memcpy(&x, a, sizeof x);                                                                    \
        return fabs((double)x);                                                                     \
    }                                                                                               \
    static double distance_##N(const void *a, const void *b)                                        \
    {                                                                                               \
        T x, y;                                                                                     \
        memcpy(&x, a, sizeof x);                                                                    \
        memcpy(&y, b, sizeof y);                                                                    \
        return fabs((double)(x - y));                                                               \
    }

/* PROD inputs are small Gaussian integers: every product is exact. */
#define DEF_COMPLEX(T, R, N)                                                                        \
    static void gen_##N(void *x, int op, uint64_t *rng)                                             \
    {                                                                                               \
        uint64_t v = t_rand(rng);                                                                   \
        R re = op == O_PROD ? (R)((int)(v % 4) - 1) : (R)((double)(int64_t)v / 9.3e18);              \
        R im = op == O_PROD ? (R)((int)(v / 4 % 3) - 1) : (R)((double)(int64_t)t_rand(rng) / 9.3e18); \
        T t = re + im * (T)I;                                                                       \
        memcpy(x, &t, sizeof t);                                                                    \
        if (HOLDS_LONG_DOUBLE(T)) zero_long_double_padding(x, sizeof t);                            \
    }                                                                                               \
    static void combine_##N(int op, const void *in, void *inout)                                    \
    {                                                                                               \
        T a, b;                                                                                     \
        memcpy(&a, in, sizeof a);                                                                   \
        memcpy(&b, inout, sizeof b);                                                                \
        b = op == O_SUM ? a + b : a * b;                                                            \
        memcpy(inout, &b, sizeof b);                                                                \
    }                                                                                               \
    static int same_##N(const void *a, const void *b)                                               \
    {                                                                                               \
        T x, y;                                                                                     \
        memcpy(&x, a, sizeof x);                                                                    \
        memcpy(&y, b, sizeof y);                                                                    \
        return x == y;                                                                              \
    }                                                                                               \
    static double magnitude_##N(const void *a)                                                      \
    {                                                                                               \
        T x;                                                                                        \
        memcpy(&x, a, sizeof x);                                                                    \
        return fabs((double)creal(x)) + fabs((double)cimag(x));                                     \
    }                                                                                               \
    static double distance_##N(const void *a, const void *b)                                        \
    {                                                                                               \
        T x, y;                                                                                     \
        memcpy(&x, a, sizeof x);                                                                    \
        memcpy(&y, b, sizeof y);                                                                    \
        return fabs((double)creal(x - y)) + fabs((double)cimag(x - y));                             \
    }

/* MINLOC/MAXLOC on a pair_N {v, i}: the lower index wins a tie. */
#define DEF_PAIR_OPS(N)                                                                             \
    static void combine_##N(int op, const void *in, void *inout)                                    \
    {                                                                                               \
        pair_##N a, b;                                                                              \
        memcpy(&a, in, sizeof a);                                                                   \
        memcpy(&b, inout, sizeof b);                                                                \
        int a_wins = op == O_MINLOC ? a.v < b.v : a.v > b.v;                                        \
        if (a_wins || (a.v == b.v && a.i < b.i)) b = a;                                             \
        memcpy(inout, &b, sizeof b);                                                                \
    }                                                                                               \
    static int same_##N(const void *a, const void *b)                                               \
    {                                                                                               \
        pair_##N x, y;                                                                              \
        memcpy(&x, a, sizeof x);                                                                    \
        memcpy(&y, b, sizeof y);                                                                    \
        return x.v == y.v && x.i == y.i;                                                            \
    }

/* Values from a small range so ties exercise the lower-index rule. */
#define DEF_PAIR(V, N)                                                                              \
    typedef struct { V v; int i; } pair_##N;                                                        \
    static void gen_##N(void *x, int op, uint64_t *rng)                                             \
    {                                                                                               \
        pair_##N p;                                                                                 \
        memset(&p, 0, sizeof p);                                                                    \
        p.v = (V)(t_rand(rng) % 5);                                                                 \
        p.i = (int)(t_rand(rng) % 1000);                                                            \
        memcpy(x, &p, sizeof p);                                                                    \
    }                                                                                               \
    DEF_PAIR_OPS(N)

DEF_INT(signed char, schar) DEF_INT(unsigned char, uchar) DEF_INT(short, short) DEF_INT(unsigned short, ushort)
DEF_INT(int, int) DEF_INT(unsigned, uint) DEF_INT(long, long) DEF_INT(unsigned long, ulong)
DEF_INT(long long, llong) DEF_INT(unsigned long long, ullong) DEF_INT(int8_t, i8) DEF_INT(uint8_t, u8)
DEF_INT(int16_t, i16) DEF_INT(uint16_t, u16) DEF_INT(int32_t, i32) DEF_INT(uint32_t, u32) DEF_INT(int64_t, i64)
DEF_INT(uint64_t, u64) DEF_INT(MPI_Aint, aint) DEF_INT(MPI_Offset, offset) DEF_INT(MPI_Count, count)
DEF_FLOAT(float, float, FLT_EPSILON) DEF_FLOAT(double, double, DBL_EPSILON) DEF_FLOAT(long double, ldouble, LDBL_EPSILON)
DEF_COMPLEX(float _Complex, float, cfloat) DEF_COMPLEX(double _Complex, double, cdouble)
DEF_COMPLEX(long double _Complex, long double, cldouble)
DEF_PAIR(float, float_int) DEF_PAIR(double, double_int) DEF_PAIR(long, long_int) DEF_PAIR(int, int_int)
DEF_PAIR(short, short_int) DEF_PAIR(long double, ldouble_int)

/* MPI_C_BOOL: logical ops on 0/1 bytes; MPI_BYTE is bitwise on unsigned char. */
static void gen_bool(void *x, int op, uint64_t *rng)
{
    bool b = t_rand(rng) % 3 != 0;
    memcpy(x, &b, 1);
}
#define combine_bool combine_uchar
#define same_bool same_uchar
#define gen_byte gen_uchar
#define combine_byte combine_uchar
#define same_byte same_uchar

#define TI(mpi, N, T, G) {#mpi, 0, sizeof(T), G, gen_##N, combine_##N, same_##N, NULL, NULL, 0, NULL}
#define TF(mpi, N, T, G, EPS) {#mpi, 0, sizeof(T), G, gen_##N, combine_##N, same_##N, magnitude_##N, distance_##N, EPS, NULL}
static ttype types[] = {
    TI(MPI_SIGNED_CHAR, schar, signed char, G_INT), TI(MPI_UNSIGNED_CHAR, uchar, unsigned char, G_INT),
    TI(MPI_SHORT, short, short, G_INT), TI(MPI_UNSIGNED_SHORT, ushort, unsigned short, G_INT),
    TI(MPI_INT, int, int, G_INT), TI(MPI_UNSIGNED, uint, unsigned, G_INT), TI(MPI_LONG, long, long, G_INT),
    TI(MPI_UNSIGNED_LONG, ulong, unsigned long, G_INT), TI(MPI_LONG_LONG, llong, long long, G_INT),
    TI(MPI_UNSIGNED_LONG_LONG, ullong, unsigned long long, G_INT), TI(MPI_INT8_T, i8, int8_t, G_INT),
    TI(MPI_UINT8_T, u8, uint8_t, G_INT), TI(MPI_INT16_T, i16, int16_t, G_INT), TI(MPI_UINT16_T, u16, uint16_t, G_INT),
    TI(MPI_INT32_T, i32, int32_t, G_INT), TI(MPI_UINT32_T, u32, uint32_t, G_INT), TI(MPI_INT64_T, i64, int64_t, G_INT),
    TI(MPI_UINT64_T, u64, uint64_t, G_INT), TI(MPI_AINT, aint, MPI_Aint, G_MULTI),
    TI(MPI_OFFSET, offset, MPI_Offset, G_MULTI), TI(MPI_COUNT, count, MPI_Count, G_MULTI),
    TI(MPI_BYTE, byte, unsigned char, G_BYTE), TI(MPI_C_BOOL, bool, bool, G_BOOL),
    TF(MPI_FLOAT, float, float, G_FLOAT, FLT_EPSILON), TF(MPI_DOUBLE, double, double, G_FLOAT, DBL_EPSILON),
    TF(MPI_LONG_DOUBLE, ldouble, long double, G_FLOAT, LDBL_EPSILON),
    TF(MPI_C_FLOAT_COMPLEX, cfloat, float _Complex, G_COMPLEX, FLT_EPSILON),
    TF(MPI_C_DOUBLE_COMPLEX, cdouble, double _Complex, G_COMPLEX, DBL_EPSILON),
    TF(MPI_C_LONG_DOUBLE_COMPLEX, cldouble, long double _Complex, G_COMPLEX, LDBL_EPSILON),
    TI(MPI_FLOAT_INT, float_int, pair_float_int, G_PAIR), TI(MPI_DOUBLE_INT, double_int, pair_double_int, G_PAIR),
    TI(MPI_LONG_INT, long_int, pair_long_int, G_PAIR), TI(MPI_2INT, int_int, pair_int_int, G_PAIR),
    TI(MPI_SHORT_INT, short_int, pair_short_int, G_PAIR),
    TI(MPI_LONG_DOUBLE_INT, ldouble_int, pair_ldouble_int, G_PAIR),
};
enum { T_INT_INDEX = 4 };

/* Fortran's pairs: the index has the value's type. */
#define DEF_FPAIR(V, N)                                                                             \
    typedef struct { V v; V i; } pair_##N;                                                          \
    static void gen_##N(void *x, int op, uint64_t *rng)                                             \
    {                                                                                               \
        pair_##N p = {(V)(t_rand(rng) % 5), (V)(t_rand(rng) % 1000)};                               \
        memcpy(x, &p, sizeof p);                                                                    \
    }                                                                                               \
    DEF_PAIR_OPS(N)
DEF_FPAIR(float, real_real) DEF_FPAIR(double, double_double)

/* LOGICAL: false, true and other values the host reads as something; the host itself
 * combines them in the oracle. */
static void gen_logical(void *x, int op, uint64_t *rng)
{
    static const int32_t values[] = {0, 0, 0, 1, 1, 1, 2, -1};
    int32_t v = values[t_rand(rng) % 8];
    memcpy(x, &v, sizeof v);
}
static void combine_logical(int op, const void *in, void *inout)
{
    PMPI_Reduce_local(in, inout, 1, MPI_LOGICAL, mpi_ops[op]);
}
#define same_logical same_i32

static ttype ftypes[] = {
    TI(MPI_INTEGER, i32, int32_t, G_MULTI), TI(MPI_INTEGER1, i8, int8_t, G_MULTI),
    TI(MPI_INTEGER2, i16, int16_t, G_MULTI), TI(MPI_INTEGER4, i32, int32_t, G_MULTI),
    TI(MPI_INTEGER8, i64, int64_t, G_MULTI), TF(MPI_REAL, float, float, G_FLOAT, FLT_EPSILON),
    TF(MPI_DOUBLE_PRECISION, double, double, G_FLOAT, DBL_EPSILON), TF(MPI_REAL4, float, float, G_FLOAT, FLT_EPSILON),
    TF(MPI_REAL8, double, double, G_FLOAT, DBL_EPSILON),
    TF(MPI_COMPLEX, cfloat, float _Complex, G_COMPLEX, FLT_EPSILON),
    TF(MPI_DOUBLE_COMPLEX, cdouble, double _Complex, G_COMPLEX, DBL_EPSILON),
    TF(MPI_COMPLEX8, cfloat, float _Complex, G_COMPLEX, FLT_EPSILON),
    TF(MPI_COMPLEX16, cdouble, double _Complex, G_COMPLEX, DBL_EPSILON), TI(MPI_LOGICAL, logical, int32_t, G_BOOL),
    TI(MPI_2INTEGER, int_int, pair_int_int, G_PAIR), TI(MPI_2REAL, real_real, pair_real_real, G_PAIR),
    TI(MPI_2DOUBLE_PRECISION, double_double, pair_double_double, G_PAIR),
};

/* The types the matrix runs on (C's, or with NODECOLL_TEST_FORTRAN_TYPES Fortran's). */
static ttype *matrix_types = types;
static int matrix_ntypes = (int)(sizeof types / sizeof types[0]);

static void set_handles(void)
{
    MPI_Datatype h[] = {MPI_SIGNED_CHAR, MPI_UNSIGNED_CHAR, MPI_SHORT, MPI_UNSIGNED_SHORT, MPI_INT, MPI_UNSIGNED,
                        MPI_LONG, MPI_UNSIGNED_LONG, MPI_LONG_LONG, MPI_UNSIGNED_LONG_LONG, MPI_INT8_T, MPI_UINT8_T,
                        MPI_INT16_T, MPI_UINT16_T, MPI_INT32_T, MPI_UINT32_T, MPI_INT64_T, MPI_UINT64_T, MPI_AINT,
                        MPI_OFFSET, MPI_COUNT, MPI_BYTE, MPI_C_BOOL, MPI_FLOAT, MPI_DOUBLE, MPI_LONG_DOUBLE,
                        MPI_C_FLOAT_COMPLEX, MPI_C_DOUBLE_COMPLEX, MPI_C_LONG_DOUBLE_COMPLEX, MPI_FLOAT_INT,
                        MPI_DOUBLE_INT, MPI_LONG_INT, MPI_2INT, MPI_SHORT_INT, MPI_LONG_DOUBLE_INT};
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) types[t].type = h[t];
    MPI_Datatype f[] = {MPI_INTEGER,   MPI_INTEGER1, MPI_INTEGER2,       MPI_INTEGER4,   MPI_INTEGER8, MPI_REAL,
                        MPI_DOUBLE_PRECISION, MPI_REAL4, MPI_REAL8, MPI_COMPLEX, MPI_DOUBLE_COMPLEX, MPI_COMPLEX8,
                        MPI_COMPLEX16, MPI_LOGICAL, MPI_2INTEGER, MPI_2REAL, MPI_2DOUBLE_PRECISION};
    _Static_assert(sizeof f / sizeof f[0] == sizeof ftypes / sizeof ftypes[0], "one handle per Fortran type");
    for (size_t t = 0; t < sizeof ftypes / sizeof ftypes[0]; t++) ftypes[t].type = f[t];
}

/* ---- user-defined ops ---------------------------------------------------------------------- */

static void user_sum(void *in, void *inout, int *len, MPI_Datatype *type)
{
    for (int i = 0; i < *len; i++) ((int *)inout)[i] = (int)((unsigned)((int *)inout)[i] + (unsigned)((int *)in)[i]);
}

/* An MPI_2INT element (a, b) is the map x -> a*x + b (mod 2^32); in op inout = in o inout,
 * composition: associative, not commutative.  ((a 0),(b 1)) is its 2x2 matrix. */
static void affine_compose(const int *u, int *v)
{
    uint32_t a = (uint32_t)u[0] * (uint32_t)v[0], b = (uint32_t)u[0] * (uint32_t)v[1] + (uint32_t)u[1];
    v[0] = (int)a;
    v[1] = (int)b;
}

/* (a, b) pairs back to back, or in the gapped layout (GAPPED_AFFINE) of the same pairs. */
static MPI_Datatype gapped_affine;
enum { GAPPED_STRIDE = 4, GAPPED_B = 2 }; /* in ints: a at 0, b at 8 bytes, extent 16 */

static void user_affine(void *in, void *inout, int *len, MPI_Datatype *type)
{
    int gapped = *type == gapped_affine, stride = gapped ? GAPPED_STRIDE : 2, b = gapped ? GAPPED_B : 1;
    int *x = in, *y = inout;
    for (int i = 0; i < *len; i++) {
        int u[2] = {x[stride * i], x[stride * i + b]}, v[2] = {y[stride * i], y[stride * i + b]};
        affine_compose(u, v);
        y[stride * i] = v[0];
        y[stride * i + b] = v[1];
    }
}

static void gen_affine(void *x, int op, uint64_t *rng)
{
    int p[2] = {(int)(t_rand(rng) | 1), (int)t_rand(rng)};
    memcpy(x, p, sizeof p);
}

static void combine_affine(int op, const void *in, void *inout)
{
    int u[2], v[2];
    memcpy(u, in, sizeof u);
    memcpy(v, inout, sizeof v);
    affine_compose(u, v);
    memcpy(inout, v, sizeof v);
}

static ttype affine_type = {"MPI_2INT(affine)", 0, 8, G_PAIR, gen_affine, combine_affine, same_int_int, NULL, NULL, 0, NULL};
/* The same pairs as a derived datatype without gaps (contiguous(2, MPI_INT)). */
static ttype derived_affine_type = {"contiguous(2,int)(affine)", 0, 8, G_PAIR, gen_affine, combine_affine,
                                    same_int_int, NULL, NULL, 0, NULL};

/* The pairs with gaps: resized(vector(2, 1, 2, int), 0, 16), so a at 0, b at 8 and gaps at
 * 4 and 12.  Inputs carry random gap bytes; the call must not copy them into the result. */
static void gen_affine_gapped(void *x, int op, uint64_t *rng)
{
    int e[GAPPED_STRIDE] = {(int)(t_rand(rng) | 1), (int)t_rand(rng), (int)t_rand(rng), (int)t_rand(rng)};
    memcpy(x, e, sizeof e);
}

static void combine_affine_gapped(int op, const void *in, void *inout)
{
    int u[GAPPED_STRIDE], v[GAPPED_STRIDE];
    memcpy(u, in, sizeof u);
    memcpy(v, inout, sizeof v);
    int pu[2] = {u[0], u[GAPPED_B]}, pv[2] = {v[0], v[GAPPED_B]};
    affine_compose(pu, pv);
    v[0] = pv[0];
    v[GAPPED_B] = pv[1];
    memcpy(inout, v, sizeof v);
}

static int same_affine_gapped(const void *a, const void *b)
{
    const char *x = a, *y = b;
    return !memcmp(x, y, 4) && !memcmp(x + 8, y + 8, 4);
}

static int gaps_affine_gapped(const void *a, const void *b)
{
    const char *x = a, *y = b;
    return !memcmp(x + 4, y + 4, 4) && !memcmp(x + 12, y + 12, 4);
}

static ttype gapped_affine_type = {"resized(vector(2,1,2,int),16)(affine)", 0, 16, G_PAIR, gen_affine_gapped,
                                   combine_affine_gapped, same_affine_gapped, NULL, NULL, 0, gaps_affine_gapped};

/* ---- one call ---------------------------------------------------------------------------- */

typedef struct rcase {
    int coll, op, root, in_place;
    const ttype *t;
    size_t count; /* elements per rank's block for the scatter forms, else of the vector */
    uint64_t seed;
} rcase;

static int reproducible;

/* Rank q's input for the case (count elements). */
static void make_input(const rcase *c, int q, char *x, size_t count)
{
    uint64_t rng = c->seed * 1000003u + (uint64_t)q;
    for (size_t i = 0; i < count; i++) c->t->gen(x + i * c->t->size, c->op, &rng);
}

/* Per-element tolerance of a floating-point SUM: zero when reproducible. */
static double sum_bound(const rcase *c, char *const *inputs, int size, size_t i)
{
    if (reproducible || c->op != O_SUM || !c->t->magnitude) return 0;
    double s = 0;
    for (int q = 0; q < size; q++) s += c->t->magnitude(inputs[q] + i * c->t->size);
    return s * c->t->eps * size;
}

static void check_element(const rcase *c, const char *got, const char *want, double bound, size_t i,
                          const char *comm_name)
{
    int ok = bound > 0 ? c->t->distance(got, want) <= bound : c->t->same(got, want);
    if (!ok && t_failures < 20)
        t_fail("%s: %s %s %s count %zu root %d%s: element %zu differs", comm_name, coll_names[c->coll],
               op_names[c->op], c->t->name, c->count, c->root, c->in_place ? " in place" : "", i);
    else if (!ok)
        t_failures++;
}

/* A result of long doubles has zeros outside their values, as its inputs (above). */
static void check_padding(const rcase *c, const char *got, size_t n, const char *comm_name)
{
    int long_doubles = (c->t->group == G_FLOAT && c->t->size == sizeof(long double)) ||
                       (c->t->group == G_COMPLEX && c->t->size == sizeof(long double _Complex));
    if (!LONG_DOUBLE_PADDED || !long_doubles) return;
    for (size_t at = 0; at < n * c->t->size; at += sizeof(long double))
        for (size_t b = 10; b < sizeof(long double); b++)
            if (got[at + b]) {
                t_fail("%s: %s %s %s count %zu root %d%s: element %zu has byte %zu 0x%02x outside its value, not an "
                       "input's 0", comm_name, coll_names[c->coll], op_names[c->op], c->t->name, c->count, c->root,
                       c->in_place ? " in place" : "", at / c->t->size, b, (unsigned)(unsigned char)got[at + b]);
                return;
            }
}

static int call(const rcase *c, MPI_Comm comm, const void *send, void *recv, const int *counts)
{
    MPI_Datatype type = c->t->type;
    MPI_Op op = mpi_ops[c->op];
    int n = (int)c->count;
    switch (c->coll) {
    case C_COLL_REDUCE: return MPI_Reduce(send, recv, n, type, op, c->root, comm);
    case C_ALLREDUCE: return MPI_Allreduce(send, recv, n, type, op, comm);
    case C_RSB: return MPI_Reduce_scatter_block(send, recv, n, type, op, comm);
    case C_RS: return MPI_Reduce_scatter(send, recv, counts, type, op, comm);
    case C_SCAN: return MPI_Scan(send, recv, n, type, op, comm);
    default: return MPI_Exscan(send, recv, n, type, op, comm);
    }
}

static void run_case(MPI_Comm comm, const char *comm_name, const rcase *c)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    size_t es = c->t->size;
    int scatter = c->coll == C_RSB || c->coll == C_RS;
    int *counts = malloc(sizeof(int) * (size_t)size);
    size_t total = 0, my_first = 0;
    for (int q = 0; q < size; q++) {
        counts[q] = (int)(c->coll == C_RS ? (c->count + (size_t)q * 7) % (c->count + 3) : c->count);
        if (q == rank) my_first = total;
        total += scatter ? (size_t)counts[q] : 0;
    }
    if (!scatter) total = c->count;
    size_t mine = scatter ? (size_t)counts[rank] : c->count;
    char **inputs = malloc(sizeof(char *) * (size_t)size);
    for (int q = 0; q < size; q++) {
        inputs[q] = malloc(total * es + 1);
        make_input(c, q, inputs[q], total);
    }
    /* The oracle: fold in rank order, from the highest rank down (Scan: up to mine). */
    char *want = malloc(total * es + 1);
    int last = c->coll == C_SCAN ? rank : c->coll == C_EXSCAN ? rank - 1 : size - 1;
    if (c->coll == C_SCAN || c->coll == C_EXSCAN) {
        if (last >= 0) memcpy(want, inputs[0], total * es);
        for (int q = 1; q <= last; q++)
            for (size_t i = 0; i < total; i++) {
                char tmp[64];
                memcpy(tmp, inputs[q] + i * es, es);
                c->t->combine(c->op, want + i * es, tmp);
                memcpy(want + i * es, tmp, es);
            }
    } else {
        memcpy(want, inputs[size - 1], total * es);
        for (int q = size - 2; q >= 0; q--)
            for (size_t i = 0; i < total; i++) c->t->combine(c->op, inputs[q] + i * es, want + i * es);
    }
    /* The call: in place, the input sits in recvbuf. */
    size_t recv_elems = c->in_place ? total : mine;
    char *recv = malloc(recv_elems * es + 1);
    memset(recv, 0x5a, recv_elems * es + 1);
    int receives = c->coll != C_COLL_REDUCE || rank == c->root;
    int in_place = c->in_place && receives;
    if (in_place) memcpy(recv, inputs[rank], total * es);
    char *before = malloc(recv_elems * es + 1);
    memcpy(before, recv, recv_elems * es + 1);
    uint64_t fallbacks = nodecoll_stat_calls(coll_names[c->coll], "pmpi:*");
    int err = call(c, comm, in_place ? MPI_IN_PLACE : inputs[rank], recv, counts);
    T_CHECK(err == MPI_SUCCESS, "%s: %s returned %d", comm_name, coll_names[c->coll], err);
    /* (mixed settings: a communicator whose rank 0 packs with the host sends gapped user-op
     * types to the host on every rank, as it should) */
    T_CHECK(size == 1 || getenv("NODECOLL_TEST_MIXED_ENGINE") || nodecoll_stat_calls(coll_names[c->coll], "pmpi:*") == fallbacks,
            "%s: %s %s %s fell back to the host MPI", comm_name, coll_names[c->coll], op_names[c->op], c->t->name);
    T_CHECK((unsigned char)recv[recv_elems * es] == 0x5a, "%s: %s %s %s count %zu wrote past the receive buffer",
            comm_name, coll_names[c->coll], op_names[c->op], c->t->name, c->count);
    T_CHECK(receives || !memcmp(recv, before, recv_elems * es),
            "%s: %s %s %s count %zu wrote into a non-root's receive buffer", comm_name, coll_names[c->coll],
            op_names[c->op], c->t->name, c->count);
    int defined = receives && !(c->coll == C_EXSCAN && rank == 0);
    size_t first = scatter ? my_first : 0;
    for (size_t i = 0; defined && i < mine; i++)
        check_element(c, recv + i * es, want + (first + i) * es, sum_bound(c, inputs, size, first + i), first + i,
                      comm_name);
    if (defined) check_padding(c, recv, mine, comm_name);
    for (size_t i = 0; c->t->gaps_same && i < recv_elems; i++)
        if (!c->t->gaps_same(recv + i * es, before + i * es)) {
            t_fail("%s: %s %s %s count %zu: a gap of element %zu was written", comm_name, coll_names[c->coll],
                   op_names[c->op], c->t->name, c->count, i);
            break;
        }
    free(before);
    /* Allreduce: the same bits everywhere (compare with rank 0's). */
    if (c->coll == C_ALLREDUCE && c->count) {
        char *zero = malloc(c->count * es);
        memcpy(zero, recv, c->count * es);
        PMPI_Bcast(zero, (int)(c->count * es), MPI_BYTE, 0, comm);
        for (size_t i = 0; i < c->count; i++)
            if (!c->t->same(zero + i * es, recv + i * es)) {
                t_fail("%s: allreduce %s %s: element %zu differs from rank 0's", comm_name, op_names[c->op],
                       c->t->name, i);
                break;
            }
        free(zero);
    }
    for (int q = 0; q < size; q++) free(inputs[q]);
    free(inputs);
    free(want);
    free(recv);
    free(counts);
}

static size_t random_count(uint64_t *rng)
{
    switch (t_rand(rng) % 8) {
    case 0: return t_rand(rng) % 3;
    case 1: case 2: case 3: return t_rand(rng) % 16;
    case 4: case 5: return t_rand(rng) % 300;
    case 6: return t_rand(rng) % 5000;
    default: return t_rand(rng) % 40000;
    }
}

/* Every op on every type it is defined for, each collective, random counts, roots, in place. */
static void run_matrix(MPI_Comm comm, const char *comm_name, uint64_t seed, int stride)
{
    int size;
    MPI_Comm_size(comm, &size);
    uint64_t rng = seed;
    for (int t = 0; t < matrix_ntypes; t++)
        for (int op = 0; op <= O_MAXLOC; op++) {
            if (!(group_ops[matrix_types[t].group] & (1u << op))) continue;
            for (int coll = 0; coll < C_COLLS; coll++) {
                if (t_rand(&rng) % (uint64_t)stride) continue; /* a random 1/stride of the cases */
                rcase c = {coll, op, (int)(t_rand(&rng) % (uint64_t)size), (int)(t_rand(&rng) % 3 == 0), &matrix_types[t],
                           random_count(&rng), t_rand(&rng)};
                if (coll == C_RSB || coll == C_RS) c.count /= (size_t)size;
                run_case(comm, comm_name, &c);
            }
        }
}

/* User ops (commutative sum on MPI_INT, non-commutative composition on MPI_2INT, on a
 * derived pair type and on the same pairs with gaps): every collective, every root, sizes across the inline / ring /
 * single-copy thresholds. */
static void run_user_ops(MPI_Comm comm, const char *comm_name, uint64_t seed, int stride)
{
    int size;
    MPI_Comm_size(comm, &size);
    static const size_t counts[] = {1, 7, 15, 100, 5000, 40000};
    uint64_t rng = seed;
    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++)
        for (int coll = 0; coll < C_COLLS; coll++)
            for (int root = 0; root < (coll == C_COLL_REDUCE ? size : 1); root++)
                for (int u = 0; u < 4; u++) {
                    if (t_rand(&rng) % (uint64_t)stride) continue;
                    ttype *type = u == 3 ? &gapped_affine_type : u == 2 ? &derived_affine_type
                                : u ? &affine_type : &types[T_INT_INDEX];
                    rcase c = {coll, u ? O_USER_AFFINE : O_USER_SUM, root, (int)(t_rand(&rng) % 2), type, counts[k],
                               t_rand(&rng)};
                    if (coll == C_RSB || coll == C_RS) c.count = c.count / (size_t)size + 1;
                    run_case(comm, comm_name, &c);
                }
}

/* Large vectors: the single-copy slice algorithm with several chunks per slice. */
static void run_large(MPI_Comm comm, const char *comm_name)
{
    int size;
    MPI_Comm_size(comm, &size);
    rcase big[] = {
        {C_ALLREDUCE, O_SUM, 0, 0, &types[24], (size_t)t_scale(1 << 20) + 3, 11},
        {C_COLL_REDUCE, O_MAX, size - 1, 1, &types[4], (size_t)t_scale(1 << 20) + 1, 12},
        {C_RSB, O_SUM, 0, 1, &types[23], (size_t)t_scale(1 << 18), 13},
        {C_ALLREDUCE, O_USER_AFFINE, 0, 1, &affine_type, (size_t)t_scale(300000), 14},
    };
    for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) run_case(comm, comm_name, &big[i]);
}

/* ---- bad calls --------------------------------------------------------------------------- */

static int error_class(int err)
{
    int cls = err;
    if (err != MPI_SUCCESS) MPI_Error_class(err, &cls);
    return cls;
}

static void run_errors(MPI_Comm comm)
{
    int size, in[8] = {0}, out[8] = {0};
    double din[8] = {0}, dout[8] = {0};
    MPI_Comm_size(comm, &size);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    struct bad {
        const char *what;
        int (*reduce)(const void *, void *, int, MPI_Datatype, MPI_Op, int, MPI_Comm);
        int (*allreduce)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm);
    } api[2] = {{"PMPI", PMPI_Reduce, PMPI_Allreduce}, {"MPI", MPI_Reduce, MPI_Allreduce}};
    enum { SUM_DOUBLE_INT, BAND_FLOAT, LAND_DOUBLE, MINLOC_INT, COUNT_NEG, ROOT_NEG, ROOT_SIZE, CASES };
    static const char *names[] = {"allreduce sum on MPI_DOUBLE_INT", "allreduce band on MPI_DOUBLE",
                                  "allreduce land on MPI_DOUBLE",    "allreduce minloc on MPI_INT",
                                  "allreduce count -1",              "reduce root -1",
                                  "reduce root == size"};
    for (int c = 0; c < CASES; c++) {
        int cls[2];
#if defined(MPICH_VERSION)
        /* MPICH 4.0.2 aborts (assertion) on these instead of raising an error class */
        if (c == LAND_DOUBLE || c == COUNT_NEG) continue;
#endif
        for (int a = 0; a < 2; a++) {
            int err;
            switch (c) {
            case SUM_DOUBLE_INT: err = api[a].allreduce(din, dout, 2, MPI_DOUBLE_INT, MPI_SUM, comm); break;
            case BAND_FLOAT: err = api[a].allreduce(din, dout, 2, MPI_DOUBLE, MPI_BAND, comm); break;
            case LAND_DOUBLE: err = api[a].allreduce(din, dout, 2, MPI_DOUBLE, MPI_LAND, comm); break;
            case MINLOC_INT: err = api[a].allreduce(in, out, 2, MPI_INT, MPI_MINLOC, comm); break;
            case COUNT_NEG: err = api[a].allreduce(in, out, -1, MPI_INT, MPI_SUM, comm); break;
            case ROOT_NEG: err = api[a].reduce(in, out, 2, MPI_INT, MPI_SUM, -1, comm); break;
            default: err = api[a].reduce(in, out, 2, MPI_INT, MPI_SUM, size, comm); break;
            }
            cls[a] = error_class(err);
        }
        T_CHECK(cls[0] == cls[1], "%s: nodecoll error class %d, host %d", names[c], cls[1], cls[0]);
        T_CHECK(cls[0] != MPI_SUCCESS, "%s: the host accepted it (test assumption wrong)", names[c]);
    }
    /* The state is intact: a good call still works, accelerated. */
    int one = 1, sum = 0;
    uint64_t fb = nodecoll_stat_calls("allreduce", "pmpi:*");
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, comm);
    T_CHECK(sum == size, "allreduce after errors: %d", sum);
    T_CHECK(size == 1 || nodecoll_stat_calls("allreduce", "pmpi:*") == fb, "allreduce after errors fell back");
}

/* NODECOLL_TEST_BACKGROUND: rank 0 keeps a nonblocking Barrier outstanding through every
 * reduction (the others enter it at the end), so its reductions run as resumable operations
 * that return to the engine at every wait instead of waiting where they stand. */
static MPI_Comm background_comm = MPI_COMM_NULL;
static MPI_Request background_request = MPI_REQUEST_NULL;

static void background_start(void)
{
    if (!getenv("NODECOLL_TEST_BACKGROUND")) return;
    MPI_Comm_dup(MPI_COMM_WORLD, &background_comm);
    MPI_Barrier(background_comm); /* (every rank sets the communicator up) */
    if (t_rank == 0) MPI_Ibarrier(background_comm, &background_request);
}

static void background_finish(void)
{
    if (background_comm == MPI_COMM_NULL) return;
    if (t_rank != 0) MPI_Ibarrier(background_comm, &background_request);
    MPI_Wait(&background_request, MPI_STATUS_IGNORE);
    MPI_Comm_free(&background_comm);
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv);
    /* NODECOLL_TEST_MIXED_ENGINE: odd ranks pack with the host (NODECOLL_DTYPE_ENGINE=0, read at
     * nodecoll's first use), the others with the engine.  A process's own setting must not change
     * which path a reduction takes on it (a user op on a padded struct went to the host on one
     * rank alone and hung). */
    if (getenv("NODECOLL_TEST_MIXED_ENGINE") && t_rank % 2) setenv("NODECOLL_DTYPE_ENGINE", "0", 1);
    set_handles();
    affine_type.type = MPI_2INT;
    MPI_Type_contiguous(2, MPI_INT, &derived_affine_type.type);
    MPI_Type_commit(&derived_affine_type.type);
    MPI_Datatype pair_vector;
    MPI_Type_vector(2, 1, GAPPED_B, MPI_INT, &pair_vector);
    MPI_Type_create_resized(pair_vector, 0, GAPPED_STRIDE * (MPI_Aint)sizeof(int), &gapped_affine);
    MPI_Type_commit(&gapped_affine);
    MPI_Type_free(&pair_vector);
    gapped_affine_type.type = gapped_affine;
    const char *r = getenv("NODECOLL_REPRODUCIBLE");
    reproducible = r && (!strcmp(r, "1") || !strcmp(r, "yes") || !strcmp(r, "on"));
    MPI_Op predefined[] = {MPI_SUM, MPI_PROD, MPI_MIN,  MPI_MAX,  MPI_LAND,   MPI_LOR,
                           MPI_LXOR, MPI_BAND, MPI_BOR, MPI_BXOR, MPI_MINLOC, MPI_MAXLOC};
    for (int o = 0; o <= O_MAXLOC; o++) mpi_ops[o] = predefined[o];
    MPI_Op_create(user_sum, 1, &mpi_ops[O_USER_SUM]);
    MPI_Op_create(user_affine, 0, &mpi_ops[O_USER_AFFINE]);
    /* argv[1]: do every how-many-th case of the type x op x collective matrix (and every
     * (how-many/4)-th user-op case). */
    int stride = argc > 1 && atoi(argv[1]) > 1 ? atoi(argv[1]) : 1;
    stride = stride * 100 / t_scale(100); /* sanitised builds (scale 0.2): a 5x sparser sample */
    int user_stride = stride / 4 + 1;
    background_start();
    int fortran = getenv("NODECOLL_TEST_FORTRAN_TYPES") != NULL;
    if (fortran) {
        matrix_types = ftypes;
        matrix_ntypes = (int)(sizeof ftypes / sizeof ftypes[0]);
    }
    run_matrix(MPI_COMM_WORLD, "world", 1, stride);
    if (!fortran) {
        run_user_ops(MPI_COMM_WORLD, "world", 2, user_stride);
        run_large(MPI_COMM_WORLD, "world");
    }
    MPI_Comm shuffled;
    MPI_Comm_split(MPI_COMM_WORLD, 0, -t_rank, &shuffled);
    run_matrix(shuffled, "reversed", 3, (fortran ? 2 : 7) * stride);
    if (!fortran) {
        run_user_ops(shuffled, "reversed", 4, 2 * user_stride);
        run_errors(shuffled);
    }
    MPI_Comm_free(&shuffled);
    background_finish();
    MPI_Op_free(&mpi_ops[O_USER_SUM]);
    MPI_Op_free(&mpi_ops[O_USER_AFFINE]);
    MPI_Type_free(&derived_affine_type.type);
    MPI_Type_free(&gapped_affine);
    if (t_size > 1)
        T_CHECK(nodecoll_stat_calls("allreduce", "*") > nodecoll_stat_calls("allreduce", "pmpi:*"),
                "the accelerated path never ran");
    return t_finish("reduce");
}
