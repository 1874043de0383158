/*
 * Which nodecoll algorithm ran: the counters of include/nodecoll.h, read before and after a
 * point.  The functions are weak so that the tool also builds and runs without the library
 * (both variants then reach the host MPI, which is a useful A/A test of the method).
 */
#include "bench.h"

#include <stdlib.h>
#include <string.h>

#if defined(__has_include)
#if __has_include("nodecoll.h")
#include "nodecoll.h"
#define BENCH_HAVE_NODECOLL_H 1
#endif
#endif

#ifndef BENCH_HAVE_NODECOLL_H
/* Same declarations as include/nodecoll.h, for the standalone build without -Iinclude. */
typedef struct nodecoll_stat {
    const char *collective;
    const char *algorithm;
    uint64_t calls;
    uint64_t bytes;
} nodecoll_stat;
const char *nodecoll_version(void);
int nodecoll_stat_count(void);
int nodecoll_stat_get(int index, nodecoll_stat *out);
#endif

#pragma weak nodecoll_version
#pragma weak nodecoll_stat_count
#pragma weak nodecoll_stat_get

struct stats_snap {
    int n;
    uint64_t calls[];
};

int stats_available(void)
{
    return nodecoll_stat_count != NULL && nodecoll_stat_get != NULL;
}

const char *stats_nodecoll_version(void)
{
    return nodecoll_version ? nodecoll_version() : NULL;
}

struct stats_snap *stats_snapshot(void)
{
    int n = stats_available() ? nodecoll_stat_count() : 0;
    struct stats_snap *s = malloc(sizeof *s + sizeof(uint64_t) * (size_t)(n > 0 ? n : 1));
    s->n = n;
    for (int i = 0; i < n; i++) {
        nodecoll_stat st;
        s->calls[i] = nodecoll_stat_get(i, &st) == 0 ? st.calls : 0;
    }
    return s;
}

/* Marks the counters of `coll` that moved since `before`, as bits of `moved`. */
static void mark_moved(const struct stats_snap *before, const char *coll, uint64_t *moved)
{
    for (int i = 0; i < before->n; i++) {
        nodecoll_stat st;
        if (nodecoll_stat_get(i, &st) || strcmp(st.collective, coll)) continue;
        if (st.calls > before->calls[i]) moved[i / 64] |= 1ull << (i % 64);
    }
}

/* Algorithms differ between ranks (a root may take another path than a leaf), so the
 * union over ranks is reported: "shm", "shm+pmpi:args"; "-" without the library.
 * Collective over MPI_COMM_WORLD; frees `before`. */
void stats_moved(struct stats_snap *before, const char *coll, char *out, size_t len)
{
    int words = (before->n + 63) / 64;
    snprintf(out, len, "-");
    if (words == 0) {
        free(before);
        return;
    }
    uint64_t *moved = calloc((size_t)words, sizeof *moved);
    mark_moved(before, coll, moved);
    PMPI_Allreduce(MPI_IN_PLACE, moved, words, MPI_UINT64_T, MPI_BOR, MPI_COMM_WORLD);
    size_t used = 0;
    for (int i = 0; i < before->n; i++) {
        nodecoll_stat st;
        if (!(moved[i / 64] >> (i % 64) & 1) || nodecoll_stat_get(i, &st)) continue;
        int w = snprintf(out + used, len - used, "%s%s", used ? "+" : "", st.algorithm);
        if (w < 0 || (size_t)w >= len - used) break;
        used += (size_t)w;
    }
    if (!used) snprintf(out, len, "none"); /* not wrapped: MPI_* went straight to the host */
    free(moved);
    free(before);
}
