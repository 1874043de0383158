/* libnodecoll-heap.so: the C library's allocation functions, with large blocks from the
 * shared heap's arena (arena.h) when NODECOLL_HEAP=on.
 *
 * A process that does not preload this library pays nothing; one that preloads it with the
 * heap off pays one comparison per call.  Everything below NODECOLL_HEAP_MIN bytes, and
 * whatever the arena cannot hold, goes to the next allocator in the lookup order (the C
 * library's), found with dlsym(RTLD_NEXT).  dlsym itself may allocate while it resolves
 * them: those few requests come from a static bootstrap buffer that is never freed.
 *
 * The heap is turned on by this library's constructor, and only when its malloc is the
 * process's malloc (preloaded; not when the main library loads it for MPI_Alloc_mem, nor
 * behind a sanitizer's allocator that comes first): a large block allocated before then is
 * the C library's, which free tells apart by address. */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arena.h"
#include "../core/config.h"
#include "../core/hot_tls.h"

#define NC_EXPORT __attribute__((visibility("default")))

/* ---- the next allocator ------------------------------------------------------------------ */

typedef struct next_allocator {
    void *(*malloc)(size_t);
    void (*free)(void *);
    void *(*calloc)(size_t, size_t);
    void *(*realloc)(void *, size_t);
    int (*posix_memalign)(void **, size_t, size_t);
    void *(*aligned_alloc)(size_t, size_t);
    void *(*memalign)(size_t, size_t);
    void *(*valloc)(size_t);
    void *(*pvalloc)(size_t);
    size_t (*usable_size)(void *);
} next_allocator;

static next_allocator next;
static _Atomic int next_found;
static NC_HOT_TLS int finding_next; /* this thread is inside dlsym: serve it from the bootstrap */

static void *find(const char *name)
{
    void *fn = dlsym(RTLD_NEXT, name);
    if (!fn) {
        static const char msg[] = "nodecoll heap: no allocator behind libnodecoll-heap.so\n";
        (void)!write(2, msg, sizeof msg - 1);
        abort();
    }
    return fn;
}

static void find_next(void)
{
    finding_next = 1;
    next_allocator n;
    *(void **)&n.malloc = find("malloc");
    *(void **)&n.free = find("free");
    *(void **)&n.calloc = find("calloc");
    *(void **)&n.realloc = find("realloc");
    *(void **)&n.posix_memalign = find("posix_memalign");
    *(void **)&n.aligned_alloc = find("aligned_alloc");
    *(void **)&n.memalign = find("memalign");
    *(void **)&n.valloc = find("valloc");
    *(void **)&n.pvalloc = find("pvalloc");
    *(void **)&n.usable_size = find("malloc_usable_size");
    next = n; /* (threads finding it at once write the same values) */
    atomic_store_explicit(&next_found, 1, memory_order_release);
    finding_next = 0;
}

/* The next allocator, or NULL while this thread is looking for it. */
static inline const next_allocator *behind(void)
{
    if (__builtin_expect(atomic_load_explicit(&next_found, memory_order_acquire), 1)) return &next;
    if (finding_next) return NULL;
    find_next();
    return &next;
}

/* ---- the bootstrap buffer ------------------------------------------------------------------ */

#define BOOTSTRAP_BYTES 65536
#define BOOTSTRAP_HEADER 64
static _Alignas(64) char bootstrap[BOOTSTRAP_BYTES];
static _Atomic size_t bootstrap_used;

static void *bootstrap_alloc(size_t bytes)
{
    size_t need = (bytes + 2 * BOOTSTRAP_HEADER - 1) / BOOTSTRAP_HEADER * BOOTSTRAP_HEADER;
    size_t at = atomic_fetch_add(&bootstrap_used, need);
    if (bytes > BOOTSTRAP_BYTES || at + need > BOOTSTRAP_BYTES) {
        errno = ENOMEM;
        return NULL;
    }
    memcpy(bootstrap + at, &bytes, sizeof bytes); /* (zeroed already: static, never reused) */
    return bootstrap + at + BOOTSTRAP_HEADER;
}

static int in_bootstrap(const void *p) { return (uintptr_t)p - (uintptr_t)bootstrap < BOOTSTRAP_BYTES; }

static size_t bootstrap_size(const void *p)
{
    size_t bytes;
    memcpy(&bytes, (const char *)p - BOOTSTRAP_HEADER, sizeof bytes);
    return bytes;
}

/* ---- which blocks go to the heap ------------------------------------------------------------ */

/* NODECOLL_HEAP_MIN once the heap is on; until then (and for good when it is off) no size
 * reaches it. */
static size_t large_min = SIZE_MAX;
static size_t page_bytes = 4096;

static int is_large(size_t bytes) { return bytes >= large_min; }

static void *from_heap(size_t bytes, size_t align, int zero)
{
    return is_large(bytes) ? nc_arena_alloc(bytes, align, zero) : NULL;
}

/* This library's malloc (a hidden alias: the name `malloc` here means whichever the process
 * uses). */
void *own_malloc(size_t bytes);

__attribute__((constructor(101))) static void start(void)
{
    nc_config cfg;
    nc_config_from_env(&cfg, NULL); /* (the main library reports invalid values) */
    nc_arena_configure((size_t)cfg.heap_size, (size_t)cfg.heap_retain);
    page_bytes = (size_t)sysconf(_SC_PAGESIZE);
    behind();
    if (cfg.heap == NC_HEAP_ON && dlsym(RTLD_DEFAULT, "malloc") == (void *)own_malloc) large_min = (size_t)cfg.heap_min;
}

/* ---- the allocation functions ---------------------------------------------------------------- */

NC_EXPORT void *malloc(size_t bytes)
{
    void *p = from_heap(bytes, 0, 0);
    if (p) return p;
    const next_allocator *n = behind();
    return n ? n->malloc(bytes) : bootstrap_alloc(bytes);
}

void *own_malloc(size_t bytes) __attribute__((alias("malloc"), copy(malloc)));

NC_EXPORT void free(void *p)
{
    if (!p || in_bootstrap(p)) return;
    if (nc_arena_contains(p)) {
        nc_arena_free(p);
        return;
    }
    const next_allocator *n = behind();
    if (n) n->free(p); /* (none while dlsym looks for it: it frees only what the bootstrap gave) */
}

NC_EXPORT void *calloc(size_t count, size_t size)
{
    size_t bytes;
    if (__builtin_mul_overflow(count, size, &bytes)) {
        errno = ENOMEM;
        return NULL;
    }
    void *p = from_heap(bytes, 0, 1);
    if (p) return p;
    const next_allocator *n = behind();
    return n ? n->calloc(count, size) : bootstrap_alloc(bytes);
}

static size_t usable(void *p)
{
    if (in_bootstrap(p)) return bootstrap_size(p);
    return nc_arena_contains(p) ? nc_arena_usable(p) : behind()->usable_size(p);
}

/* A new block of `bytes` for the contents of p, which is freed (p is kept when there is none). */
static void *move_block(void *p, size_t bytes, void *to)
{
    if (!to) return NULL;
    size_t keep = usable(p);
    memcpy(to, p, keep < bytes ? keep : bytes);
    free(p);
    return to;
}

static void *realloc_heap_block(void *p, size_t bytes)
{
    if (!bytes) { /* (the C library's realloc frees and returns NULL) */
        nc_arena_free(p);
        return NULL;
    }
    if (!is_large(bytes)) return move_block(p, bytes, behind()->malloc(bytes));
    if (nc_arena_resize(p, bytes)) return p;
    void *to = nc_arena_alloc(bytes, 0, 0);
    return move_block(p, bytes, to ? to : behind()->malloc(bytes));
}

NC_EXPORT void *realloc(void *p, size_t bytes)
{
    if (!p) return malloc(bytes);
    if (nc_arena_contains(p)) return realloc_heap_block(p, bytes);
    if (in_bootstrap(p)) return move_block(p, bytes, malloc(bytes));
    if (is_large(bytes)) { /* a block of the C library grown across the threshold */
        void *to = move_block(p, bytes, nc_arena_alloc(bytes, 0, 0));
        if (to) return to;
    }
    return behind()->realloc(p, bytes);
}

static int power_of_two(size_t x) { return x && !(x & (x - 1)); }

NC_EXPORT int posix_memalign(void **out, size_t align, size_t bytes)
{
    /* (an invalid alignment gets the C library's answer, EINVAL) */
    if (align % sizeof(void *) == 0 && power_of_two(align)) {
        void *p = from_heap(bytes, align, 0);
        if (p) {
            *out = p;
            return 0;
        }
    }
    const next_allocator *n = behind();
    if (n) return n->posix_memalign(out, align, bytes);
    return (*out = bootstrap_alloc(bytes)) ? 0 : ENOMEM;
}

NC_EXPORT void *aligned_alloc(size_t align, size_t bytes)
{
    void *p = power_of_two(align) ? from_heap(bytes, align, 0) : NULL;
    return p ? p : behind()->aligned_alloc(align, bytes);
}

NC_EXPORT void *memalign(size_t align, size_t bytes)
{
    void *p = power_of_two(align) ? from_heap(bytes, align, 0) : NULL;
    return p ? p : behind()->memalign(align, bytes);
}

NC_EXPORT void *valloc(size_t bytes)
{
    void *p = from_heap(bytes, page_bytes, 0);
    return p ? p : behind()->valloc(bytes);
}

NC_EXPORT void *pvalloc(size_t bytes)
{
    size_t rounded = (bytes + page_bytes - 1) / page_bytes * page_bytes;
    void *p = rounded >= bytes ? from_heap(rounded ? rounded : page_bytes, page_bytes, 0) : NULL;
    return p ? p : behind()->pvalloc(bytes);
}

NC_EXPORT size_t malloc_usable_size(void *p) { return p ? usable(p) : 0; }

/* ---- what the main library sees ------------------------------------------------------------------ */

static int interposed(void) { return large_min != SIZE_MAX; }

static void *alloc_for_mpi(size_t bytes) { return nc_arena_alloc(bytes, 0, 0); }

static int release(void *p)
{
    if (!p || !nc_arena_contains(p)) return 0;
    nc_arena_free(p);
    return 1;
}

NC_EXPORT const nc_heap_api nodecoll_heap_api = {NC_HEAP_API_VERSION, interposed, nc_arena_get, alloc_for_mpi, release};
