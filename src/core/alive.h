/* Whether another process of the machine still lives, judged from /proc without false
 * positives.
 *
 * A pid alone cannot say so: pids are reused, and ranks in different pid namespaces
 * (containers sharing /dev/shm) see each other's pids as other processes or not at all.  A
 * process is therefore named by its pid, its start time (field 22 of /proc/<pid>/stat, clock
 * ticks since boot, fixed for the process's life) and its pid namespace.  Another process
 * may be judged only from the same pid namespace, and only if this process's /proc showed it
 * alive under that name once (so a /proc that hides it, hidepid, never reads as a death). */
#ifndef NC_ALIVE_H
#define NC_ALIVE_H

#include <stdint.h>

typedef struct nc_proc_id {
    uint64_t pid;
    uint64_t start;         /* 0: unknown (no /proc, or a /proc of another pid namespace) */
    uint64_t ns_dev, ns_ino; /* stat of /proc/self/ns/pid; 0: unknown */
} nc_proc_id;

typedef enum { NC_PROC_ALIVE, NC_PROC_DEAD, NC_PROC_UNKNOWN } nc_proc_state;

/* This process (read from /proc at each call: for setup, not for a loop). */
nc_proc_id nc_proc_self(void);

/* What this process's /proc says of `p` now.  DEAD only when its pid is gone, belongs to a
 * process started at another time, or is a zombie with no thread left; `why` (may be NULL)
 * then says which.  Cheap: one open and read of /proc/<pid>/stat. */
nc_proc_state nc_proc_look(const nc_proc_id *p, const char **why);

/* Whether nc_proc_look may judge `p` from process `self`: both identities known, the same
 * pid namespace, and `p` seen alive now.  Call while `p` is known to live (at setup). */
int nc_proc_watchable(const nc_proc_id *self, const nc_proc_id *p);

#endif
