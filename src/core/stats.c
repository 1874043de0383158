#include "stats.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "nodecoll.h"

#define NC_EXPORT __attribute__((visibility("default")))

static const char *const coll_names[] = {
#define NC_NAME(id, name) name,
    NC_COLLECTIVES(NC_NAME)
};
static const char *const alg_names[] = {NC_ALGORITHMS(NC_NAME)
#undef NC_NAME
};

static _Atomic uint64_t calls[NC_COLL_COUNT][NC_ALG_COUNT];
static _Atomic uint64_t bytes_moved[NC_COLL_COUNT][NC_ALG_COUNT];

const char *nc_coll_name(nc_coll_id c) { return coll_names[c]; }
const char *nc_alg_name(nc_alg_id a) { return alg_names[a]; }
int nc_alg_is_fallback(nc_alg_id a) { return strncmp(alg_names[a], "pmpi:", 5) == 0; }

void nc_stats_count(nc_coll_id c, nc_alg_id a, size_t bytes)
{
    atomic_fetch_add_explicit(&calls[c][a], 1, memory_order_relaxed);
    if (bytes) atomic_fetch_add_explicit(&bytes_moved[c][a], bytes, memory_order_relaxed);
}

NC_EXPORT int nodecoll_stat_count(void) { return NC_COLL_COUNT * NC_ALG_COUNT; }

NC_EXPORT int nodecoll_stat_get(int index, nodecoll_stat *out)
{
    if (index < 0 || index >= nodecoll_stat_count() || !out) return -1;
    int c = index / NC_ALG_COUNT, a = index % NC_ALG_COUNT;
    out->collective = coll_names[c];
    out->algorithm = alg_names[a];
    out->calls = atomic_load_explicit(&calls[c][a], memory_order_relaxed);
    out->bytes = atomic_load_explicit(&bytes_moved[c][a], memory_order_relaxed);
    return 0;
}

static int algorithm_matches(const char *pattern, int a)
{
    if (!strcmp(pattern, "*")) return 1;
    if (!strcmp(pattern, "pmpi:*")) return nc_alg_is_fallback((nc_alg_id)a);
    return !strcmp(pattern, alg_names[a]);
}

NC_EXPORT uint64_t nodecoll_stat_calls(const char *collective, const char *algorithm)
{
    uint64_t sum = 0;
    if (!collective || !algorithm) return 0;
    for (int c = 0; c < NC_COLL_COUNT; c++) {
        if (strcmp(collective, coll_names[c])) continue;
        for (int a = 0; a < NC_ALG_COUNT; a++)
            if (algorithm_matches(algorithm, a))
                sum += atomic_load_explicit(&calls[c][a], memory_order_relaxed);
    }
    return sum;
}

NC_EXPORT void nodecoll_stat_reset(void)
{
    for (int c = 0; c < NC_COLL_COUNT; c++)
        for (int a = 0; a < NC_ALG_COUNT; a++) {
            atomic_store_explicit(&calls[c][a], 0, memory_order_relaxed);
            atomic_store_explicit(&bytes_moved[c][a], 0, memory_order_relaxed);
        }
}

NC_EXPORT void nodecoll_stat_print(void *FILE_stream, const char *prefix)
{
    FILE *out = FILE_stream ? (FILE *)FILE_stream : stderr;
    nodecoll_stat s;
    for (int i = 0; i < nodecoll_stat_count(); i++) {
        nodecoll_stat_get(i, &s);
        if (s.calls)
            fprintf(out, "%s%-10s %-16s calls %10llu  bytes %14llu\n", prefix ? prefix : "",
                    s.collective, s.algorithm, (unsigned long long)s.calls,
                    (unsigned long long)s.bytes);
    }
}
