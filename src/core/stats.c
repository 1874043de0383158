#include "stats.h"

#include "hot_tls.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
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

const char *nc_coll_name(nc_coll_id c) { return coll_names[c]; }
const char *nc_alg_name(nc_alg_id a) { return alg_names[a]; }
/* (Character by character, stopping at a shorter name's end: every data-movement call asks,
 * and strncmp was a library call of ~45 instructions.) */
int nc_alg_is_fallback(nc_alg_id a)
{
    const char *s = alg_names[a];
    return s[0] == 'p' && s[1] == 'm' && s[2] == 'p' && s[3] == 'i' && s[4] == ':';
}

/* Each thread counts in a block of its own with plain (relaxed load + store) updates: a
 * locked add on process-wide counters drains the store buffer on every call, so a small
 * collective paid for the line transfer of the flag it had just posted.  A reader sums the
 * blocks under blocks_lock; a thread's block is folded into `retired` when the thread ends.
 * Reset records the totals as a baseline instead of writing into other threads' blocks. */
typedef struct counter_block {
    _Atomic uint64_t calls[NC_COLL_COUNT][NC_ALG_COUNT];
    _Atomic uint64_t bytes[NC_COLL_COUNT][NC_ALG_COUNT];
    struct counter_block *next;
} counter_block;

typedef struct totals {
    uint64_t calls[NC_COLL_COUNT][NC_ALG_COUNT];
    uint64_t bytes[NC_COLL_COUNT][NC_ALG_COUNT];
} totals;

static pthread_mutex_t blocks_lock = PTHREAD_MUTEX_INITIALIZER;
static counter_block *blocks;
static totals retired, baseline;
static NC_HOT_TLS counter_block *my_block;
static pthread_key_t block_key;
static pthread_once_t block_key_once = PTHREAD_ONCE_INIT;

/* (Runs in the ending thread: a later destructor there that makes a call counts in a new
 * block, which the key's next round of destructors retires in turn.) */
static void retire_block(void *block)
{
    counter_block *b = block;
    my_block = NULL;
    pthread_mutex_lock(&blocks_lock);
    for (counter_block **at = &blocks; *at; at = &(*at)->next)
        if (*at == b) {
            *at = b->next;
            break;
        }
    for (int c = 0; c < NC_COLL_COUNT; c++)
        for (int a = 0; a < NC_ALG_COUNT; a++) {
            retired.calls[c][a] += atomic_load_explicit(&b->calls[c][a], memory_order_relaxed);
            retired.bytes[c][a] += atomic_load_explicit(&b->bytes[c][a], memory_order_relaxed);
        }
    pthread_mutex_unlock(&blocks_lock);
    free(b);
}

static void make_block_key(void) { pthread_key_create(&block_key, retire_block); }

__attribute__((noinline)) static counter_block *adopt_block(void)
{
    counter_block *b = calloc(1, sizeof *b);
    if (!b) return NULL; /* (counting is best effort: never fail a call for it) */
    pthread_once(&block_key_once, make_block_key);
    pthread_mutex_lock(&blocks_lock);
    b->next = blocks;
    blocks = b;
    pthread_mutex_unlock(&blocks_lock);
    pthread_setspecific(block_key, b);
    return my_block = b;
}

static void bump(_Atomic uint64_t *counter, uint64_t by)
{
    atomic_store_explicit(counter, atomic_load_explicit(counter, memory_order_relaxed) + by, memory_order_relaxed);
}

void nc_stats_count(nc_coll_id c, nc_alg_id a, size_t bytes)
{
    counter_block *b = my_block ? my_block : adopt_block();
    if (!b) return;
    bump(&b->calls[c][a], 1);
    if (bytes) bump(&b->bytes[c][a], bytes);
}

/* Every thread's counts so far (blocks_lock held). */
static void sum_locked(int c, int a, uint64_t *calls, uint64_t *bytes)
{
    *calls = retired.calls[c][a];
    *bytes = retired.bytes[c][a];
    for (const counter_block *b = blocks; b; b = b->next) {
        *calls += atomic_load_explicit(&b->calls[c][a], memory_order_relaxed);
        *bytes += atomic_load_explicit(&b->bytes[c][a], memory_order_relaxed);
    }
}

/* The counts since the last reset. */
static void since_reset(int c, int a, uint64_t *calls, uint64_t *bytes)
{
    pthread_mutex_lock(&blocks_lock);
    sum_locked(c, a, calls, bytes);
    *calls -= baseline.calls[c][a];
    *bytes -= baseline.bytes[c][a];
    pthread_mutex_unlock(&blocks_lock);
}

NC_EXPORT int nodecoll_stat_count(void) { return NC_COLL_COUNT * NC_ALG_COUNT; }

NC_EXPORT int nodecoll_stat_get(int index, nodecoll_stat *out)
{
    if (index < 0 || index >= nodecoll_stat_count() || !out) return -1;
    int c = index / NC_ALG_COUNT, a = index % NC_ALG_COUNT;
    out->collective = coll_names[c];
    out->algorithm = alg_names[a];
    uint64_t calls, bytes;
    since_reset(c, a, &calls, &bytes);
    out->calls = calls;
    out->bytes = bytes;
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
            if (algorithm_matches(algorithm, a)) {
                uint64_t calls, bytes;
                since_reset(c, a, &calls, &bytes);
                sum += calls;
            }
    }
    return sum;
}

NC_EXPORT void nodecoll_stat_reset(void)
{
    pthread_mutex_lock(&blocks_lock);
    for (int c = 0; c < NC_COLL_COUNT; c++)
        for (int a = 0; a < NC_ALG_COUNT; a++) sum_locked(c, a, &baseline.calls[c][a], &baseline.bytes[c][a]);
    pthread_mutex_unlock(&blocks_lock);
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
