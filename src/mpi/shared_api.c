/* The node-shared collectives of include/nodecoll.h: argument checks and MPI error codes,
 * the region of each handle, the per-rank fallback, and the debug page protection.  The
 * protocol itself is src/coll/shared.c. */
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "nodecoll.h"
#include "errors.h"
#include "state.h"
#include "../coll/shared.h"
#include "../core/fatal.h"
#include "../core/segment.h"

#define NC_EXPORT __attribute__((visibility("default")))
#define HANDLE_MAGIC 0x6e63736861726564ULL /* "ncshared" */

/* ---- handles -------------------------------------------------------------------------- */

struct nodecoll_shared_handle {
    uint64_t magic;
    MPI_Comm comm;
    nc_shared core;
    int solo;              /* fallback: every rank its own node over the host MPI */
    nc_alg_id solo_reason;
    nc_comm solo_comm;
    MPI_Comm solo_bridge;
    void *region;          /* the shared region (NULL when solo: core.data is private) */
    size_t data_bytes;     /* mapped bytes of core.data */
    nc_block *blocks;      /* per comm rank */
    int *displs;           /* per comm rank, Allgatherv */
    int debug, prot, debug_slot;
};

static struct nodecoll_shared_handle *valid(nodecoll_shared h)
{
    return h && h->magic == HANDLE_MAGIC ? h : NULL;
}

static nc_comm *comm_of(const struct nodecoll_shared_handle *h) { return h->core.comm; }

static int finish(struct nodecoll_shared_handle *h, nc_coll_id coll, size_t bytes, int err, int mismatch)
{
    nc_stats_count(coll, h->solo ? h->solo_reason : NC_ALG_NODE_SHARED, bytes);
    if (err) return nc_mpi_raise(h->comm, err);
    return mismatch ? nc_mpi_error(h->comm, NC_ERR_MISMATCH) : MPI_SUCCESS;
}

/* ---- debug: page protection and a SIGSEGV handler that names the misuse ---------------- */

#define DEBUG_RANGES 64
static struct {
    _Atomic uintptr_t base;
    _Atomic size_t bytes;
    _Atomic int prot;
} ranges[DEBUG_RANGES];
static struct sigaction previous_segv;
static pthread_once_t segv_once = PTHREAD_ONCE_INIT;
static int world_rank = -1;

static void say_fd(const char *a, const char *b)
{
    char rank[16], *p = rank + sizeof rank;
    unsigned v = world_rank < 0 ? 0 : (unsigned)world_rank;
    *--p = '\0';
    do *--p = (char)('0' + v % 10); while ((v /= 10) && p > rank);
    const char *parts[] = {"nodecoll: rank ", p, ": ", a, b, "\n"};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        ssize_t ignored = write(2, parts[i], strlen(parts[i]));
        (void)ignored;
    }
}

static void on_segv(int sig, siginfo_t *info, void *context)
{
    uintptr_t at = (uintptr_t)info->si_addr;
    for (int i = 0; i < DEBUG_RANGES; i++) {
        uintptr_t base = atomic_load(&ranges[i].base);
        if (!base || at < base || at >= base + atomic_load(&ranges[i].bytes)) continue;
        if (atomic_load(&ranges[i].prot) == PROT_READ)
            say_fd("write into a node-shared result, which is read-only ",
                   "(write a contribution into the buffer of nodecoll_shared_get_buffer, before the call)");
        else
            say_fd("access to a node-shared result after this rank released it ",
                   "(by nodecoll_shared_release, get_buffer or the next call on the handle)");
        break;
    }
    /* Hand the fault to whoever handled it before (the MPI's backtrace, or the default). */
    if (previous_segv.sa_flags & SA_SIGINFO) {
        previous_segv.sa_sigaction(sig, info, context);
    } else if (previous_segv.sa_handler != SIG_DFL && previous_segv.sa_handler != SIG_IGN) {
        previous_segv.sa_handler(sig);
    } else {
        signal(SIGSEGV, SIG_DFL); /* returning re-runs the access, which now kills us */
    }
}

static void install_segv_handler(void)
{
    PMPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &previous_segv);
}

static void debug_register(struct nodecoll_shared_handle *h)
{
    h->debug_slot = -1;
    if (!h->debug) return;
    pthread_once(&segv_once, install_segv_handler);
    for (int i = 0; i < DEBUG_RANGES; i++) {
        uintptr_t empty = 0;
        if (atomic_compare_exchange_strong(&ranges[i].base, &empty, (uintptr_t)1)) {
            atomic_store(&ranges[i].bytes, h->data_bytes);
            atomic_store(&ranges[i].prot, PROT_READ | PROT_WRITE);
            atomic_store(&ranges[i].base, (uintptr_t)h->core.data);
            h->debug_slot = i;
            return;
        }
    }
}

static void debug_unregister(struct nodecoll_shared_handle *h)
{
    if (h->debug_slot >= 0) atomic_store(&ranges[h->debug_slot].base, (uintptr_t)0);
}

static void protect(struct nodecoll_shared_handle *h, int prot)
{
    if (!h->debug || h->prot == prot) return;
    if (h->debug_slot >= 0) atomic_store(&ranges[h->debug_slot].prot, prot);
    if (mprotect(h->core.data, h->data_bytes, prot)) nc_fatal("mprotect of a node-shared result failed");
    h->prot = prot;
}

/* ---- create / free -------------------------------------------------------------------- */

static int agree(int ok, MPI_Comm comm)
{
    int all = 0;
    PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm);
    return all;
}

static int slot_free(const nc_node *n)
{
    for (int s = 0; s < NC_SHARED_SLOTS; s++)
        if (!n->shared_used[s]) return 1;
    return 0;
}

/* The node leader creates the region, the others map it, and the name goes as soon as all
 * have (no exit path can leave it in /dev/shm).  Every rank of comm agrees, or nobody uses
 * shared memory: nodes on different paths would wait for each other forever. */
static int map_node_region(struct nodecoll_shared_handle *h, nc_mpi_comm *s, size_t max_bytes)
{
    nc_comm *c = &s->coll;
    int ok = slot_free(&c->node) && nc_segment_mapped_bytes() + nc_region_total(max_bytes) <= (size_t)c->cfg.shm_cap;
    if (!agree(ok, h->comm)) return 0;
    char name[NC_SEGMENT_NAME_MAX] = "";
    void *base = NULL;
    if (c->node.rank == 0) {
        nc_segment_sweep_stale();
        if (nc_region_create(max_bytes, name, &base)) name[0] = '\0';
    }
    PMPI_Bcast(name, sizeof name, MPI_CHAR, 0, s->node_comm);
    ok = name[0] != '\0';
    if (ok && c->node.rank != 0) ok = nc_region_attach(name, max_bytes, &base) == 0;
    ok = agree(ok, h->comm); /* also: every rank has mapped, the name can go */
    if (c->node.rank == 0 && name[0]) nc_segment_unlink(name);
    if (!ok) {
        nc_region_unmap(base, max_bytes);
        return 0;
    }
    h->region = base;
    h->data_bytes = nc_region_total(max_bytes) - nc_region_header_bytes();
    if (nc_shared_open(&h->core, c, nc_region_data(base), max_bytes)) nc_fatal("no free node-shared flag set");
    return 1;
}

static void open_solo(struct nodecoll_shared_handle *h, size_t max_bytes)
{
    long page = sysconf(_SC_PAGESIZE);
    h->solo = 1;
    h->data_bytes = (max_bytes + (size_t)page) / (size_t)page * (size_t)page;
    void *data = mmap(NULL, h->data_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (data == MAP_FAILED) nc_fatal("out of memory for a %zu-byte node-shared result", max_bytes);
    nc_mpi_solo_comm(h->comm, &h->solo_comm, &h->solo_bridge);
    nc_shared_open(&h->core, &h->solo_comm, data, max_bytes);
}

NC_EXPORT int nodecoll_shared_create(MPI_Comm comm, MPI_Aint max_bytes, nodecoll_shared *handle)
{
    int inter = 0;
    if (comm == MPI_COMM_NULL) return nc_mpi_error(MPI_COMM_WORLD, NC_ERR_COMM);
    PMPI_Comm_test_inter(comm, &inter);
    if (inter) return nc_mpi_error(comm, NC_ERR_COMM);
    if (!handle) return nc_mpi_error(comm, NC_ERR_NULL_ARG);
    if (max_bytes < 0) return nc_mpi_error(comm, NC_ERR_MAX_BYTES);
    long long range[2] = {max_bytes, -(long long)max_bytes};
    PMPI_Allreduce(MPI_IN_PLACE, range, 2, MPI_LONG_LONG, MPI_MIN, comm);
    if (range[0] != -range[1]) return nc_mpi_error(comm, NC_ERR_MAX_DIFFERS);

    struct nodecoll_shared_handle *h = calloc(1, sizeof *h);
    if (!h) nc_fatal("out of memory for a node-shared handle");
    h->magic = HANDLE_MAGIC;
    h->comm = comm;
    h->solo_bridge = MPI_COMM_NULL;
    nc_mpi_comm *s = nc_mpi_lookup(comm, &h->solo_reason);
    if (!s || !map_node_region(h, s, (size_t)max_bytes)) {
        if (s) h->solo_reason = NC_ALG_PMPI_NO_SHM;
        open_solo(h, (size_t)max_bytes);
    }
    int size = comm_of(h)->size;
    h->blocks = malloc(sizeof *h->blocks * (size_t)size);
    h->displs = malloc(sizeof *h->displs * (size_t)size);
    if (!h->blocks || !h->displs) nc_fatal("out of memory for a node-shared handle");
    h->debug = (int)comm_of(h)->cfg.shared_debug;
    h->prot = PROT_READ | PROT_WRITE;
    debug_register(h);
    protect(h, PROT_NONE); /* nothing is held yet */
    *handle = h;
    return MPI_SUCCESS;
}

NC_EXPORT int nodecoll_shared_free(nodecoll_shared *handle)
{
    struct nodecoll_shared_handle *h = handle ? valid(*handle) : NULL;
    if (!h) return nc_mpi_error(MPI_COMM_WORLD, NC_ERR_NULL_HANDLE);
    nc_shared_close(&h->core);
    debug_unregister(h);
    if (h->region) {
        nc_region_unmap(h->region, h->core.capacity);
    } else {
        munmap(h->core.data, h->data_bytes);
        nc_mpi_solo_comm_free(&h->solo_comm, &h->solo_bridge);
    }
    free(h->blocks);
    free(h->displs);
    h->magic = 0;
    free(h);
    *handle = NODECOLL_SHARED_NULL;
    return MPI_SUCCESS;
}

NC_EXPORT int nodecoll_shared_info(nodecoll_shared handle, int *node_ranks, MPI_Aint *node_bytes)
{
    struct nodecoll_shared_handle *h = valid(handle);
    if (!h) return nc_mpi_error(MPI_COMM_WORLD, NC_ERR_NULL_HANDLE);
    if (node_ranks) *node_ranks = comm_of(h)->node.size;
    if (node_bytes) *node_bytes = h->region ? (MPI_Aint)nc_region_total(h->core.capacity) : 0;
    return MPI_SUCCESS;
}

NC_EXPORT size_t nodecoll_shm_mapped_bytes(void) { return nc_segment_mapped_bytes(); }

/* ---- get_buffer / release ------------------------------------------------------------- */

NC_EXPORT int nodecoll_shared_get_buffer(nodecoll_shared handle, void **buffer)
{
    struct nodecoll_shared_handle *h = valid(handle);
    if (!h) return nc_mpi_error(MPI_COMM_WORLD, NC_ERR_NULL_HANDLE);
    if (!buffer) return nc_mpi_error(h->comm, NC_ERR_NULL_ARG);
    *buffer = nc_shared_prepare(&h->core);
    protect(h, PROT_READ | PROT_WRITE);
    return MPI_SUCCESS;
}

NC_EXPORT int nodecoll_shared_release(nodecoll_shared handle)
{
    struct nodecoll_shared_handle *h = valid(handle);
    if (!h) return nc_mpi_error(MPI_COMM_WORLD, NC_ERR_NULL_HANDLE);
    if (nc_shared_release(&h->core)) return nc_mpi_error(h->comm, NC_ERR_NOT_HELD);
    protect(h, PROT_NONE);
    return MPI_SUCCESS;
}

/* ---- the collectives ------------------------------------------------------------------ */

/* A datatype as the region sees it: elements `extent` apart, the last one ending `tail_gap`
 * bytes before its extent does (buffers may end there). */
typedef struct elem_layout {
    size_t extent, tail_gap;
} elem_layout;

static int describe(MPI_Datatype type, elem_layout *out)
{
    MPI_Aint lb, extent, true_lb, true_extent;
    if (type == MPI_DATATYPE_NULL) return 0;
    if (PMPI_Type_get_extent(type, &lb, &extent) != MPI_SUCCESS ||
        PMPI_Type_get_true_extent(type, &true_lb, &true_extent) != MPI_SUCCESS)
        return 0;
    if (lb != 0 || true_lb < 0 || extent <= 0 || true_lb + true_extent > extent) return 0;
    *out = (elem_layout){(size_t)extent, (size_t)(extent - true_lb - true_extent)};
    return 1;
}

static size_t span(const elem_layout *t, size_t count) { return count ? count * t->extent - t->tail_gap : 0; }

/* Checks shared by every collective: handle, result pointer, count, datatype.  NULL (and
 * the raised error in *err) when one fails. */
static struct nodecoll_shared_handle *enter(nodecoll_shared handle, const void **result, int count, MPI_Datatype type,
                                            elem_layout *t, int *err)
{
    struct nodecoll_shared_handle *h = valid(handle);
    nc_mpi_error_id e = !result ? NC_ERR_NULL_ARG : count < 0 ? NC_ERR_COUNT : !describe(type, t) ? NC_ERR_TYPE : NC_ERR_COUNT_;
    if (!h) *err = nc_mpi_error(MPI_COMM_WORLD, NC_ERR_NULL_HANDLE);
    else if (e != NC_ERR_COUNT_) *err = nc_mpi_error(h->comm, e);
    return h && e == NC_ERR_COUNT_ ? h : NULL;
}

static int in_place_ready(const struct nodecoll_shared_handle *h)
{
    return h->core.prepared_for == h->core.seq + 1;
}

static nc_mpi_error_id check_send(const struct nodecoll_shared_handle *h, const void *sendbuf, size_t bytes)
{
    if (sendbuf == MPI_IN_PLACE) return in_place_ready(h) ? NC_ERR_COUNT_ : NC_ERR_IN_PLACE;
    return !sendbuf && bytes ? NC_ERR_BUFFER : NC_ERR_COUNT_;
}

#define CHECK(h, expr)                                       \
    do {                                                     \
        nc_mpi_error_id e_ = (expr);                            \
        if (e_ != NC_ERR_COUNT_) return nc_mpi_error((h)->comm, e_);      \
    } while (0)

NC_EXPORT int nodecoll_shared_bcast(const void *buffer, int count, MPI_Datatype type, int root,
                                    nodecoll_shared handle, const void **result)
{
    elem_layout t;
    int err;
    struct nodecoll_shared_handle *h = enter(handle, result, count, type, &t, &err);
    if (!h) return err;
    nc_comm *c = comm_of(h);
    if (root < 0 || root >= c->size) return nc_mpi_error(h->comm, NC_ERR_ROOT);
    size_t bytes = span(&t, (size_t)count);
    if ((size_t)count * t.extent > h->core.capacity) return nc_mpi_error(h->comm, NC_ERR_TOO_BIG);
    int is_root = c->rank == root;
    if (is_root) CHECK(h, check_send(h, buffer, bytes));
    int mismatch = 0;
    protect(h, PROT_READ | PROT_WRITE);
    err = nc_shared_bcast(&h->core, is_root && buffer != MPI_IN_PLACE ? buffer : NULL, bytes, root, &mismatch);
    protect(h, PROT_READ);
    *result = h->core.data;
    return finish(h, NC_COLL_BCAST, bytes, err, mismatch);
}

/* FNV-1a over the arguments every rank must pass alike. */
static uint64_t hash_words(uint64_t hash, const int *words, int n)
{
    for (int i = 0; i < n; i++) hash = (hash ^ (uint64_t)(unsigned)words[i]) * 0x100000001b3ULL;
    return hash;
}

static int gather_blocks(struct nodecoll_shared_handle *h, const void *sendbuf, size_t signature, nc_coll_id coll,
                         const void **result)
{
    int mismatch = 0;
    const nc_block *mine = &h->blocks[comm_of(h)->rank];
    CHECK(h, check_send(h, sendbuf, mine->bytes));
    protect(h, PROT_READ | PROT_WRITE);
    const void *src = sendbuf == MPI_IN_PLACE ? NULL : sendbuf;
    int err = nc_shared_allgather(&h->core, coll, src, h->blocks, signature, &mismatch);
    protect(h, PROT_READ);
    *result = h->core.data;
    return finish(h, coll, mine->bytes, err, mismatch);
}

NC_EXPORT int nodecoll_shared_allgather(const void *sendbuf, int count, MPI_Datatype type, nodecoll_shared handle,
                                        const void **result)
{
    elem_layout t;
    int err;
    struct nodecoll_shared_handle *h = enter(handle, result, count, type, &t, &err);
    if (!h) return err;
    nc_comm *c = comm_of(h);
    size_t stride = (size_t)count * t.extent;
    if (stride && (size_t)c->size > h->core.capacity / stride) return nc_mpi_error(h->comm, NC_ERR_TOO_BIG);
    for (int r = 0; r < c->size; r++) h->blocks[r] = (nc_block){(size_t)r * stride, span(&t, (size_t)count)};
    return gather_blocks(h, sendbuf, stride, NC_COLL_ALLGATHER, result);
}

NC_EXPORT int nodecoll_shared_allgatherv(const void *sendbuf, int sendcount, const int recvcounts[], const int displs[],
                                         MPI_Datatype type, nodecoll_shared handle, const void **result,
                                         const int **result_displs)
{
    elem_layout t;
    int err;
    struct nodecoll_shared_handle *h = enter(handle, result, sendcount, type, &t, &err);
    if (!h) return err;
    nc_comm *c = comm_of(h);
    if (!recvcounts) return nc_mpi_error(h->comm, NC_ERR_NULL_ARG);
    if (recvcounts[c->rank] != sendcount) return nc_mpi_error(h->comm, NC_ERR_COUNT);
    size_t packed = 0;
    for (int r = 0; r < c->size; r++) {
        if (recvcounts[r] < 0 || (displs && displs[r] < 0)) return nc_mpi_error(h->comm, NC_ERR_COUNT);
        size_t at = displs ? (size_t)displs[r] : packed;
        if (at > INT_MAX) return nc_mpi_error(h->comm, NC_ERR_TOO_BIG);
        h->displs[r] = (int)at;
        packed = at + (size_t)recvcounts[r];
        if (recvcounts[r] && packed > h->core.capacity / t.extent) return nc_mpi_error(h->comm, NC_ERR_TOO_BIG);
        h->blocks[r] = (nc_block){at * t.extent, span(&t, (size_t)recvcounts[r])};
    }
    uint64_t signature = hash_words(0xcbf29ce484222325ULL ^ t.extent, recvcounts, c->size);
    signature = hash_words(signature, h->displs, c->size);
    if (result_displs) *result_displs = h->displs;
    return gather_blocks(h, sendbuf, signature, NC_COLL_ALLGATHERV, result);
}

/* Nodes hold consecutive ranks, in bridge order: a non-commutative fold per node followed by
 * one across the leaders then keeps MPI's rank order. */
static int nodes_consecutive(const nc_comm *c)
{
    for (int r = 1; r < c->size; r++)
        if (c->node_of[r] < c->node_of[r - 1]) return 0;
    return 1;
}

NC_EXPORT int nodecoll_shared_allreduce(const void *sendbuf, int count, MPI_Datatype type, MPI_Op op,
                                        nodecoll_shared handle, const void **result)
{
    elem_layout t;
    int commutative = 1, mismatch = 0;
    int err;
    struct nodecoll_shared_handle *h = enter(handle, result, count, type, &t, &err);
    if (!h) return err;
    nc_comm *c = comm_of(h);
    if (sendbuf == MPI_IN_PLACE) return nc_mpi_error(h->comm, NC_ERR_REDUCE_IN_PLACE);
    if (!sendbuf && count) return nc_mpi_error(h->comm, NC_ERR_BUFFER);
    if (op == MPI_OP_NULL) return nc_mpi_error(h->comm, NC_ERR_OP);
    if ((size_t)count * t.extent > h->core.capacity) return nc_mpi_error(h->comm, NC_ERR_TOO_BIG);
    PMPI_Op_commutative(op, &commutative);
    if (!commutative && nc_comm_multinode(c) && !nodes_consecutive(c)) return nc_mpi_error(h->comm, NC_ERR_OP_ORDER);
    nc_mpi_reduction rc;
    if (nc_mpi_describe_reduction(&rc, type, op, &c->cfg))
        nc_mpi_host_reduction(&rc, type, op, t.extent, commutative);
    protect(h, PROT_READ | PROT_WRITE);
    err = nc_shared_allreduce(&h->core, sendbuf, (size_t)count, t.tail_gap, &rc.red, &mismatch);
    protect(h, PROT_READ);
    *result = h->core.data;
    return finish(h, NC_COLL_ALLREDUCE, span(&t, (size_t)count), err, mismatch);
}
