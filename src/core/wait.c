#include "wait.h"

#include <sched.h>
#include <time.h>

/* Threads of this process spinning right now: beyond the policy's share of the cores the
 * waiters would spin on cores the threads they wait for need, so the rest yield at once. */
static _Atomic int spinning;

static int spin_a_while(const nc_flag *f, uint64_t target, const nc_wait_policy *p)
{
    int seen = 0;
    if (atomic_fetch_add_explicit(&spinning, 1, memory_order_relaxed) < p->spinners)
        for (int i = 0; i < p->spin && !seen; i++) {
            nc_cpu_relax();
            seen = nc_flag_read(f) >= target;
        }
    atomic_fetch_sub_explicit(&spinning, 1, memory_order_relaxed);
    return seen;
}

void nc_wait_slow(const nc_flag *f, uint64_t target, const nc_wait_policy *p)
{
    if (p->spin && spin_a_while(f, target, p)) return;
    for (long y = 0;; y++) {
        if (p->yields == 0 || y < p->yields) {
            sched_yield();
        } else {
            struct timespec ts = {0, (long)p->sleep_us * 1000L};
            nanosleep(&ts, NULL);
        }
        if (nc_flag_read(f) >= target) return;
    }
}

nc_wait_policy nc_wait_policy_make(int64_t spin, int64_t yields, int64_t sleep_us, int oversubscribed)
{
    nc_wait_policy p;
    p.spin = spin >= 0 ? (int)spin : (oversubscribed ? 0 : 4000);
    p.yields = (int)yields;
    p.sleep_us = (int)sleep_us;
    p.spinners = 1;
    return p;
}
