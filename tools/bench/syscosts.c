/*
 * nodecoll-syscosts: what the operating system charges for the few things nodecoll's design
 * avoids or rations (docs/results-costs.md):
 *   - first touch of a page (why scratch memory is kept between calls, and why the benchmark
 *     writes its buffers before timing them),
 *   - a clock read and a sched_yield (how often a yielding wait looks at the clock),
 *   - a read of /proc/<pid>/stat (how often a long wait checks that its peer still lives).
 * One process, no MPI.  Each figure is the best of several batches: noise only adds time.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define BATCHES 9

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef void batch_fn(long n);

/* Nanoseconds per item: the fastest of BATCHES batches of n items. */
static double best_ns(batch_fn *fn, long n)
{
    double best = 1e30;
    for (int b = 0; b < BATCHES; b++) {
        double t0 = now_s();
        fn(n);
        double t = (now_s() - t0) / (double)n * 1e9;
        best = t < best ? t : best;
    }
    return best;
}

/* n fresh pages, one byte written in each, then returned to the system. */
static void touch_pages(long n)
{
    long page = sysconf(_SC_PAGESIZE);
    char *p = mmap(NULL, (size_t)(n * page), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    for (long i = 0; i < n; i++) ((volatile char *)p)[i * page] = 1;
    munmap(p, (size_t)(n * page));
}

static void read_clock(long n)
{
    struct timespec ts;
    for (long i = 0; i < n; i++) clock_gettime(CLOCK_MONOTONIC, &ts);
}

static void yield(long n)
{
    for (long i = 0; i < n; i++) sched_yield();
}

/* What a liveness check reads: open, read and close a process's stat file. */
static void read_stat(long n)
{
    char path[64], line[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)getppid());
    for (long i = 0; i < n; i++) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0 || read(fd, line, sizeof line) <= 0) {
            perror(path);
            exit(1);
        }
        close(fd);
    }
}

int main(void)
{
    printf("# nodecoll-syscosts: nanoseconds per item, best of %d batches\n", BATCHES);
    printf("first touch of a %ld-byte page  %10.0f\n", sysconf(_SC_PAGESIZE), best_ns(touch_pages, 4096));
    printf("clock_gettime(MONOTONIC)        %10.1f\n", best_ns(read_clock, 100000));
    printf("sched_yield                     %10.0f\n", best_ns(yield, 100000));
    printf("read of /proc/<pid>/stat        %10.0f\n", best_ns(read_stat, 2000));
    return 0;
}
