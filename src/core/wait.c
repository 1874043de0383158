#include "wait.h"

#include <sched.h>
#include <time.h>

void nc_wait_slow(const nc_flag *f, uint64_t target, const nc_wait_policy *p)
{
    for (int i = 0; i < p->spin; i++) {
        nc_cpu_relax();
        if (nc_flag_read(f) >= target) return;
    }
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
    return p;
}
