/* The shared heap's allocator (libnodecoll-heap.so, preloaded by the test): every allocation
 * function behaves as the C library's does, large blocks land in the arena (when the heap is
 * on; none when it is off), threads, fork and exec are safe, freed pages go back, and no
 * descriptor is left behind.  No MPI.
 *
 *   test_heap_alloc on|off [seconds of threaded torture]
 *   test_heap_alloc exec-child      (what the fork + exec case runs) */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../src/heap/nodecoll_heap.h"

static int failures;
#define CHECK(cond, ...)                                                          \
    do {                                                                          \
        if (!(cond)) {                                                            \
            failures++;                                                           \
            fprintf(stderr, "test_heap_alloc:%d: %s: ", __LINE__, #cond);         \
            fprintf(stderr, __VA_ARGS__);                                         \
            fputc('\n', stderr);                                                  \
        }                                                                         \
    } while (0)

static nc_heap_arena arena;
static int heap_on;
static size_t large; /* NODECOLL_HEAP_MIN as the test sets it */

static int in_arena(const void *p)
{
    return arena.base && (uintptr_t)p - (uintptr_t)arena.base < arena.size;
}

/* A large block is in the arena exactly when the heap is on. */
static void check_placed(const void *p, size_t bytes, const char *what)
{
    if (!p) return;
    int expected = heap_on && bytes >= large;
    CHECK(in_arena(p) == expected, "%s of %zu bytes at %p: %s the heap", what, bytes, p,
          expected ? "not in" : "in");
}

static void fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i += 61) p[i] = (unsigned char)(seed + i / 61);
    if (n) p[n - 1] = (unsigned char)(seed * 7);
}

static int filled(const unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i + 1 < n; i += 61) /* (the last byte has a mark of its own) */
        if (p[i] != (unsigned char)(seed + i / 61)) return 0;
    return !n || p[n - 1] == (unsigned char)(seed * 7);
}

/* What a realloc keeps: the first `kept` bytes of the pattern. */
static int prefix_filled(const unsigned char *p, size_t kept, unsigned seed)
{
    for (size_t i = 0; i + 1 < kept; i += 61)
        if (p[i] != (unsigned char)(seed + i / 61)) return 0;
    return 1;
}

static int zero(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i]) return 0;
    return 1;
}

/* ---- one function at a time ------------------------------------------------------------- */

static void test_functions(void)
{
    size_t sizes[] = {1, 100, large - 1, large, large + 1, 3 * large + 4097, (size_t)16 << 20};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t n = sizes[i];
        unsigned char *p = malloc(n);
        CHECK(p != NULL, "malloc(%zu)", n);
        check_placed(p, n, "malloc");
        CHECK(malloc_usable_size(p) >= n, "usable %zu < %zu", malloc_usable_size(p), n);
        fill(p, n, (unsigned)i);
        CHECK(filled(p, n, (unsigned)i), "malloc(%zu) lost its contents", n);
        free(p);
        /* calloc must zero, also pages a freed block left behind (kept for reuse) */
        p = malloc(n);
        memset(p, 0xab, n);
        free(p);
        p = calloc(1, n);
        CHECK(p && zero(p, n), "calloc(%zu) not zeroed", n);
        check_placed(p, n, "calloc");
        free(p);
    }
    free(NULL);
    errno = 12345;
    free(malloc(large));
    CHECK(errno == 12345, "free changed errno to %d", errno);
    volatile size_t huge = SIZE_MAX - 4096; /* (volatile: the compiler would refuse the calls) */
    errno = 0;
    CHECK(calloc(huge / 2, 4) == NULL && errno == ENOMEM, "calloc overflow: errno %d", errno);
    errno = 0;
    CHECK(malloc(huge) == NULL && errno == ENOMEM, "huge malloc: errno %d", errno);
    CHECK(malloc_usable_size(NULL) == 0, "malloc_usable_size(NULL)");
}

static void test_aligned(void)
{
    size_t aligns[] = {8, 16, 64, 128, 4096, 65536, (size_t)1 << 21};
    size_t sizes[] = {24, large, 5 * large + 123};
    for (size_t a = 0; a < sizeof aligns / sizeof aligns[0]; a++)
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            size_t al = aligns[a], n = sizes[s];
            void *p = NULL;
            CHECK(posix_memalign(&p, al, n) == 0 && (uintptr_t)p % al == 0, "posix_memalign(%zu, %zu) = %p", al, n, p);
            check_placed(p, n, "posix_memalign");
            fill(p, n, 3);
            CHECK(malloc_usable_size(p) >= n, "usable of an aligned block");
            free(p);
            p = aligned_alloc(al, n);
            CHECK(p && (uintptr_t)p % al == 0, "aligned_alloc(%zu, %zu) = %p", al, n, p);
            check_placed(p, n, "aligned_alloc");
            free(p);
            p = memalign(al, n);
            CHECK(p && (uintptr_t)p % al == 0, "memalign(%zu, %zu) = %p", al, n, p);
            free(p);
        }
    void *p = (void *)1;
    CHECK(posix_memalign(&p, 24, large) == EINVAL && p == (void *)1, "posix_memalign with alignment 24");
    p = valloc(large);
    CHECK(p && (uintptr_t)p % 4096 == 0, "valloc");
    check_placed(p, large, "valloc");
    free(p);
    p = pvalloc(large + 1);
    CHECK(p && (uintptr_t)p % 4096 == 0 && malloc_usable_size(p) >= large + 1, "pvalloc");
    free(p);
}

/* realloc across the threshold both ways keeps the contents and lands where the size says. */
static void test_realloc(void)
{
    size_t steps[] = {10, large / 2, large, 2 * large + 77, 40 * large, 3 * large, large - 1, 100, 0};
    unsigned char *p = realloc(NULL, steps[0]);
    fill(p, steps[0], 9);
    size_t have = steps[0];
    for (size_t i = 1; i < sizeof steps / sizeof steps[0]; i++) {
        size_t n = steps[i];
        unsigned char *q = realloc(p, n);
        if (!n) {
            CHECK(q == NULL, "realloc(p, 0) returns NULL (the C library frees)");
            break;
        }
        CHECK(q != NULL, "realloc to %zu", n);
        check_placed(q, n, "realloc");
        size_t kept = have < n ? have : n;
        CHECK(prefix_filled(q, kept, 9), "realloc %zu -> %zu lost contents", have, n);
        fill(q, n, 9);
        p = q;
        have = n;
    }
    /* growing in place where the next pages are free, and when they are not */
    unsigned char *a = malloc(2 * large), *b = malloc(2 * large);
    fill(a, 2 * large, 5);
    a = realloc(a, 6 * large);
    CHECK(prefix_filled(a, 2 * large, 5), "grown block lost contents");
    free(b);
    free(a);
}

/* ---- threads -------------------------------------------------------------------------------- */

typedef struct worker {
    unsigned seed, tag;
    double seconds;
    int errors;
} worker;

static void *torture(void *arg)
{
    worker *w = arg;
    enum { SLOTS = 24 };
    unsigned char *slot[SLOTS] = {0};
    size_t len[SLOTS] = {0};
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (unsigned iter = 0;; iter++) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) * 1e-9 > w->seconds) break;
        unsigned k = (unsigned)rand_r(&w->seed) % SLOTS, op = (unsigned)rand_r(&w->seed) % 4;
        size_t n = (size_t)rand_r(&w->seed) % (op == 3 ? 64 : 4 * large) + 1;
        if (slot[k] && !filled(slot[k], len[k], k + w->tag)) w->errors++;
        if (op == 0 || !slot[k]) {
            free(slot[k]);
            slot[k] = op == 1 ? calloc(n, 1) : malloc(n);
        } else if (op == 1) {
            unsigned char *q = realloc(slot[k], n);
            size_t kept = len[k] < n ? len[k] : n;
            if (q && !prefix_filled(q, kept, k + w->tag)) w->errors++;
            slot[k] = q;
        } else {
            free(slot[k]);
            void *p = NULL;
            if (posix_memalign(&p, (size_t)64 << (rand_r(&w->seed) % 8), n)) p = NULL;
            slot[k] = p;
        }
        len[k] = slot[k] ? n : 0;
        if (slot[k]) fill(slot[k], n, k + w->tag);
    }
    for (int k = 0; k < SLOTS; k++) free(slot[k]);
    return NULL;
}

static void test_threads(double seconds)
{
    enum { THREADS = 4 };
    pthread_t t[THREADS];
    worker w[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker){(unsigned)(i * 7919 + 1), (unsigned)i * 31, seconds, 0};
        pthread_create(&t[i], NULL, torture, &w[i]);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        CHECK(w[i].errors == 0, "thread %d saw %d corrupted blocks", i, w[i].errors);
    }
}

/* ---- fork and exec --------------------------------------------------------------------------- */

/* The child sees the parent's blocks as they were at fork, and nothing either writes after it
 * reaches the other; the child's own heap works (and is not shared). */
static void test_fork(void)
{
    size_t n = 4 * large;
    unsigned char *mine = malloc(n);
    fill(mine, n, 41);
    int to_child[2], to_parent[2];
    if (pipe(to_child) || pipe(to_parent)) return;
    pid_t pid = fork();
    if (pid == 0) {
        char go;
        int bad = !filled(mine, n, 41);
        if (read(to_child[0], &go, 1) != 1) _exit(2);
        bad |= !filled(mine, n, 41) << 1; /* the parent wrote meanwhile */
        fill(mine, n, 99);
        unsigned char *more = malloc(n);
        fill(more, n, 17);
        bad |= !filled(more, n, 17) << 2;
        more = realloc(more, 3 * n);
        bad |= !prefix_filled(more, n, 17) << 3;
        free(more);
        if (write(to_parent[1], "x", 1) != 1) _exit(2);
        _exit(bad);
    }
    fill(mine, n, 42);
    if (write(to_child[1], "x", 1) != 1) return;
    char done;
    if (read(to_parent[0], &done, 1) != 1) done = 0;
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "forked child: status %d (bits: 1 copy wrong, 2 parent's write seen, 4/8 child's own heap)", status);
    CHECK(filled(mine, n, 42), "the child's write reached the parent");
    free(mine);
    close(to_child[0]);
    close(to_child[1]);
    close(to_parent[0]);
    close(to_parent[1]);
}

static void test_fork_exec(const char *self)
{
    unsigned char *held = malloc(8 * large);
    fill(held, 8 * large, 3);
    pid_t pid = fork();
    if (pid == 0) {
        execl(self, self, "exec-child", (char *)NULL);
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "fork + exec: status %d", status);
    CHECK(filled(held, 8 * large, 3), "parent's block after fork + exec");
    free(held);
}

/* A program started by exec from a process holding heap blocks: its own heap starts afresh,
 * and it inherited no descriptor of its parent's. */
static int exec_child(void)
{
    char link[64], target[256];
    for (int fd = 3; fd < 1024; fd++) {
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        ssize_t n = readlink(link, target, sizeof target - 1);
        if (n <= 0) continue;
        target[n] = '\0';
        if (strstr(target, "nodecoll-heap") || strstr(target, "socket:")) {
            fprintf(stderr, "exec child inherited fd %d -> %s\n", fd, target);
            return 1;
        }
    }
    unsigned char *p = malloc((size_t)1 << 20);
    fill(p, (size_t)1 << 20, 8);
    int ok = filled(p, (size_t)1 << 20, 8);
    free(p);
    return ok ? 0 : 1;
}

/* ---- memory and descriptors -------------------------------------------------------------------- */

/* Beyond NODECOLL_HEAP_RETAIN (the test sets 1 MiB) freed pages go back to the system. */
static void test_release(void)
{
    if (!heap_on) return;
    size_t n = (size_t)8 << 20, page = 4096;
    unsigned char *p = malloc(n);
    memset(p, 1, n);
    char *first = (char *)((uintptr_t)p / page * page);
    free(p);
    unsigned char resident[2048];
    size_t pages = n / page < sizeof resident ? n / page : sizeof resident;
    CHECK(mincore(first + page, pages * page, resident) == 0, "mincore");
    size_t kept = 0;
    for (size_t i = 0; i < pages; i++) kept += resident[i] & 1;
    CHECK(kept * page <= ((size_t)1 << 20) + page, "%zu KiB of a freed 8 MiB block still resident", kept * page >> 10);
}

static int count_fds(void)
{
    int n = 0;
    char link[64];
    for (int fd = 0; fd < 1024; fd++) {
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        n += access(link, F_OK) == 0;
    }
    return n;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "exec-child")) return exec_child();
    heap_on = argc > 1 && !strcmp(argv[1], "on");
    double seconds = argc > 2 ? atof(argv[2]) : 1.0;
    const char *min = getenv("NODECOLL_HEAP_MIN");
    large = min ? (size_t)strtoull(min, NULL, 10) : (size_t)131072;
    const nc_heap_api *api = dlsym(RTLD_DEFAULT, NC_HEAP_API_SYMBOL);
    if (!api) {
        fprintf(stderr, "test_heap_alloc: libnodecoll-heap.so is not preloaded\n");
        return 1;
    }
    CHECK(api->interposed() == heap_on, "interposed() says %d", api->interposed());
    free(malloc(large)); /* (the arena is created by the first large block when on) */
    if (heap_on) CHECK(api->arena(&arena) == 0, "no arena");
    int fds = count_fds();
    test_functions();
    test_aligned();
    test_realloc();
    test_threads(seconds);
    test_release();
    test_fork();
    test_fork_exec(argv[0]);
    CHECK(count_fds() == fds, "descriptors: %d before, %d after", fds, count_fds());
    printf("test_heap_alloc %s: %d failures\n", heap_on ? "on" : "off", failures);
    return failures != 0;
}
