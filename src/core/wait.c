#include "wait.h"

#include <sched.h>
#include <string.h>
#include <stdint.h>
#include <time.h>

/* Threads of this process spinning right now: beyond the policy's share of the cores the
 * waiters would spin on cores the threads they wait for need, so the rest yield at once. */
static _Atomic int spinning;

static int spin_a_while(const nc_flag *f, uint64_t target, const nc_wait_policy *p)
{
    int seen = 0;
    if (atomic_fetch_add_explicit(&spinning, 1, memory_order_relaxed) < p->spinners)
        for (int i = 0, until_poll = 1; i < p->spin && !seen; i++) {
            nc_cpu_relax();
            if (--until_poll) continue;
            until_poll = p->gap;
            seen = nc_flag_read(f) >= target;
            if (i + until_poll >= p->spin) break; /* (no poll left: pausing on would be idle) */
        }
    atomic_fetch_sub_explicit(&spinning, 1, memory_order_relaxed);
    return seen;
}

/* A watched wait's clock: started at its first look (after the first yield, so a wait that
 * ends there never reads it), and when report and check are due, in ns since that start. */
typedef struct watch_clock {
    int64_t start, report_at, check_at;
} watch_clock;

/* Polls of the yield phase between looks at the clock: a clock read costs a few hundredths
 * of a sched_yield (docs/results-costs.md), so one look per 16 yields is noise; each
 * sleeping poll looks. */
#define NC_WATCH_YIELDS_PER_LOOK 16

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void watch_look(nc_wait_watch *w, const nc_flag *f, uint64_t target, watch_clock *clk)
{
    int64_t now = now_ns();
    if (!clk->start) {
        clk->start = now;
        clk->report_at = w->report_ns > 0 ? w->report_ns : INT64_MAX;
        clk->check_at = w->check_ns > 0 ? w->check_ns : INT64_MAX;
        return;
    }
    int64_t waited = now - clk->start;
    if (waited >= clk->report_at) {
        clk->report_at = INT64_MAX;
        w->report(w, f, target, waited);
    }
    if (waited >= clk->check_at) {
        clk->check_at = waited + w->check_ns;
        w->check(w, f, target, waited);
    }
}

void nc_wait_slow(const nc_flag *f, uint64_t target, const nc_wait_policy *p)
{
    if (p->spin && spin_a_while(f, target, p)) return;
    watch_clock clk = {0};
    for (long y = 0;; y++) {
        int sleeping = p->yields && y >= p->yields;
        if (!sleeping) {
            sched_yield();
        } else {
            struct timespec ts = {0, (long)p->sleep_us * 1000L};
            nanosleep(&ts, NULL);
        }
        if (nc_flag_read(f) >= target) return;
        if (p->idle) {
            p->idle(NULL);
            if (nc_flag_read(f) >= target) return;
        }
        if (p->watch && (sleeping || y % NC_WATCH_YIELDS_PER_LOOK == 0)) watch_look(p->watch, f, target, &clk);
    }
}

nc_wait_policy nc_wait_policy_make(int64_t spin, int64_t yields, int64_t sleep_us, int oversubscribed)
{
    nc_wait_policy p;
    p.spin = spin >= 0 ? (int)spin : (oversubscribed ? 0 : 4000);
    p.yields = (int)yields;
    p.sleep_us = (int)sleep_us;
    p.spinners = 1;
    p.watch = NULL;
    p.idle = NULL;
    p.gap = 1;
    return p;
}

int nc_cpu_mask(uint64_t mask[NC_CPU_WORDS])
{
    memset(mask, 0, sizeof(uint64_t) * NC_CPU_WORDS);
    _Static_assert(sizeof(unsigned long) == sizeof(uint64_t), "a CPU mask word is a long");
    return sched_getaffinity(0, sizeof(uint64_t) * NC_CPU_WORDS, (cpu_set_t *)(void *)mask) == 0;
}

int nc_cpu_count(const uint64_t mask[NC_CPU_WORDS])
{
    int n = 0;
    for (int w = 0; w < NC_CPU_WORDS; w++) n += __builtin_popcountll(mask[w]);
    return n;
}
