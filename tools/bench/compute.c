/*
 * The computation --overlap runs between posting a collective and waiting for it: a busy
 * loop that calls no MPI (so it cannot progress either library).  It runs in chunks of
 * about a sixteenth of the requested time, sized by a calibration made once per rank before
 * the sweep, and reads the clock between chunks until the requested time has passed: a
 * calibration that came out slow (a core shared with another job at the time) must not make
 * every later computation short.  What counts is the time it actually took, which
 * compute_spin returns.
 */
#include "bench.h"

#define CALIBRATION_S 1e-3 /* one calibration run lasts at least this long */
#define CALIBRATION_RUNS 5
#define CHUNKS 16          /* clock reads per computation, about */
#define CHUNK_MAX_S 1e-6   /* ... but no chunk longer than this */

static volatile double sink;  /* keeps the loop's result alive */
static double iters_per_s = 1e9;

/* A chain of dependent floating-point steps: without -ffast-math the compiler may neither
 * shorten nor vectorise it, so its time is proportional to iters. */
static void spin(long iters)
{
    double x = sink;
    for (long i = 0; i < iters; i++) x = x * 0.999999 + 1e-7;
    sink = x;
}

static double time_spin(long iters)
{
    double t0 = now_s();
    spin(iters);
    return now_s() - t0;
}

/* The fastest of a few runs: preemption only ever makes a run slower. */
void compute_calibrate(void)
{
    long iters = 1024;
    while (time_spin(iters) < CALIBRATION_S) iters *= 2;
    double best = time_spin(iters);
    for (int i = 1; i < CALIBRATION_RUNS; i++) best = dmin(best, time_spin(iters));
    iters_per_s = (double)iters / best;
}

/* Spins for at least `seconds` (overshooting by about a chunk); returns the seconds it
 * took. */
double compute_spin(double seconds)
{
    long chunk = (long)(dmin(seconds / CHUNKS, CHUNK_MAX_S) * iters_per_s) + 1;
    double t0 = now_s(), t;
    do {
        spin(chunk);
        t = now_s();
    } while (t - t0 < seconds);
    return t - t0;
}
