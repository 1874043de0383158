/* Communicator lifecycle: the per-communicator state must cost nothing once a communicator
 * is gone, respect NODECOLL_SHM_CAP, survive MPI_Finalize with live communicators and leave
 * MPI attribute semantics as the user expects.
 *
 *   (a) churn: thousands of MPI_Comm_dup / MPI_Comm_split communicators, each used by a
 *       Bcast and a Barrier and freed; between a warm start and the end the process must not
 *       have grown nodecoll mappings (count and bytes in /proc/self/maps), open descriptors
 *       (/proc/self/fd), heap in use (mallinfo2) or /dev/shm names of this job;
 *   (b) cap: many communicators alive at once; every call is correct, the first ones run
 *       accelerated, and with NODECOLL_SHM_CAP set the mapped bytes never exceed it and the
 *       ones beyond it are counted as "pmpi:no-shm" fallbacks; freeing makes room again;
 *   (c) communicators never freed (with state) at MPI_Finalize: clean exit, nothing mapped
 *       after MPI_Finalize returns;
 *   (d) a user keyval on a communicator with state keeps working (copy and delete callbacks
 *       run exactly as MPI says), and MPI_Comm_dup of such a communicator gets its own state
 *       (its own segment) that keeps working after the original is freed. */
#include <dirent.h>
#include <malloc.h>
#include <stdint.h>
#include <unistd.h>

#include "common.h"

/* ---- what this process holds ------------------------------------------------------------ */

typedef struct usage {
    int maps;          /* mappings of /dev/shm/nodecoll.* (unlinked: "(deleted)") */
    size_t map_bytes;  /* their total size */
    int fds;           /* entries of /proc/self/fd */
    int shm_names;     /* /dev/shm/nodecoll.<pid>.* of any rank of this job */
    size_t heap;       /* malloc'd bytes in use */
} usage;

static pid_t *job_pids;

static void nodecoll_maps(int *count, size_t *bytes)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[4096];
    *count = 0;
    *bytes = 0;
    if (!f) {
        t_fail("cannot read /proc/self/maps");
        return;
    }
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (!strstr(line, "/dev/shm/nodecoll.") || sscanf(line, "%lx-%lx", &lo, &hi) != 2) continue;
        (*count)++;
        *bytes += hi - lo;
    }
    fclose(f);
}

static int count_dir(const char *path, int (*keep)(const char *))
{
    DIR *d = opendir(path);
    struct dirent *e;
    int n = 0;
    if (!d) return -1;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.' && (!keep || keep(e->d_name))) n++;
    closedir(d);
    return n;
}

/* nodecoll.<creator pid>.<counter>.<hex> with the pid of one of this job's ranks. */
static int ours(const char *name)
{
    if (strncmp(name, "nodecoll.", 9)) return 0;
    long pid = strtol(name + 9, NULL, 10);
    for (int r = 0; r < t_size; r++)
        if (job_pids[r] == (pid_t)pid) return 1;
    return 0;
}

static usage measure(void)
{
    usage u;
    nodecoll_maps(&u.maps, &u.map_bytes);
    u.fds = count_dir("/proc/self/fd", NULL);
    u.shm_names = count_dir("/dev/shm", ours);
    u.heap = mallinfo2().uordblks;
    return u;
}

/* Stops a loop after `budget` seconds on the slowest rank (decided together). */
static int out_of_time(MPI_Comm comm, double start, double budget)
{
    double elapsed = MPI_Wtime() - start, longest;
    PMPI_Allreduce(&elapsed, &longest, 1, MPI_DOUBLE, MPI_MAX, comm);
    return longest > budget;
}

static uint64_t accelerated(const char *coll)
{
    return nodecoll_stat_calls(coll, "*") - nodecoll_stat_calls(coll, "pmpi:*");
}

/* A Bcast from `root` whose result is checked, then a Barrier; returns 1 if the Bcast ran
 * accelerated (not through the host MPI). */
static int use(MPI_Comm comm, int root, int tag, const char *what)
{
    int rank, size, buf[37];
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    root %= size;
    for (int i = 0; i < 37; i++) buf[i] = rank == root ? tag * 37 + i : -1;
    uint64_t before = accelerated("bcast");
    int err = MPI_Bcast(buf, 37, MPI_INT, root, comm);
    int fast = accelerated("bcast") > before;
    T_CHECK(err == MPI_SUCCESS, "%s: bcast error %d", what, err);
    for (int i = 0; i < 37; i++)
        if (buf[i] != tag * 37 + i) {
            t_fail("%s: bcast from %d: int %d is %d, want %d", what, root, i, buf[i], tag * 37 + i);
            break;
        }
    T_CHECK(MPI_Barrier(comm) == MPI_SUCCESS, "%s: barrier error", what);
    return fast;
}

static void compare(const usage *a, const usage *b, const char *what, int comms, int check_heap)
{
    T_CHECK(a->maps == b->maps && a->map_bytes == b->map_bytes,
            "%s: nodecoll mappings went from %d (%zu bytes) to %d (%zu bytes) over %d communicators", what,
            a->maps, a->map_bytes, b->maps, b->map_bytes, comms);
    T_CHECK(a->fds == b->fds, "%s: open descriptors went from %d to %d over %d communicators", what, a->fds,
            b->fds, comms);
    T_CHECK(b->shm_names == 0, "%s: %d /dev/shm/nodecoll.* names of this job remain (%d at start)", what,
            b->shm_names, a->shm_names);
    /* The host MPI's heap settles after a few tens of KiB whatever the number of
     * communicators; any per-communicator leak (even one 32-byte block) outgrows the slack. */
    long grown = (long)b->heap - (long)a->heap;
    T_CHECK(!check_heap || grown < 8L * comms + 65536, "%s: heap in use grew by %ld bytes over %d communicators",
            what, grown, comms);
}

/* ---- (a) churn ---------------------------------------------------------------------------- */

static void churn(void)
{
    /* The first few build whatever the host MPI allocates once (one of each kind of
     * communicator below): measure from there. */
    enum { WARM = 6 };
    const int target = t_scale(3000);
    const double budget = 2.0;
    int made = 0, fast = 0;
    usage start = {0};
    double t0 = 0;
    for (int i = 0; i < target + WARM; i++) {
        if (i == WARM) {
            PMPI_Barrier(MPI_COMM_WORLD);
            start = measure();
            t0 = MPI_Wtime();
        }
        /* An oversubscribed host MPI can take ~0.1 s per communicator: stop on time too. */
        if (i > WARM && i % 8 == 0 && out_of_time(MPI_COMM_WORLD, t0, budget)) break;
        MPI_Comm c;
        if (i % 2) {
            MPI_Comm_dup(MPI_COMM_WORLD, &c);
        } else {
            int groups = 1 + (i / 2) % 3; /* whole, halves, thirds (some of size 1) */
            MPI_Comm_split(MPI_COMM_WORLD, t_rank % groups, (i % 4 ? 1 : -1) * t_rank, &c);
        }
        int size;
        MPI_Comm_size(c, &size);
        char what[64];
        snprintf(what, sizeof what, "churn %d (%s)", i, i % 2 ? "dup" : "split");
        int was_fast = use(c, i, i, what);
        T_CHECK(size == 1 || was_fast, "%s: bcast on %d ranks was not accelerated", what, size);
        fast += was_fast;
        MPI_Comm_free(&c);
        made += i >= WARM;
    }
    PMPI_Barrier(MPI_COMM_WORLD);
    usage end = measure();
    compare(&start, &end, "churn", made, 1);
    if (t_rank == 0)
        printf("churn: %d communicators, %d accelerated here, heap %+ld bytes, %d fds\n", made, fast,
               (long)end.heap - (long)start.heap, end.fds);
    if (t_size > 1) T_CHECK(fast > 0, "churn: nothing was accelerated");
}

/* ---- (b) many alive at once, NODECOLL_SHM_CAP ---------------------------------------------- */

static size_t parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    switch (*end) {
    case 'k': case 'K': v *= 1024; break;
    case 'm': case 'M': v *= 1024 * 1024; break;
    case 'g': case 'G': v *= 1024.0 * 1024 * 1024; break;
    default: break;
    }
    return (size_t)v;
}

static void cap(void)
{
    enum { MAX_ALIVE = 16 };
    const char *cap_env = getenv("NODECOLL_SHM_CAP");
    /* Enough to pass a small cap; without one, a few at once show nothing falls back. */
    const int ALIVE = cap_env ? MAX_ALIVE : 6;
    size_t cap_bytes = cap_env ? parse_size(cap_env) : (size_t)-1;
    MPI_Comm comms[MAX_ALIVE];
    int fast[MAX_ALIVE], any_maps = 0, first_slow = -1;
    usage start = measure();
    for (int i = 0; i < ALIVE; i++) {
        MPI_Comm_dup(MPI_COMM_WORLD, &comms[i]);
        uint64_t no_shm = nodecoll_stat_calls("bcast", "pmpi:no-shm");
        uint64_t no_shm_barrier = nodecoll_stat_calls("barrier", "pmpi:no-shm");
        char what[64];
        snprintf(what, sizeof what, "cap: communicator %d", i);
        fast[i] = use(comms[i], i, 1000 + i, what);
        int counted = nodecoll_stat_calls("bcast", "pmpi:no-shm") == no_shm + 1 &&
                      nodecoll_stat_calls("barrier", "pmpi:no-shm") == no_shm_barrier + 1;
        T_CHECK(fast[i] != counted || t_size == 1,
                "%s: accelerated %d but counted as pmpi:no-shm %d (bcast and barrier)", what, fast[i], counted);
        usage u = measure();
        any_maps |= u.maps > start.maps;
        T_CHECK(u.map_bytes <= cap_bytes, "%s: %zu bytes of nodecoll segments mapped, cap %zu", what, u.map_bytes,
                cap_bytes);
        if (!fast[i] && first_slow < 0) first_slow = i;
        T_CHECK(first_slow < 0 || !fast[i], "%s: accelerated after communicator %d fell back", what, first_slow);
    }
    PMPI_Allreduce(MPI_IN_PLACE, &any_maps, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (t_size > 1) {
        T_CHECK(fast[0], "cap: the first communicator was not accelerated");
        if (cap_env && any_maps)
            T_CHECK(first_slow > 0, "cap: NODECOLL_SHM_CAP=%s never reached with %d communicators alive", cap_env,
                    ALIVE);
        if (!cap_env) T_CHECK(first_slow < 0, "cap: communicator %d fell back without a cap", first_slow);
    }
    /* Every communicator still works, accelerated or not, in the same mode as before. */
    for (int i = ALIVE - 1; i >= 0; i--) {
        char what[64];
        snprintf(what, sizeof what, "cap: communicator %d again", i);
        T_CHECK(use(comms[i], i + 1, 2000 + i, what) == fast[i] || t_size == 1, "%s: changed mode", what);
    }
    /* Freeing the accelerated ones makes room for a new one. */
    for (int i = 0; i < ALIVE; i++)
        if (fast[i]) MPI_Comm_free(&comms[i]);
    MPI_Comm again;
    MPI_Comm_dup(MPI_COMM_WORLD, &again);
    T_CHECK(use(again, 0, 3000, "cap: after freeing") || t_size == 1, "cap: no room after freeing");
    MPI_Comm_free(&again);
    for (int i = 0; i < ALIVE; i++)
        if (comms[i] != MPI_COMM_NULL) MPI_Comm_free(&comms[i]);
    usage end = measure();
    /* No heap check here: the host MPI's handle pools grow with communicators alive at once. */
    compare(&start, &end, "cap", ALIVE + 1, 0);
    if (t_rank == 0)
        printf("cap: %s, first fallback at communicator %d of %d\n", cap_env ? cap_env : "default", first_slow,
               ALIVE);
}

/* ---- (d) attributes -------------------------------------------------------------------------- */

static int copies, deletes;

static int copy_attr(MPI_Comm comm, int keyval, void *extra, void *in, void *out, int *flag)
{
    copies++;
    *(void **)out = (char *)in + 1;
    *flag = 1;
    return MPI_SUCCESS;
}

static int delete_attr(MPI_Comm comm, int keyval, void *value, void *extra)
{
    deletes++;
    return MPI_SUCCESS;
}

static void attributes(void)
{
    int keyval, found;
    void *value;
    static char token[4];
    MPI_Comm comm, dup;
    MPI_Comm_create_keyval(copy_attr, delete_attr, &keyval, NULL);
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    /* One attribute set before nodecoll builds its state, a second (replacing it) after. */
    MPI_Comm_set_attr(comm, keyval, &token[0]);
    use(comm, 0, 4000, "attr: first use");
    MPI_Comm_get_attr(comm, keyval, &value, &found);
    T_CHECK(found && value == &token[0], "attr: user attribute lost after nodecoll set up (found %d)", found);
    MPI_Comm_set_attr(comm, keyval, &token[1]);
    T_CHECK(deletes == 1, "attr: replacing the attribute ran delete %d times, want 1", deletes);
    MPI_Comm_get_attr(comm, keyval, &value, &found);
    T_CHECK(found && value == &token[1], "attr: replaced attribute reads back wrong");
    int *tag_ub;
    MPI_Comm_get_attr(comm, MPI_TAG_UB, &tag_ub, &found);
    T_CHECK(found && *tag_ub >= 32767, "attr: MPI_TAG_UB unreadable");

    /* The duplicate: the user's attribute is copied once, nodecoll's state is not shared. */
    int maps_before, maps_after;
    size_t bytes;
    nodecoll_maps(&maps_before, &bytes);
    MPI_Comm_dup(comm, &dup);
    T_CHECK(copies == 1, "attr: dup ran the copy callback %d times, want 1", copies);
    MPI_Comm_get_attr(dup, keyval, &value, &found);
    T_CHECK(found && value == &token[2], "attr: dup did not get the copied attribute");
    int fast = use(dup, t_size - 1, 4001, "attr: dup first use");
    nodecoll_maps(&maps_after, &bytes);
    /* Where a node of several ranks has segments (the original's), the duplicate maps exactly
     * one new segment of its own; nodes of one rank map none. */
    int mine[2] = {maps_after - maps_before, maps_before}, most[2];
    PMPI_Allreduce(mine, most, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    int world_maps = most[0];
    T_CHECK(mine[0] == 0 || mine[0] == 1, "attr: dup mapped %d segments here", mine[0]);
    T_CHECK(most[1] == 0 || world_maps == 1, "attr: the dup of a communicator with a segment mapped %d new ones",
            world_maps);
    if (t_size > 1) T_CHECK(fast, "attr: dup not accelerated");
    /* Interleaved use with different roots: a shared state would mix up the two sequences. */
    for (int k = 0; k < 20; k++) {
        use(k % 2 ? comm : dup, k, 4100 + k, k % 2 ? "attr: original interleaved" : "attr: dup interleaved");
    }
    MPI_Comm_delete_attr(comm, keyval);
    T_CHECK(deletes == 2, "attr: delete_attr ran delete %d times in all, want 2", deletes);
    use(comm, 0, 4200, "attr: after delete_attr");
    MPI_Comm_free(&comm);
    T_CHECK(deletes == 2, "attr: free after delete_attr ran delete again (%d)", deletes);
    /* The duplicate's state is its own: it works after the original is gone. */
    for (int k = 0; k < 10; k++) T_CHECK(use(dup, k, 4300 + k, "attr: dup after original freed") || t_size == 1,
                                         "attr: dup fell back after the original was freed");
    MPI_Comm_free(&dup);
    T_CHECK(deletes == 3, "attr: freeing the dup ran delete %d times in all, want 3", deletes);
    MPI_Comm_free_keyval(&keyval);
    if (t_rank == 0) printf("attributes: dup mapped %d new segment(s)\n", world_maps);
}

/* ---- (c) live communicators at MPI_Finalize ---------------------------------------------------- */

static MPI_Comm never_freed[3];

static void leave_alive(void)
{
    MPI_Comm_dup(MPI_COMM_WORLD, &never_freed[0]);
    MPI_Comm_split(MPI_COMM_WORLD, t_rank % 2, t_rank, &never_freed[1]);
    MPI_Comm_dup(never_freed[0], &never_freed[2]);
    for (int i = 0; i < 3; i++) use(never_freed[i], i, 5000 + i, "alive at finalize");
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv);
    job_pids = malloc(sizeof *job_pids * (size_t)t_size);
    pid_t me = getpid();
    PMPI_Allgather(&me, sizeof me, MPI_BYTE, job_pids, sizeof me, MPI_BYTE, MPI_COMM_WORLD);
    use(MPI_COMM_WORLD, 0, 1, "world"); /* WORLD's state stays for the whole run */
    double t0 = MPI_Wtime();
    attributes();
    double t1 = MPI_Wtime();
    cap();
    double t2 = MPI_Wtime();
    churn();
    double t3 = MPI_Wtime();
    leave_alive();
    if (t_rank == 0) printf("seconds: attributes %.2f, cap %.2f, churn %.2f, alive %.2f\n", t1 - t0, t2 - t1, t3 - t2,
                            MPI_Wtime() - t3);

    int total = 0;
    PMPI_Allreduce(&t_failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    int err = MPI_Finalize();
    /* Every state was released inside MPI_Finalize: nothing of nodecoll is mapped any more. */
    int maps;
    size_t bytes;
    nodecoll_maps(&maps, &bytes);
    T_CHECK(err == MPI_SUCCESS, "MPI_Finalize returned %d", err);
    T_CHECK(maps == 0, "after MPI_Finalize %d nodecoll segments (%zu bytes) are still mapped", maps, bytes);
    T_CHECK(count_dir("/dev/shm", ours) == 0, "after MPI_Finalize /dev/shm names of this job remain");
    if (t_rank == 0)
        printf("lifecycle: %s (%d ranks, %s)\n", total || t_failures ? "FAILED" : "passed", t_size, t_mpi_name());
    free(job_pids);
    return total || t_failures ? 1 : 0;
}
