/*
 * Datatypes and reduction operations the benchmark can sweep.
 *
 * Buffer values are small integers (0..63, or 1 and 2 for products) so that any order of
 * reduction gives the same bits: nodecoll and the host MPI may sum in different orders, and
 * --check compares their results byte for byte.
 */
#include "bench.h"

#include <string.h>

static inline unsigned value_at(size_t i, unsigned seed, int sparse)
{
    if (sparse) return 1u + ((i + seed) % 7u == 0); /* products stay exact: at most 2^P */
    return (unsigned)(i * 5u + seed) & 63u;
}

#define DTYPES(X)                                                                          \
    X(byte, MPI_BYTE, unsigned char, DT_BITS)                                              \
    X(uint8, MPI_UINT8_T, uint8_t, DT_INT)                                                 \
    X(int, MPI_INT, int, DT_INT)                                                           \
    X(int64, MPI_INT64_T, int64_t, DT_INT)                                                 \
    X(float, MPI_FLOAT, float, DT_FLOAT)                                                   \
    X(double, MPI_DOUBLE, double, DT_FLOAT)

/* Both value patterns repeat after this many elements (64 and 7 are coprime). */
#define PERIOD (64 * 7)

/* Copies the first `done` bytes (whole periods) over the rest of the buffer, doubling:
 * filling 32 MiB element by element before every timed block took longer than the call. */
static void replicate(char *buf, size_t total, size_t done)
{
    while (done < total) {
        size_t n = done < total - done ? done : total - done;
        memcpy(buf + done, buf, n);
        done += n;
    }
}

#define DEFINE_FILL(name, mpitype, ctype, kind)                                            \
    static void fill_##name(void *buf, size_t count, unsigned seed, int sparse)            \
    {                                                                                      \
        ctype *p = buf;                                                                    \
        size_t head = count < PERIOD ? count : PERIOD;                                     \
        for (size_t i = 0; i < head; i++) p[i] = (ctype)value_at(i, seed, sparse);         \
        replicate(buf, count * sizeof(ctype), head * sizeof(ctype));                       \
    }
DTYPES(DEFINE_FILL)
#undef DEFINE_FILL

static const struct dtype dtypes[] = {
#define AS_ENTRY(name, mpitype, ctype, kind) {#name, mpitype, sizeof(ctype), kind, fill_##name},
    DTYPES(AS_ENTRY)
#undef AS_ENTRY
};

const struct dtype *dtype_find(const char *name)
{
    int i = table_find(dtypes, (int)(sizeof dtypes / sizeof dtypes[0]), sizeof dtypes[0], name);
    return i < 0 ? NULL : &dtypes[i];
}

#define OPS(X)                                                                             \
    X(sum, MPI_SUM, OP_ARITH) X(prod, MPI_PROD, OP_PROD) X(max, MPI_MAX, OP_ARITH)         \
    X(min, MPI_MIN, OP_ARITH) X(band, MPI_BAND, OP_BITWISE) X(bor, MPI_BOR, OP_BITWISE)    \
    X(bxor, MPI_BXOR, OP_BITWISE)

static const struct op ops[] = {
#define AS_OP(n, mpiop, kind) {#n, mpiop, kind},
    OPS(AS_OP)
#undef AS_OP
};

const struct op *op_find(const char *name)
{
    int i = table_find(ops, (int)(sizeof ops / sizeof ops[0]), sizeof ops[0], name);
    return i < 0 ? NULL : &ops[i];
}

/* MPI defines arithmetic on integer and floating types, bitwise operations on integer
 * types and MPI_BYTE. */
int op_fits(const struct op *op, const struct dtype *dt)
{
    if (op->kind == OP_BITWISE) return dt->kind != DT_FLOAT;
    return dt->kind != DT_BITS;
}

/* Reductions default to double, the usual payload of scientific codes; moves to bytes,
 * except Balaji et al.'s patterns, which are defined in doubles. */
const struct dtype *dtype_auto(const struct coll *c, const struct op *op)
{
    if (c->pattern != PAT_UNIFORM) return dtype_find("double");
    if (!(c->flags & COLL_REDUCES)) return dtype_find("byte");
    return dtype_find(op->kind == OP_BITWISE ? "uint8" : "double");
}
