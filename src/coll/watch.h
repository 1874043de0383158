/* Long waits on a node's flags.  With NODECOLL_WAIT_REPORT a rank that has waited that long
 * for one flag prints, once per call, what it waits for: its call, the rank that owns the
 * flag, the flag's name and value, and the call that rank entered last.  With
 * NODECOLL_PEER_CHECK it checks every NC_PEER_CHECK_MS of such a wait that the owner still
 * lives (core/alive.h), and when it has died says so and stops the job through the
 * adapter's abort action.  Nothing here runs unless a wait has reached the yield phase and
 * lasted that long (core/wait.h). */
#ifndef NC_WATCH_H
#define NC_WATCH_H

#include "comm.h"

/* The first liveness check comes after a wait of this long, then one each as long again:
 * far above any healthy wait on a node, and one /proc read (about 10 us,
 * docs/results-costs.md) per 200 ms of waiting costs a sleeping waiter nothing noticeable,
 * while a death is caught within a blink. */
#define NC_PEER_CHECK_MS 200

/* Points the node's waits at c->watch, per c->cfg (nothing when both settings are off).
 * Call once every rank of the node has published its info line, while all are alive.
 * abort_job must not return; if it does, the process aborts alone. */
void nc_watch_start(nc_comm *c, void (*abort_job)(void));
void nc_watch_stop(nc_comm *c);

/* A single-copy transfer with node rank `peer` failed with errno `err` although it passed
 * the setup probe.  A peer that has died (ESRCH) is reported as a death found in a wait is,
 * and the job stopped; anything else is fatal.  Never returns. */
_Noreturn void nc_single_copy_failed(nc_comm *c, int peer, const char *what, int err);
/* Single-copy transfer with node rank `peer` (it passed the setup probe); a failure now
 * aborts, as the other ranks are already committed to the algorithm: nc_single_copy_failed. */
void nc_node_single_copy_or_die(nc_comm *c, int peer, char *remote, char *local, size_t len, int write);

#endif
