/* nodecoll-bench-allocs: what one large allocation costs a program, with the C library's
 * allocator and with the shared heap (run it with libnodecoll-heap.so preloaded and
 * NODECOLL_HEAP=on, NODECOLL_HEAP_RETAIN as wanted): malloc + free of a block, and malloc +
 * writing every byte + free (a fresh page faults; a kept one does not), the best of five
 * batches per size; then malloc and free at random among ~2000 live blocks of 128-576 KiB
 * (many free extents for the heap to search).  No MPI.  docs/tuning.md, "Shared heap", has the figures behind
 * NODECOLL_HEAP_RETAIN and NODECOLL_HEAP_MIN. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Microseconds per cycle of the best batch of `k` cycles of `bytes`, written or not. */
static double cycle_us(size_t bytes, int k, int write)
{
    double best = 1e30;
    for (int batch = 0; batch < 5; batch++) {
        double t0 = now_s();
        for (int i = 0; i < k; i++) {
            char *p = malloc(bytes);
            if (!p) return -1;
            if (write) memset(p, i, bytes);
            else p[0] = (char)i;
            __asm__ volatile("" ::"r"(p) : "memory"); /* (the block must really be made) */
            free(p);
        }
        double t = (now_s() - t0) / k;
        best = t < best ? t : best;
    }
    return best * 1e6;
}

/* Microseconds per malloc or free at random among `live` blocks of 128 KiB + 0-7 x 64 KiB,
 * after every other block of twice as many was freed (holes everywhere). */
static double churn_us(int live)
{
    enum { CYCLES = 100000 };
    char **slot = calloc(2 * (size_t)live, sizeof *slot);
    unsigned seed = 1;
    for (int i = 0; i < 2 * live; i++) slot[i] = malloc(((size_t)128 << 10) + (size_t)(rand_r(&seed) % 8) * 65536);
    for (int i = 0; i < 2 * live; i += 2) {
        free(slot[i]);
        slot[i] = NULL;
    }
    double t0 = now_s();
    for (int i = 0; i < CYCLES; i++) {
        int j = rand_r(&seed) % (2 * live);
        if (slot[j]) {
            free(slot[j]);
            slot[j] = NULL;
        } else {
            slot[j] = malloc(((size_t)128 << 10) + (size_t)(rand_r(&seed) % 8) * 65536);
        }
    }
    double t = (now_s() - t0) / CYCLES * 1e6;
    for (int i = 0; i < 2 * live; i++) free(slot[i]);
    free(slot);
    return t;
}

int main(void)
{
    static const size_t sizes[] = {(size_t)64 << 10, (size_t)256 << 10, (size_t)1 << 20, (size_t)4 << 20,
                                   (size_t)16 << 20};
    printf("%10s %18s %26s\n", "bytes", "malloc+free us", "malloc+write+free us");
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t n = sizes[i];
        int k = (int)(((size_t)256 << 20) / n);
        k = k > 2000 ? 2000 : k;
        printf("%10zu %18.2f %26.2f\n", n, cycle_us(n, k, 0), cycle_us(n, k, 1));
    }
    printf("malloc or free at random among ~2000 live blocks of 128-576 KiB: %.2f us\n", churn_us(2000));
    return 0;
}
