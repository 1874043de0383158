#include "bench.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Page-aligned and written once: a first touch inside a timed region would cost a page
 * fault (microseconds per page, docs/results-costs.md) and be charged to whichever variant
 * ran first. */
void *xalloc_touched(size_t bytes)
{
    void *p = NULL;
    if (bytes == 0) bytes = 64;
    if (posix_memalign(&p, 4096, bytes)) {
        fprintf(stderr, "nodecoll-bench: cannot allocate %zu bytes\n", bytes);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    memset(p, 0, bytes);
    return p;
}

size_t round_up(size_t v, size_t to)
{
    return (v + to - 1) / to * to;
}

int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorts v in place. */
double median_of(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void format_bytes(char *out, size_t len, size_t bytes)
{
    static const char *unit[] = {"", "K", "M", "G"};
    int u = 0;
    while (u < 3 && bytes >= 1024 && bytes % 1024 == 0) {
        bytes /= 1024;
        u++;
    }
    snprintf(out, len, "%zu%s", bytes, unit[u]);
}

static long read_cache_attr(int index, const char *attr)
{
    char path[128], text[64];
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/%s", index, attr);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    long v = -1;
    if (fgets(text, sizeof text, f)) {
        char *e;
        v = strtol(text, &e, 10);
        if (*e == 'K') v <<= 10;
        else if (*e == 'M') v <<= 20;
    }
    fclose(f);
    return v;
}

/* Last-level cache of this machine, for --off-cache pools and cold memcpy.  sysfs first:
 * under some hypervisors sysconf adds up the L3 of every CCX (here it says 320 MiB). */
size_t llc_bytes(void)
{
    long best_level = 0, size = 0;
    for (int i = 0; i < 16; i++) {
        long level = read_cache_attr(i, "level");
        if (level < 0) break;
        if (level >= best_level) {
            best_level = level;
            size = read_cache_attr(i, "size");
        }
    }
    if (size <= 0) size = sysconf(_SC_LEVEL3_CACHE_SIZE);
    return size > 0 ? (size_t)size : (size_t)32 << 20;
}

double dmax(double a, double b)
{
    return a > b ? a : b;
}

double dmin(double a, double b)
{
    return a < b ? a : b;
}

/* Ceiling of x >= 0 that fits a long. */
double ceil_pos(double x)
{
    long i = (long)x;
    return (double)(i + ((double)i < x));
}

/* Index of the entry called `name` in an array of structs whose first member is the name
 * (the collective, datatype and operation tables), or -1. */
int table_find(const void *table, int n, size_t stride, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(*(const char *const *)((const char *)table + (size_t)i * stride), name)) return i;
    return -1;
}
