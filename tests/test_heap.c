/* Collectives on shared-heap buffers against the host MPI (PMPI_ on copies of the same data),
 * every size class (below, at and above NODECOLL_HEAP_MIN, past the single-copy chunks), in
 * place and not, with every buffer freed and allocated again before each call, so that a
 * peer reading an address through a stale view of the owner's memory would see the wrong
 * data (the heap hands freed blocks out again at the same addresses).
 *
 * Where the buffers live (T_BUFFERS): `heap` (malloc with libnodecoll-heap.so preloaded and
 * NODECOLL_HEAP=on, or MPI_Alloc_mem with NODECOLL_HEAP=alloc_mem), or `mixed` (in some
 * rounds some ranks' buffers come from mmap, outside any heap: today's paths must serve them).
 * With T_EXPECT_HEAP=1 the test also checks which way the data went: large calls on heap
 * buffers move through the heap (never CMA), and on a node without CMA (NODECOLL_CMA=off)
 * Bcast and Allreduce still run single copy when every buffer is in a heap and the rings
 * when one is not.
 *
 * Then an Alltoallv of blocks outside the heap with inaccessible pages between them (a node
 * without CMA stages only the blocks) and, with T_STAGING_BOUND=1, many live communicators
 * each with a large Allgather of buffers outside the heap (no staging copy kept per
 * communicator).  Last, communicators are created, used and freed many times: neither
 * descriptors nor mappings of peers' heaps may pile up, and nothing of the job stays in
 * /dev/shm.
 *
 * Argument: rounds per size (default 2). */
#include <dirent.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common.h"

enum { C_BCAST, C_ALLREDUCE, C_REDUCE, C_REDUCE_SCATTER_BLOCK, C_ALLGATHER, C_GATHER, C_SCATTER, C_ALLTOALL, C_COUNT };
static const char *names[] = {"bcast",     "allreduce", "reduce",  "reduce_scatter_block",
                              "allgather", "gather",    "scatter", "alltoall"};

static int alloc_mem; /* buffers from MPI_Alloc_mem (NODECOLL_HEAP=alloc_mem) */
static int expect_heap;
static size_t heap_min;

/* ---- buffers inside and outside the heap ------------------------------------------------- */

typedef struct buffer {
    char *p;
    size_t bytes;
    int outside; /* mmap'ed: in no heap */
} buffer;

static buffer get(size_t bytes, int outside)
{
    buffer b = {NULL, bytes ? bytes : 8, outside};
    if (outside) {
        b.p = mmap(NULL, b.bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (b.p == MAP_FAILED) b.p = NULL;
    } else if (alloc_mem) {
        MPI_Alloc_mem((MPI_Aint)b.bytes, MPI_INFO_NULL, &b.p);
    } else {
        b.p = malloc(b.bytes);
    }
    if (!b.p) {
        fprintf(stderr, "test_heap: no memory for %zu bytes\n", b.bytes);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return b;
}

static void put(buffer *b)
{
    if (b->outside) munmap(b->p, b->bytes);
    else if (alloc_mem) MPI_Free_mem(b->p);
    else free(b->p);
    b->p = NULL;
}

static void fill(char *p, size_t bytes, uint64_t seed)
{
    int64_t *v = (int64_t *)(void *)p;
    for (size_t i = 0; i < bytes / 8; i++) v[i] = (int64_t)((seed * 131 + i * 7) % 1000003);
    for (size_t i = bytes / 8 * 8; i < bytes; i++) p[i] = (char)(seed + i);
}

/* ---- one collective, through nodecoll and through the host -------------------------------- */

typedef struct call {
    int coll, root, in_place;
    size_t block; /* bytes per rank (Bcast, the reductions: the whole vector) */
} call;

static size_t send_bytes(const call *c)
{
    switch (c->coll) {
    case C_SCATTER: return t_rank == c->root ? c->block * (size_t)t_size : 0;
    case C_ALLTOALL: return c->block * (size_t)t_size;
    case C_ALLGATHER:
    case C_GATHER: return c->block;
    default: return c->block;
    }
}

static size_t recv_bytes(const call *c)
{
    switch (c->coll) {
    case C_BCAST: return 0;
    case C_REDUCE_SCATTER_BLOCK: return c->in_place ? c->block : c->block / (size_t)t_size;
    case C_SCATTER: return c->block;
    case C_GATHER: return t_rank == c->root ? c->block * (size_t)t_size : 0;
    case C_ALLGATHER:
    case C_ALLTOALL: return c->block * (size_t)t_size;
    default: return c->block;
    }
}

/* The call on (send, recv): through nodecoll (MPI_) or the host (PMPI_). */
static int run(const call *c, char *send, char *recv, int host)
{
    MPI_Comm w = MPI_COMM_WORLD;
    int n = (int)c->block, n64 = (int)(c->block / 8), in = c->in_place;
    const void *s = in ? MPI_IN_PLACE : send;
    switch (c->coll) {
    case C_BCAST: return (host ? PMPI_Bcast : MPI_Bcast)(send, n, MPI_BYTE, c->root, w);
    case C_ALLREDUCE: return (host ? PMPI_Allreduce : MPI_Allreduce)(s, recv, n64, MPI_INT64_T, MPI_SUM, w);
    case C_REDUCE: /* (the host runs it out of place: MPICH 4.0.2's in place at a root != 0 crashes) */
        if (host) return PMPI_Reduce(send, recv, n64, MPI_INT64_T, MPI_SUM, c->root, w);
        return MPI_Reduce(in && t_rank == c->root ? MPI_IN_PLACE : send, recv, n64, MPI_INT64_T, MPI_SUM, c->root, w);
    case C_REDUCE_SCATTER_BLOCK:
        return (host ? PMPI_Reduce_scatter_block : MPI_Reduce_scatter_block)(s, recv, n64 / t_size, MPI_INT64_T,
                                                                             MPI_SUM, w);
    case C_ALLGATHER: return (host ? PMPI_Allgather : MPI_Allgather)(s, n, MPI_BYTE, recv, n, MPI_BYTE, w);
    case C_GATHER:
        return (host ? PMPI_Gather : MPI_Gather)(in && t_rank == c->root ? MPI_IN_PLACE : send, n, MPI_BYTE, recv, n,
                                                 MPI_BYTE, c->root, w);
    case C_SCATTER:
        return (host ? PMPI_Scatter : MPI_Scatter)(send, n, MPI_BYTE, in && t_rank == c->root ? MPI_IN_PLACE : recv, n,
                                                   MPI_BYTE, c->root, w);
    default: return (host ? PMPI_Alltoall : MPI_Alltoall)(s, n, MPI_BYTE, recv, n, MPI_BYTE, w);
    }
}

/* What the call defines in this rank's buffers (Bcast: its buffer; else its receive buffer). */
static size_t result_bytes(const call *c)
{
    int root = t_rank == c->root;
    switch (c->coll) {
    case C_BCAST: return c->block;
    case C_REDUCE: return root ? c->block : 0;
    case C_REDUCE_SCATTER_BLOCK: return c->block / (size_t)t_size;
    case C_SCATTER: return root && c->in_place ? 0 : c->block;
    default: return recv_bytes(c);
    }
}

/* In place, where the input starts in the receive buffer (MPI's rule for each collective). */
static void place_input(const call *c, char *recv, const char *send)
{
    size_t mine = c->block;
    switch (c->coll) {
    case C_ALLGATHER: memcpy(recv + (size_t)t_rank * mine, send, mine); break;
    case C_GATHER:
        if (t_rank == c->root) memcpy(recv + (size_t)t_rank * mine, send, mine);
        break;
    case C_SCATTER: break; /* (the root keeps its block where it is in send) */
    case C_REDUCE:
        if (t_rank == c->root) memcpy(recv, send, mine);
        break;
    default: memcpy(recv, send, send_bytes(c) < recv_bytes(c) ? send_bytes(c) : recv_bytes(c));
    }
}

static int supports_in_place(const call *c) { return c->coll != C_BCAST; }

/* What nodecoll counted for this call's collective: single copy through the heap, through
 * CMA, and its algorithm when it is cma or shm. */
typedef struct counts {
    uint64_t heap, cma, alg_cma, alg_shm;
} counts;

static counts counted(const call *c)
{
    return (counts){nodecoll_stat_calls("single_copy", "heap"), nodecoll_stat_calls("single_copy", "cma"),
                    nodecoll_stat_calls(names[c->coll], "cma"), nodecoll_stat_calls(names[c->coll], "shm")};
}

/* Which way the data went: on heap buffers (everybody's, at least NODECOLL_HEAP_MIN, one
 * node) never through CMA; Reduce single copy exactly when every rank's buffers are in a
 * heap; without CMA, Bcast and Allreduce too (Bcast: when the root's is). */
static void check_way(const call *c, counts before, int all_in_heap, int root_in_heap, const char *what)
{
    counts after = counted(c);
    int cma_off = getenv("NODECOLL_CMA") && !strcmp(getenv("NODECOLL_CMA"), "off");
    if (all_in_heap && c->block >= heap_min)
        T_CHECK(after.cma == before.cma, "%s: %llu single-copy transfers through CMA on heap buffers", what,
                (unsigned long long)(after.cma - before.cma));
    if (c->block < (size_t)1 << 20) return; /* (far above every single-copy threshold) */
    if (c->coll == C_REDUCE) /* (with CMA or without: the slices only on heap buffers, the tree otherwise) */
        T_CHECK(after.alg_cma - before.alg_cma == (uint64_t)all_in_heap, "%s: single copy %s", what,
                all_in_heap ? "not run on heap buffers" : "run though a buffer is outside the heaps");
    if (!cma_off) return;
    if (c->coll == C_BCAST) {
        T_CHECK(after.alg_cma - before.alg_cma == (uint64_t)root_in_heap, "%s: single copy %s", what,
                root_in_heap ? "not run though the root's buffer is in its heap" : "run on a buffer outside the heap");
    } else if (c->coll == C_ALLREDUCE) {
        T_CHECK(after.alg_cma - before.alg_cma == (uint64_t)all_in_heap, "%s: single copy %s", what,
                all_in_heap ? "not run on heap buffers" : "run though a buffer is outside the heaps");
        T_CHECK(after.alg_shm - before.alg_shm == (uint64_t)!all_in_heap, "%s: the rings did not serve it", what);
    }
}

/* Every rank allocates its buffers afresh (outside the heap when `outside`), runs the call
 * through nodecoll and, on copies, through the host, and compares what it received. */
static void check(const call *c, int outside, int all_in_heap, int root_in_heap, uint64_t seed)
{
    char what[160];
    snprintf(what, sizeof what, "%s of %zu B, root %d%s, %s", names[c->coll], c->block, c->root,
             c->in_place ? ", in place" : "", outside ? "my buffers outside the heap" : "heap buffers");
    size_t sb = send_bytes(c), rb = recv_bytes(c), keep = result_bytes(c);
    buffer send = get(sb, outside), recv = get(rb, outside);
    char *host_send = malloc(sb + 8), *host_recv = malloc(rb + 8);
    fill(send.p, sb, seed + (uint64_t)t_rank);
    memcpy(host_send, send.p, sb);
    memset(recv.p, 0x5a, rb);
    memset(host_recv, 0x5a, rb);
    if (c->in_place) {
        place_input(c, recv.p, send.p);
        place_input(c, host_recv, host_send);
    }
    counts before = counted(c);
    T_CHECK(run(c, send.p, recv.p, 0) == MPI_SUCCESS, "%s: nodecoll failed", what);
    if (expect_heap) check_way(c, before, all_in_heap, root_in_heap, what);
    T_CHECK(run(c, host_send, host_recv, 1) == MPI_SUCCESS, "%s: the host failed", what);
    const char *got = c->coll == C_BCAST ? send.p : recv.p, *want = c->coll == C_BCAST ? host_send : host_recv;
    size_t bad = 0;
    while (bad < keep && got[bad] == want[bad]) bad++;
    T_CHECK(bad == keep, "%s: byte %zu of %zu differs from the host's", what, bad, keep);
    put(&send);
    put(&recv);
    free(host_send);
    free(host_recv);
}

/* ---- the rounds ------------------------------------------------------------------------------- */

/* In mixed placement, whose buffers are outside the heap in round k: rank (k mod (size + 1)),
 * or nobody every size + 1 rounds. */
static int outside_in_round(int k, int rank, int mixed) { return mixed && k % (t_size + 1) == rank; }

static void rounds(int per_size, int mixed)
{
    const size_t sizes[] = {8,       1000, heap_min - 8, heap_min, 200 * 1024 + 24, ((size_t)1 << 20) + 8 * 12,
                            (size_t)4 << 20};
    int k = 0;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (int r = 0; r < per_size; r++)
            for (int coll = 0; coll < C_COUNT; coll++, k++) {
                size_t per_rank = coll == C_BCAST || coll == C_ALLREDUCE || coll == C_REDUCE ? sizes[s] : sizes[s] / 2;
                call c = {coll, k % t_size, 0, per_rank};
                if (coll == C_REDUCE_SCATTER_BLOCK) c.block = c.block / 8 / (size_t)t_size * 8 * (size_t)t_size;
                if (coll == C_ALLREDUCE || coll == C_REDUCE || coll == C_REDUCE_SCATTER_BLOCK) c.block &= ~(size_t)7;
                c.in_place = supports_in_place(&c) && (k / C_COUNT) % 2 == 1;
                int all_in_heap = 1;
                for (int q = 0; q < t_size; q++) all_in_heap &= !outside_in_round(k, q, mixed);
                check(&c, outside_in_round(k, t_rank, mixed), all_in_heap, !outside_in_round(k, c.root, mixed),
                      (uint64_t)k * 977);
            }
}

/* ---- what must not pile up -------------------------------------------------------------------- */

static int count_fds(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    for (struct dirent *e; d && (e = readdir(d));) n += e->d_name[0] != '.';
    if (d) closedir(d);
    return n;
}

static int count_heap_mappings(void)
{
    char line[512];
    int n = 0;
    FILE *f = fopen("/proc/self/maps", "r");
    while (f && fgets(line, sizeof line, f)) n += strstr(line, "memfd:nodecoll-heap") != NULL;
    if (f) fclose(f);
    return n;
}

/* Names in /dev/shm of segments this job's ranks created (/nodecoll.<pid>.<n>.<hex>). */
static int job_names_in_dev_shm(void)
{
    long pids[64];
    long mine = (long)getpid();
    int n = t_size < 64 ? t_size : 64, found = 0;
    PMPI_Allgather(&mine, 1, MPI_LONG, pids, 1, MPI_LONG, MPI_COMM_WORLD);
    DIR *d = opendir("/dev/shm");
    for (struct dirent *e; d && (e = readdir(d));)
        for (int r = 0; r < n; r++) {
            char prefix[64];
            snprintf(prefix, sizeof prefix, "nodecoll.%ld.", pids[r]);
            found += !strncmp(e->d_name, prefix, strlen(prefix));
        }
    if (d) closedir(d);
    return found;
}

static void many_communicators(void)
{
    MPI_Barrier(MPI_COMM_WORLD);
    int fds = count_fds(), maps = count_heap_mappings();
    for (int i = 0; i < t_scale(40); i++) {
        MPI_Comm dup;
        MPI_Comm_dup(MPI_COMM_WORLD, &dup);
        buffer b = get((size_t)1 << 20, 0);
        fill(b.p, b.bytes, (uint64_t)i);
        MPI_Bcast(b.p, (int)b.bytes, MPI_BYTE, i % t_size, dup);
        put(&b);
        MPI_Comm_free(&dup);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    T_CHECK(count_fds() == fds, "descriptors: %d before %d communicators, %d after", fds, t_scale(40), count_fds());
    T_CHECK(count_heap_mappings() == maps, "mappings of heaps: %d before, %d after", maps, count_heap_mappings());
    int node_ranks = getenv("NODECOLL_RANKS_PER_NODE") ? atoi(getenv("NODECOLL_RANKS_PER_NODE")) : t_size;
    if (node_ranks > t_size || node_ranks < 1) node_ranks = t_size;
    if (expect_heap) T_CHECK(maps >= node_ranks, "%d mappings of heaps: mine and each node peer's expected", maps);
    T_CHECK(job_names_in_dev_shm() == 0, "names of this job left in /dev/shm");
}

/* A node without CMA stages a send buffer outside the heap: only its blocks may be read, the
 * memory between them may be anything, even inaccessible (MPI reads only the blocks). */
static void gaps_between_blocks_outside_heap(void)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE), block = 64 * page, stride = block + page;
    char *send = mmap(NULL, stride * (size_t)t_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    T_CHECK(send != MAP_FAILED, "mmap of the gapped send buffer");
    if (send == MAP_FAILED) return;
    int *lens = malloc(sizeof(int) * 3 * (size_t)t_size), *sdispls = lens + t_size, *rdispls = sdispls + t_size;
    for (int j = 0; j < t_size; j++) {
        fill(send + stride * (size_t)j, block, (uint64_t)(t_rank * 131 + j));
        mprotect(send + stride * (size_t)j + block, page, PROT_NONE);
        lens[j] = (int)block;
        sdispls[j] = (int)(stride * (size_t)j);
        rdispls[j] = (int)(block * (size_t)j);
    }
    buffer got = get(block * (size_t)t_size, 1), want = get(block * (size_t)t_size, 1);
    MPI_Alltoallv(send, lens, sdispls, MPI_BYTE, got.p, lens, rdispls, MPI_BYTE, MPI_COMM_WORLD);
    PMPI_Alltoallv(send, lens, sdispls, MPI_BYTE, want.p, lens, rdispls, MPI_BYTE, MPI_COMM_WORLD);
    T_CHECK(!memcmp(got.p, want.p, got.bytes), "Alltoallv of blocks with inaccessible gaps outside the heap");
    put(&got);
    put(&want);
    free(lens);
    munmap(send, stride * (size_t)t_size);
}

/* The shared memory this process maps (its own heap's pages and its peers'), in KiB. */
static long shared_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "RssShmem:", 9)) kib = atol(line + 9);
    if (f) fclose(f);
    return kib;
}

/* Staging copies of buffers outside the heap are the call's, not the communicator's: many
 * live communicators, each with one large Allgather of such buffers, leave no copies mapped
 * (beyond NODECOLL_HEAP_RETAIN's backed pages, which this test's run keeps small). */
static void staging_not_kept_by_communicators(void)
{
    enum { COMMS = 12 };
    size_t bytes = (size_t)4 << 20;
    buffer send = get(bytes, 1), recv = get(bytes * (size_t)t_size, 1);
    fill(send.p, bytes, (uint64_t)t_rank);
    MPI_Comm comms[COMMS];
    MPI_Barrier(MPI_COMM_WORLD);
    long before = shared_kib();
    for (int i = 0; i < COMMS; i++) {
        MPI_Comm_dup(MPI_COMM_WORLD, &comms[i]);
        MPI_Allgather(send.p, (int)bytes, MPI_BYTE, recv.p, (int)bytes, MPI_BYTE, comms[i]);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    long grown = shared_kib() - before, limit = (long)(4 * bytes / 1024);
    T_CHECK(grown <= limit, "%d communicators with an Allgather of %zu bytes outside the heap: %ld KiB more shared "
            "memory mapped (at most %ld expected)", COMMS, bytes, grown, limit);
    for (int i = 0; i < COMMS; i++) MPI_Comm_free(&comms[i]);
    put(&send);
    put(&recv);
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv);
    int per_size = argc > 1 ? atoi(argv[1]) : 2;
    const char *heap = getenv("NODECOLL_HEAP"), *buffers = getenv("T_BUFFERS"), *min = getenv("NODECOLL_HEAP_MIN");
    alloc_mem = heap && !strcmp(heap, "alloc_mem");
    expect_heap = getenv("T_EXPECT_HEAP") && atoi(getenv("T_EXPECT_HEAP"));
    heap_min = min ? (size_t)strtoull(min, NULL, 10) : 131072;
    rounds(t_scale(per_size), buffers && !strcmp(buffers, "mixed"));
    gaps_between_blocks_outside_heap();
    if (getenv("T_STAGING_BOUND")) staging_not_kept_by_communicators();
    many_communicators();
    if (expect_heap) T_CHECK(nodecoll_stat_calls("single_copy", "heap") > 0, "nothing moved through the heap");
    return t_finish("test_heap");
}
