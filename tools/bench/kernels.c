/* nodecoll-kernels: throughput of the reduction kernels (src/core/ops.c) next to memcpy, on
 * one core, for vectors from L1-sized to memory-sized.  A kernel reads two vectors and
 * writes one (inout = in op inout); memcpy reads one and writes one.  GB/s counts the bytes
 * of one vector per second, so a kernel that keeps up with memcpy shows the same figure.
 *
 * usage: nodecoll-kernels [--csv]        (wrap in flock /tmp/nodecoll-bench.lock) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/ops.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct kernel_case {
    const char *name;
    nc_op_id op;
    nc_elem_id elem;
} kernel_case;

static const kernel_case cases[] = {
    {"sum double", NC_OP_SUM, NC_ELEM_F64},     {"sum float", NC_OP_SUM, NC_ELEM_F32},
    {"sum int32", NC_OP_SUM, NC_ELEM_I32},      {"sum int8", NC_OP_SUM, NC_ELEM_I8},
    {"max double", NC_OP_MAX, NC_ELEM_F64},     {"prod int64", NC_OP_PROD, NC_ELEM_I64},
    {"band uint8", NC_OP_BAND, NC_ELEM_U8},     {"minloc double_int", NC_OP_MINLOC, NC_ELEM_DOUBLE_INT},
    {"sum long double", NC_OP_SUM, NC_ELEM_F80},
};
#define NCASES (sizeof cases / sizeof cases[0])

/* Best of 5 timings of at least 20 ms of repeated passes; returns GB/s of one vector. */
static double rate(size_t bytes, const kernel_case *k, char *a, char *b)
{
    double best = 0;
    nc_reduce_fn fn = k ? nc_kernel(k->op, k->elem) : NULL;
    size_t count = k ? bytes / nc_elem_size(k->elem) : 0;
    for (int rep = 0; rep < 5; rep++) {
        long passes = 0;
        double t0 = now(), t;
        do {
            if (fn) fn(a, b, count, NULL);
            else memcpy(b, a, bytes);
            passes++;
        } while ((t = now() - t0) < 0.02);
        double r = (double)bytes * (double)passes / t / 1e9;
        if (r > best) best = r;
    }
    return best;
}

int main(int argc, char **argv)
{
    int csv = argc > 1 && !strcmp(argv[1], "--csv");
    const size_t max = (size_t)64 << 20;
    char *a = aligned_alloc(4096, max), *b = aligned_alloc(4096, max);
    if (!a || !b) return 1;
    /* Values that stay finite and avoid denormals under repeated SUM/PROD/MAX. */
    for (size_t i = 0; i < max; i++) a[i] = (char)(i % 7 == 0 ? 0x3f : 0), b[i] = (char)(i % 5 == 0 ? 0x3f : 0);
    printf(csv ? "bytes,memcpy" : "%10s %8s", "bytes", "memcpy");
    for (size_t k = 0; k < NCASES; k++) printf(csv ? ",%s" : " %10.10s", cases[k].name);
    printf("\n");
    for (size_t bytes = 4096; bytes <= max; bytes *= 4) {
        printf(csv ? "%zu,%.2f" : "%10zu %8.2f", bytes, rate(bytes, NULL, a, b));
        for (size_t k = 0; k < NCASES; k++) printf(csv ? ",%.2f" : " %10.2f", rate(bytes, &cases[k], a, b));
        printf("\n");
        fflush(stdout);
    }
    free(a);
    free(b);
    return 0;
}
