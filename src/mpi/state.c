#include "state.h"

#include "bridge.h"
#include "neighbor_lists.h"
#include "request.h"

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nodecoll.h"
#include "../core/cma.h"
#include "../core/fatal.h"
#include "../core/segment.h"
#include "../coll/engine.h"
#include "../coll/heap_only.h"
#include "../coll/move.h"
#include "../coll/watch.h"
#include <sys/mman.h>

static int comm_keyval = MPI_KEYVAL_INVALID;
static pthread_once_t keyval_once = PTHREAD_ONCE_INIT;
/* Only creation and destruction touch the list of live states; collectives never lock. */
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static nc_mpi_comm *live;

/* Written once, then read by peers at setup to prove they may read our memory. */
static uint64_t probe_word;
static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
static void set_probe_word(void) { probe_word = (uint64_t)getpid() * 0x9e3779b97f4a7c15ULL; }

/* Under MPI_THREAD_MULTIPLE both host MPIs take a process-wide lock in attribute lookups.
 * Each thread therefore remembers the states it used last; freeing any communicator that
 * has a state bumps the generation, which forgets every remembered entry, so a handle
 * reused by a new communicator can never find an old state. */
_Atomic uint64_t nc_mpi_state_generation;
#define state_generation nc_mpi_state_generation
NC_HOT_TLS nc_mpi_recent nc_mpi_last_state;
typedef struct remembered_state {
    MPI_Comm comm;
    nc_mpi_comm *state;
    uint64_t generation;
} remembered_state;
#define NC_REMEMBERED_STATES 8
static _Thread_local remembered_state remembered[NC_REMEMBERED_STATES];
static _Thread_local unsigned remembered_next;

static nc_mpi_comm *recall_state(MPI_Comm comm)
{
    uint64_t now = atomic_load_explicit(&state_generation, memory_order_acquire);
    for (int i = 0; i < NC_REMEMBERED_STATES; i++)
        if (remembered[i].comm == comm && remembered[i].generation == now && remembered[i].state)
            return remembered[i].state;
    return NULL;
}

static void remember_state(MPI_Comm comm, nc_mpi_comm *s)
{
    uint64_t now = atomic_load_explicit(&state_generation, memory_order_acquire);
    remembered[remembered_next++ % NC_REMEMBERED_STATES] = (remembered_state){comm, s, now};
}

static void destroy(nc_mpi_comm *s);
static nc_mpi_comm *lookup_state(MPI_Comm comm, nc_alg_id *why);

static int delete_state(MPI_Comm comm, int keyval, void *value, void *extra)
{
    destroy(value);
    return MPI_SUCCESS;
}

/* nodecoll's own MPI_COMM_SELF: no program message ever matches on it, and its errors return. */
static MPI_Comm own_self = MPI_COMM_NULL;

/* A receive nothing ever matches: testing it drives the host's whole progress engine (Open
 * MPI's opal_progress, MPICH's progress test).  A probe would not do: MPICH 4.0 answers a
 * probe on a one-rank communicator without its progress engine.  One thread tests it at a
 * time (MPI forbids two), the others skip. */
static MPI_Request poke_request = MPI_REQUEST_NULL;
static int poke_sink;
static atomic_flag poking = ATOMIC_FLAG_INIT;

static void poke_host(void)
{
    if (atomic_flag_test_and_set_explicit(&poking, memory_order_acquire)) return;
    int done = 0;
    PMPI_Test(&poke_request, &done, MPI_STATUS_IGNORE);
    atomic_flag_clear_explicit(&poking, memory_order_release);
}

static void create_keyval(void)
{
    /* Not copied on MPI_Comm_dup: a duplicate builds its own state (and segment) lazily. */
    PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_state, &comm_keyval, NULL);
    if (PMPI_Comm_dup(MPI_COMM_SELF, &own_self) != MPI_SUCCESS) return;
    PMPI_Comm_set_errhandler(own_self, MPI_ERRORS_RETURN);
    if (PMPI_Irecv(&poke_sink, 1, MPI_INT, 0, 0, own_self, &poke_request) == MPI_SUCCESS)
        nc_engine_set_host_poke(poke_host);
}

MPI_Comm nc_mpi_own_self(void)
{
    pthread_once(&keyval_once, create_keyval);
    return own_self;
}

void nc_mpi_fallback(nc_coll_id coll, nc_alg_id reason) { nc_stats_count(coll, reason, 0); }

int nc_mpi_raise(MPI_Comm comm, int err)
{
    if (err == NC_TRUNCATED) err = MPI_ERR_TRUNCATE;
    if (err != MPI_SUCCESS) PMPI_Comm_call_errhandler(comm, err);
    return err;
}

static void say(const nc_config *cfg, int level, MPI_Comm comm, const char *what)
{
    int rank = -1;
    if (cfg->verbose < level) return;
    PMPI_Comm_rank(comm, &rank);
    fprintf(stderr, "nodecoll[%d]: %s\n", rank, what);
}

/* ---- setup ------------------------------------------------------------------------- */

static int all_agree(int ok, MPI_Comm comm)
{
    int all = 0;
    PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm);
    return all;
}

/* Cores the ranks of a machine may run on, together: the union of their CPU masks, so that
 * a cpuset or a binding that puts ranks on fewer cores than are online counts as
 * oversubscription (each rank's spinning would otherwise cost its partner a time slice).
 * Never more than are online; all of them where a rank's system does not say. */
static long usable_cores(MPI_Comm physical)
{
    uint64_t mask[NC_CPU_WORDS];
    if (!nc_cpu_mask(mask)) memset(mask, 0xff, sizeof mask);
    PMPI_Allreduce(MPI_IN_PLACE, mask, NC_CPU_WORDS, MPI_UINT64_T, MPI_BOR, physical);
    long n = nc_cpu_count(mask), online = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 && (online <= 0 || n < online) ? n : online;
}

/* node = ranks sharing memory, optionally cut into emulated nodes. */
static int split_node(nc_mpi_comm *s, MPI_Comm comm, int *physical_size, long *cores)
{
    MPI_Comm physical;
    int rank, size;
    PMPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &physical);
    PMPI_Comm_rank(physical, &rank);
    PMPI_Comm_size(physical, &size);
    *physical_size = size;
    *cores = usable_cores(physical);
    int color = nc_emulated_node(s->coll.cfg.ranks_per_node, s->coll.cfg.node_map, rank, size);
    if (color < 0) {
        s->node_comm = physical;
    } else {
        PMPI_Comm_split(physical, color, rank, &s->node_comm);
        PMPI_Comm_free(&physical);
    }
    PMPI_Comm_set_errhandler(s->node_comm, MPI_ERRORS_RETURN);
    PMPI_Comm_rank(s->node_comm, &s->coll.node.rank);
    PMPI_Comm_size(s->node_comm, &s->coll.node.size);
    return MPI_SUCCESS;
}

/* bridge = one leader (node rank 0) per node; every rank learns every rank's node and
 * rank within it, which handles any placement of ranks on nodes. */
static int build_bridge_and_tables(nc_mpi_comm *s, MPI_Comm comm)
{
    nc_comm *c = &s->coll;
    int leader = c->node.rank == 0;
    PMPI_Comm_split(comm, leader ? 0 : MPI_UNDEFINED, c->rank, &s->bridge_comm);
    int mine[2] = {0, c->node.rank}, bridge_size = 1;
    if (leader) {
        PMPI_Comm_set_errhandler(s->bridge_comm, MPI_ERRORS_RETURN);
        PMPI_Comm_rank(s->bridge_comm, &mine[0]);
        PMPI_Comm_size(s->bridge_comm, &bridge_size);
    }
    int shared[2] = {mine[0], bridge_size};
    PMPI_Bcast(shared, 2, MPI_INT, 0, s->node_comm);
    mine[0] = shared[0];
    int *table = malloc(sizeof(int) * 2 * (size_t)c->size);
    c->node_of = malloc(sizeof(int) * (size_t)c->size);
    c->node_rank_of = malloc(sizeof(int) * (size_t)c->size);
    if (!table || !c->node_of || !c->node_rank_of) nc_fatal("out of memory for rank tables");
    PMPI_Allgather(mine, 2, MPI_INT, table, 2, MPI_INT, comm);
    for (int r = 0; r < c->size; r++) {
        c->node_of[r] = table[2 * r];
        c->node_rank_of[r] = table[2 * r + 1];
    }
    free(table);
    /* Node-sorted order: members of node 0 by node rank, then node 1, ... (counting sort). */
    c->node_start = calloc((size_t)shared[1] + 1, sizeof(int));
    c->node_members = malloc(sizeof(int) * (size_t)c->size);
    if (!c->node_start || !c->node_members) nc_fatal("out of memory for rank tables");
    for (int r = 0; r < c->size; r++) c->node_start[c->node_of[r] + 1]++;
    for (int k = 0; k < shared[1]; k++) c->node_start[k + 1] += c->node_start[k];
    for (int r = 0; r < c->size; r++)
        c->node_members[c->node_start[c->node_of[r]] + c->node_rank_of[r]] = r;
    if (shared[1] > 1) { /* a split, not a dup: the user's attribute copy callbacks must not run */
        PMPI_Comm_split(comm, 0, c->rank, &s->private_comm);
        PMPI_Comm_set_errhandler(s->private_comm, MPI_ERRORS_RETURN);
    }
    c->bridge = nc_mpi_bridge(&s->bridge_comm, &s->private_comm, shared[1], leader ? mine[0] : -1);
    return MPI_SUCCESS;
}

/* Every rank reads every other rank's probe word once: single-copy is used only if all can. */
static int probe_single_copy(nc_node *n)
{
    uint64_t got;
    for (int r = 0; r < n->size; r++) {
        nc_rank_info peer = nc_rank_info_read(nc_node_ctl(n, r));
        if (r == n->rank) continue;
        if (nc_cma_read(n->peers[r].pid, (const void *)(uintptr_t)peer.probe_addr, &got, sizeof got) ||
            got != peer.probe_word)
            return 0;
    }
    return 1;
}

static void alloc_node_state(nc_comm *c, int oversubscribed)
{
    nc_node *n = &c->node;
    n->wait = nc_wait_policy_make(c->cfg.wait_spin, c->cfg.wait_yields, c->cfg.wait_sleep_us, oversubscribed);
    n->peers = calloc((size_t)n->size, sizeof *n->peers);
    n->slot_use = calloc((size_t)n->layout.nseg, sizeof *n->slot_use);
    n->cons_seen = calloc((size_t)n->size, sizeof *n->cons_seen);
    n->move_readers = calloc((size_t)n->size, sizeof *n->move_readers);
    if (!n->peers || !n->slot_use || !n->cons_seen || !n->move_readers) nc_fatal("out of memory for node state");
}

/* A node of one rank shares nothing, but the algorithms still publish to (and read from)
 * themselves: its "segment" is private anonymous memory (pages appear only when touched). */
static int map_private_node(nc_mpi_comm *s)
{
    nc_comm *c = &s->coll;
    nc_node *n = &c->node;
    n->layout = nc_layout_make(1, (size_t)c->cfg.segment_size, (int)c->cfg.segments, nc_move_area_bytes(c));
    void *p = mmap(NULL, n->layout.total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return 0;
    n->base = p;
    s->private_node = 1;
    alloc_node_state(c, 0);
    n->peers[0].pid = getpid();
    return 1;
}

static int topo_levels(const nc_config *cfg)
{
    return cfg->topo_levels < 0 ? NC_TOPO_AUTO_LEVELS : (int)cfg->topo_levels;
}

/* The node's groups from every rank's published place (core/hier.h); none when flat. */
static void group_by_topology(nc_mpi_comm *s)
{
    nc_comm *c = &s->coll;
    nc_node *n = &c->node;
    nc_topo_loc *locs = malloc(sizeof *locs * (size_t)n->size);
    if (!locs) return; /* (flat: still correct) */
    for (int r = 0; r < n->size; r++) locs[r] = nc_rank_info_read(nc_node_ctl(n, r)).loc;
    n->hier = nc_hier_build(locs, n->size, topo_levels(&c->cfg));
    free(locs);
    if (c->cfg.verbose >= 2 && n->hier) {
        char what[200];
        int at = snprintf(what, sizeof what, "node rank %d: topology groups", n->rank);
        for (int l = 1; l <= n->hier->depth && at < (int)sizeof what; l++)
            at += snprintf(what + at, sizeof what - (size_t)at, " %s:%d", nc_topo_level_names[n->hier->level[l - 1]],
                           n->hier->ngroups[l]);
        say(&c->cfg, 2, s->comm, what);
    }
}

/* What a rank does when a rank it waits for has died (coll/watch.h): MPI_Abort on the
 * world, since one dead rank dooms every communicator of the job.  Both launchers end the
 * whole job on MPI_Abort even when told to keep it going after a rank dies (Open MPI's
 * --enable-recovery, MPICH's -disable-auto-cleanup), where this rank's own exit would be
 * one more failed process and the ranks of other nodes would wait on. */
static void abort_job(void) { PMPI_Abort(MPI_COMM_WORLD, 1); }

/* Maps the node's segment: the leader creates it, everyone reserves and first-touches its
 * own part, and the name is unlinked as soon as all have mapped it, so no exit path (even
 * SIGKILL) can leave it behind.  Returns 1 if the whole node succeeded. */
static int map_segment(nc_mpi_comm *s, int oversubscribed, int cores_per_rank)
{
    nc_comm *c = &s->coll;
    nc_node *n = &c->node;
    n->layout = nc_layout_make(n->size, (size_t)c->cfg.segment_size, (int)c->cfg.segments, nc_move_area_bytes(c));
    int ok = nc_segment_mapped_bytes() + n->layout.total <= (size_t)c->cfg.shm_cap;
    if (!all_agree(ok, s->node_comm)) {
        say(&c->cfg, 1, s->comm, "NODECOLL_SHM_CAP reached: this communicator uses the host MPI");
        return 0;
    }
    char name[NC_SEGMENT_NAME_MAX] = "";
    int fd = -1;
    if (n->rank == 0) {
        nc_segment_sweep_stale();
        if (nc_segment_create(&n->layout, name, &fd, &n->base)) name[0] = '\0';
    }
    PMPI_Bcast(name, sizeof name, MPI_CHAR, 0, s->node_comm);
    ok = name[0] != '\0';
    if (ok && n->rank != 0) ok = nc_segment_attach(name, &n->layout, &fd, &n->base) == 0;
    if (ok) ok = nc_segment_claim(fd, n->base, &n->layout, n->rank) == 0;
    if (fd >= 0) close(fd);
    if (ok) {
        pthread_once(&probe_once, set_probe_word);
        nc_rank_info me = {nc_proc_self(), (uint64_t)(uintptr_t)&probe_word, probe_word, {{-1, -1, -1, -1}}, 0, 0};
        if (topo_levels(&c->cfg) && n->size > 2) me.loc = nc_topo_locate((int)c->cfg.topo_place, n->rank, n->size);
        nc_mpi_heap_describe(c, &me);
        nc_rank_info_publish(nc_node_ctl(n, n->rank), &me);
    }
    ok = all_agree(ok, s->node_comm); /* also: everybody has mapped, the name can go */
    if (n->rank == 0 && name[0]) nc_segment_unlink(name);
    if (!ok) return 0;

    alloc_node_state(c, oversubscribed);
    for (int r = 0; r < n->size; r++) n->peers[r].pid = (pid_t)nc_rank_info_read(nc_node_ctl(n, r)).proc.pid;
    group_by_topology(s);
    n->wait.spinners = cores_per_rank;
    int cma_ok = 0;
    if (c->cfg.cma != NC_CMA_OFF) {
        nc_cma_allow_readers();
        cma_ok = probe_single_copy(n);
    }
    n->cma = all_agree(cma_ok, s->node_comm);
    for (int r = 0; r < n->size; r++) n->peers[r].cma = n->cma;
    nc_mpi_share_heaps(s);
    nc_watch_start(c, abort_job);
    return 1;
}

/* Messages about the rules file are printed once per process and, where the processes learn
 * of each other's, once per job: what rank 0 of a communicator says of its file travels with
 * its settings as a hash (what it says of node sizes without rules every rank works out), and
 * a process stays silent about what it has heard of. */
static uint64_t heard[64];
static int nheard;
static pthread_mutex_t heard_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t message_hash(const char *text)
{
    uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */
    for (const char *s = text; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
    return h ? h : 1; /* (0: no message) */
}

/* Records message h: whether it is news to this process (with no room left, everything is). */
static int hear(uint64_t h)
{
    int news = 1;
    pthread_mutex_lock(&heard_lock);
    for (int i = 0; i < nheard && news; i++) news = heard[i] != h;
    if (news && nheard < (int)(sizeof heard / sizeof heard[0])) heard[nheard++] = h;
    pthread_mutex_unlock(&heard_lock);
    return news;
}

/* Prints a message about the rules on `print` unless this process has heard of it. */
static void tell(const char *text, int print)
{
    if (hear(message_hash(text)) && print) fprintf(stderr, "%s\n", text);
}

/* The tuning rules of this process (NODECOLL_TUNE_FILE, or the default location), read once
 * by the first rank 0 of a communicator that needs them; a file that cannot be used gives no
 * rules and a message why. */
static nc_tune_rules process_rules;
static char rules_problem[600];
static pthread_once_t rules_once = PTHREAD_ONCE_INIT;

static void load_rules(void)
{
    char buf[512];
    const char *mpi = nodecoll_mpi_library(), *path = nc_tune_path(mpi, buf, sizeof buf);
    if (!path || !nc_tune_load(path, nodecoll_version(), mpi, &process_rules, rules_problem, sizeof rules_problem))
        rules_problem[0] = '\0';
}

const nc_tune_rules *nc_mpi_tune_rules(void)
{
    pthread_once(&rules_once, load_rules);
    return &process_rules;
}

/* Rank 0's settings and tuning rules (only those for node sizes it could meet are sent:
 * all of them, the node sizes are known only after the split), and what it said of them. */
static void adopt_root_settings(nc_comm *c, MPI_Comm comm)
{
    struct {
        nc_config cfg;
        int32_t rules;
        uint64_t problem; /* the hash of rank 0's message about its file (0: none) */
    } root = {*nc_config_get(), 0, 0};
    if (c->rank == 0) {
        root.rules = nc_mpi_tune_rules()->count + nc_mpi_tune_rules()->nodes;
        root.problem = rules_problem[0] ? message_hash(rules_problem) : 0;
        if (root.problem) tell(rules_problem, 1);
    }
    /* Algorithm choices must match on every rank or ranks would wait on different flags. */
    PMPI_Bcast(&root, sizeof root, MPI_BYTE, 0, comm);
    c->cfg = root.cfg;
    if (root.problem) hear(root.problem);
    if (!root.rules) return;
    c->tune = malloc(sizeof *c->tune);
    if (!c->tune) nc_fatal("out of memory for tuning rules");
    if (c->rank == 0) *c->tune = *nc_mpi_tune_rules();
    PMPI_Bcast(c->tune, sizeof *c->tune, MPI_BYTE, 0, comm);
}

/* Whether every node of the communicator has as many ranks as this one.  Node-wide rules
 * (layout, levels) need it: an element larger than one node's segments would send a
 * reduction to the host on that node only. */
static int nodes_alike(const nc_comm *c)
{
    for (int k = 0; k < c->bridge.size; k++)
        if (c->node_start[k + 1] - c->node_start[k] != c->node.size) return 0;
    return 1;
}

/* Rank 0 says which node sizes of the communicator the rules have nothing for; every rank
 * hears it (they all know the rules and every node's size). */
static void tell_sizes_without_rules(const nc_comm *c)
{
    for (int k = 0; k < c->bridge.size; k++) {
        int size = c->node_start[k + 1] - c->node_start[k];
        if (nc_tune_has_ranks(c->tune, size)) continue;
        char text[300];
        snprintf(text, sizeof text, "nodecoll: %s has no rules for %d ranks per node: the built-in defaults serve them",
                 c->tune->source, size);
        tell(text, c->rank == 0);
    }
}

/* Rules for other node sizes than this node's are no rules: the defaults serve it.  The
 * rules kept take their part of the settings (core/tune.h: nc_tune_adopt), the same on
 * every rank. */
static void keep_rules_for_node(nc_mpi_comm *s)
{
    nc_comm *c = &s->coll;
    if (!c->tune) return;
    tell_sizes_without_rules(c);
    if (nc_tune_has_ranks(c->tune, c->node.size)) {
        int alike = nodes_alike(c);
        if (!alike && nc_tune_node_find(c->tune, c->node.size))
            say(&c->cfg, 1, s->comm, "nodes of different sizes: the rules' layout and levels lines are not used");
        nc_tune_adopt(c->tune, alike ? c->node.size : 0, &c->cfg); /* (no node has 0 ranks) */
        return;
    }
    free(c->tune);
    c->tune = NULL;
}

/* Setting up makes blocking host calls on the communicator, which cannot move this rank's
 * outstanding nonblocking operations: a peer waiting for one of them before its own first
 * collective here would never arrive.  So the ranks first meet in a nonblocking barrier
 * awaited with nodecoll's progress; after it every rank is inside this set-up, and its
 * blocking steps need nothing else from anyone.  (Every rank sets up in the same call, so
 * every rank meets.) */
static void meet_before_setup(MPI_Comm comm)
{
    MPI_Request r;
    if (PMPI_Ibarrier(comm, &r) == MPI_SUCCESS) nc_mpi_wait_host(&r, MPI_STATUS_IGNORE);
}

static nc_alg_id setup(nc_mpi_comm *s, MPI_Comm comm)
{
    nc_comm *c = &s->coll;
    int inter, physical_size;
    PMPI_Comm_test_inter(comm, &inter);
    if (inter) return NC_ALG_PMPI_INTERCOMM;
    PMPI_Comm_size(comm, &c->size);
    if (c->size == 1) return NC_ALG_PMPI_SIZE1;
    PMPI_Comm_rank(comm, &c->rank);
    meet_before_setup(comm);
    adopt_root_settings(c, comm);
    nc_mpi_neighbor_lists_read(c, comm); /* (before the segment: it sizes the edge tables) */
    long cores;
    split_node(s, comm, &physical_size, &cores);
    build_bridge_and_tables(s, comm);
    keep_rules_for_node(s); /* (before the segment: its layout and groups may be ruled) */
    int cores_per_rank = cores > physical_size ? (int)(cores / physical_size) : 1;
    int ok = c->node.size == 1 ? map_private_node(s) : map_segment(s, cores > 0 && physical_size > cores, cores_per_rank);
    /* One node without shared memory would leave the others waiting in a different
     * algorithm: the whole communicator falls back together. */
    if (!all_agree(ok, comm)) return NC_ALG_PMPI_NO_SHM;
    /* A one-rank node reads from nobody: it never blocks single-copy collectives. */
    c->single_copy_everywhere = all_agree(c->node.size == 1 || c->node.cma || c->node.heap, comm);
    char what[200];
    snprintf(what, sizeof what, "accelerated (%s%s%d ranks on %ld usable cores: waits %s)",
             c->node.cma ? "single-copy available; " : "", c->node.heap ? "shared heaps mapped; " : "", physical_size,
             cores,
             cores > 0 && physical_size > cores ? "yield at once" : "spin, then yield");
    say(&c->cfg, 2, comm, what);
    return NC_ALG_COUNT;
}

static void release_resources(nc_mpi_comm *s)
{
    nc_node *n = &s->coll.node;
    nc_watch_stop(&s->coll);
    if (n->base && s->private_node) munmap(n->base, n->layout.total);
    else if (n->base) nc_segment_unmap(n->base, &n->layout);
    n->base = NULL;
    if (s->node_comm != MPI_COMM_NULL) PMPI_Comm_free(&s->node_comm);
    if (s->bridge_comm != MPI_COMM_NULL) PMPI_Comm_free(&s->bridge_comm);
    if (s->private_comm != MPI_COMM_NULL) PMPI_Comm_free(&s->private_comm);
    nc_mpi_drop_heaps(s);
    nc_stage_release(n);
    free(n->peers);
    free(n->slot_use);
    free(n->cons_seen);
    free(n->move_readers);
    nc_hier_free(n->hier);
    n->hier = NULL;
    for (int i = 0; i < 2; i++) {
        free(n->scratch[i]);
        free(n->move_scratch[i]);
        n->scratch[i] = n->move_scratch[i] = NULL;
        n->scratch_bytes[i] = n->move_scratch_bytes[i] = 0;
    }
    free(s->coll.tune);
    s->coll.tune = NULL;
    free(s->coll.node_of);
    free(s->coll.node_rank_of);
    free(s->coll.node_members);
    free(s->coll.node_start);
    nc_mpi_neighbor_lists_free(&s->coll);
    n->peers = NULL;
    n->slot_use = NULL;
    n->cons_seen = NULL;
    n->move_readers = NULL;
    s->coll.node_of = s->coll.node_rank_of = s->coll.node_members = s->coll.node_start = NULL;
}

static nc_mpi_comm *create(MPI_Comm comm)
{
    nc_mpi_comm *s = calloc(1, sizeof *s);
    if (!s) nc_fatal("out of memory for communicator state");
    s->comm = comm;
    atomic_init(&s->holds, 1);
    s->node_comm = s->bridge_comm = s->private_comm = MPI_COMM_NULL;
    s->fallback = setup(s, comm);
    if (s->fallback != NC_ALG_COUNT) {
        if (s->fallback == NC_ALG_PMPI_NO_SHM) say(&s->coll.cfg, 1, comm, "no shared memory: using the host MPI");
        release_resources(s);
    }
    PMPI_Comm_set_attr(comm, comm_keyval, s);
    pthread_mutex_lock(&live_lock);
    s->next = live;
    if (live) live->prev = s;
    live = s;
    pthread_mutex_unlock(&live_lock);
    return s;
}

void nc_mpi_comm_hold(nc_mpi_comm *s) { nc_engine_count_add(&s->holds, 1, memory_order_relaxed); }

void nc_mpi_comm_drop(nc_mpi_comm *s)
{
    if (nc_engine_count_add(&s->holds, -1, memory_order_acq_rel) != 1) return;
    nc_comm_drain(&s->coll); /* (a persistent request started after MPI_Comm_free listed it again) */
    release_resources(s);
    free(s->scratch);
    free(s->counts);
    free(s);
}

/* The communicator goes: its pending operations complete first (they use its segment and
 * bridge); requests still holding it release the state with their last one. */
static void destroy(nc_mpi_comm *s)
{
    nc_comm_drain(&s->coll);
    nc_mpi_requests_forget(s);
    atomic_fetch_add_explicit(&state_generation, 1, memory_order_acq_rel);
    pthread_mutex_lock(&live_lock);
    if (s->prev) s->prev->next = s->next;
    else live = s->next;
    if (s->next) s->next->prev = s->prev;
    pthread_mutex_unlock(&live_lock);
    nc_mpi_comm_drop(s);
}

char *nc_mpi_scratch(nc_mpi_comm *s, size_t bytes)
{
    if (s->scratch_bytes < bytes) {
        free(s->scratch);
        s->scratch = nc_alloc_or_die(bytes);
        s->scratch_bytes = bytes;
    }
    return s->scratch;
}

size_t *nc_mpi_counts(nc_mpi_comm *s)
{
    if (!s->counts) s->counts = nc_alloc_or_die(sizeof(size_t) * (size_t)s->coll.size);
    return s->counts;
}

nc_mpi_comm *nc_mpi_state_lookup(MPI_Comm comm, nc_coll_id coll)
{
    nc_alg_id why;
    nc_mpi_comm *s = nc_mpi_lookup(comm, &why);
    if (!s) nc_mpi_fallback(coll, why);
    return s;
}

int nc_mpi_is_set_up(MPI_Comm comm)
{
    if (nc_mpi_recent_state(comm)) return 1; /* (set up, or it would not be remembered) */
    void *value = NULL;
    int found = 0;
    if (nc_config_get()->enable && comm != MPI_COMM_NULL && comm_keyval != MPI_KEYVAL_INVALID)
        PMPI_Comm_get_attr(comm, comm_keyval, &value, &found);
    return found;
}

nc_mpi_comm *nc_mpi_state_if_set_up(MPI_Comm comm, nc_coll_id coll)
{
    nc_mpi_comm *recent = nc_mpi_recent_state(comm);
    if (recent) return recent; /* (the usual case, answered inline) */
    if (!nc_mpi_is_set_up(comm)) {
        nc_mpi_fallback(coll, NC_ALG_PMPI_NOT_SET_UP);
        return NULL;
    }
    return nc_mpi_state_lookup(comm, coll); /* (set up: local) */
}

nc_mpi_comm *nc_mpi_lookup(MPI_Comm comm, nc_alg_id *why)
{
    if (!nc_config_get()->enable) {
        *why = NC_ALG_PMPI_DISABLED;
        return NULL;
    }
    if (comm == MPI_COMM_NULL) {
        *why = NC_ALG_PMPI_ARGS;
        return NULL;
    }
    nc_mpi_comm *s = recall_state(comm);
    if (!s) s = lookup_state(comm, why);
    if (!s) return NULL;
    if (s->fallback != NC_ALG_COUNT) {
        *why = s->fallback;
        return NULL;
    }
    nc_mpi_last_state = (nc_mpi_recent){comm, s, atomic_load_explicit(&state_generation, memory_order_acquire)};
    return s;
}

/* The attribute (created on first use), or NULL after MPI_Finalize. */
static nc_mpi_comm *lookup_state(MPI_Comm comm, nc_alg_id *why)
{
    pthread_once(&keyval_once, create_keyval);
    void *value = NULL;
    int found = 0, finalized = 0;
    if (comm_keyval != MPI_KEYVAL_INVALID) PMPI_Comm_get_attr(comm, comm_keyval, &value, &found);
    nc_mpi_comm *s = value;
    if (!found) {
        PMPI_Finalized(&finalized);
        if (finalized || comm_keyval == MPI_KEYVAL_INVALID) {
            *why = NC_ALG_PMPI_FINALIZED;
            return NULL;
        }
        s = create(comm);
    }
    remember_state(comm, s);
    return s;
}

void nc_mpi_solo_comm(MPI_Comm comm, nc_comm *c, MPI_Comm *bridge_comm)
{
    memset(c, 0, sizeof *c);
    c->cfg = *nc_config_get();
    PMPI_Comm_size(comm, &c->size);
    PMPI_Comm_rank(comm, &c->rank);
    c->node.size = 1;
    c->node_of = malloc(sizeof(int) * (size_t)c->size);
    c->node_rank_of = calloc((size_t)c->size, sizeof(int));
    if (!c->node_of || !c->node_rank_of) nc_fatal("out of memory for rank tables");
    for (int r = 0; r < c->size; r++) c->node_of[r] = r;
    PMPI_Comm_dup(comm, bridge_comm);
    PMPI_Comm_set_errhandler(*bridge_comm, MPI_ERRORS_RETURN);
    c->bridge = nc_mpi_bridge(bridge_comm, bridge_comm, c->size, c->rank);
}

void nc_mpi_solo_comm_free(nc_comm *c, MPI_Comm *bridge_comm)
{
    free(c->node_of);
    free(c->node_rank_of);
    c->node_of = c->node_rank_of = NULL;
    if (*bridge_comm != MPI_COMM_NULL) PMPI_Comm_free(bridge_comm);
}

void nc_mpi_release_all(void)
{
    /* Deleting the attribute runs delete_state, which unlinks the state from the list. */
    for (;;) {
        pthread_mutex_lock(&live_lock);
        nc_mpi_comm *s = live;
        pthread_mutex_unlock(&live_lock);
        if (!s) break;
        if (PMPI_Comm_delete_attr(s->comm, comm_keyval) != MPI_SUCCESS) destroy(s);
    }
    if (comm_keyval != MPI_KEYVAL_INVALID) PMPI_Comm_free_keyval(&comm_keyval);
    nc_engine_set_host_poke(NULL);
    if (poke_request != MPI_REQUEST_NULL) {
        PMPI_Cancel(&poke_request);
        PMPI_Wait(&poke_request, MPI_STATUS_IGNORE);
    }
    if (own_self != MPI_COMM_NULL) PMPI_Comm_free(&own_self);
}
