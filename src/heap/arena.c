/* The arena (arena.h): a memfd of NODECOLL_HEAP_SIZE bytes, mapped once, carved into
 * page-aligned blocks.
 *
 * Layout: page 0 holds a header (magic, the heap's id, the owner's pid) so a peer can tell
 * it mapped the right memfd; blocks follow.  Every block starts with 64 bytes of header
 * before the pointer handed out (its pages, and a check word derived from the pointer), so
 * free, realloc and malloc_usable_size need no table.  Free pages are kept in a list of
 * extents sorted by offset; `top` is where never-used pages begin.
 *
 * Freed pages stay backed ("dirty") up to NODECOLL_HEAP_RETAIN bytes, so a program that
 * frees and allocates the same large buffer again does not fault every page in again (the
 * C library's allocator keeps such memory as well); beyond that, the largest dirty extents
 * are handed back to the system (a hole punched in the memfd frees the pages in every
 * process that maps them).  Clean pages read as zero, which calloc relies on.
 *
 * fork: the arena is mapped MADV_DONTFORK, so a child does not inherit the shared mapping
 * (it would share every later write with its parent and the parent's peers).  In the child
 * an atfork handler maps private memory over the range and reads the parent's live blocks
 * into it from the memfd, while the parent waits for it in its own handler; the child's
 * heap is then private: it keeps working as an allocator but is never shared. */
#include "arena.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define BLOCK_HEADER 64
#define EXTENTS_MAX 4096
#define ARENA_MAGIC UINT64_C(0x6e6f6465636f6c6c) /* "nodecoll" */
#define BLOCK_MAGIC UINT64_C(0x68656170626c6f63)

typedef struct extent {
    uint64_t off, len;
    int dirty; /* its pages are still backed (freed blocks within NODECOLL_HEAP_RETAIN) */
} extent;

typedef struct block_header {
    uint64_t check;    /* BLOCK_MAGIC ^ the block's address; 0 once freed */
    uint64_t off, len; /* the block's pages */
    unsigned char unused[BLOCK_HEADER - 3 * sizeof(uint64_t)];
} block_header;

typedef struct arena_header {
    uint64_t magic, id, pid;
} arena_header;

_Atomic(char *) nc_arena_base;
size_t nc_arena_span;

static struct {
    pthread_mutex_t lock;
    size_t page, size, retain;
    int fd;       /* the memfd; -1 when none, or private (a fork's child) */
    int failed;   /* errno of the failed creation: not tried again */
    uint64_t id;
    uint64_t top;
    extent free[EXTENTS_MAX];
    int nfree;
    uint64_t dirty; /* bytes of dirty extents */
} arena = {PTHREAD_MUTEX_INITIALIZER, 0, (size_t)64 << 30, (size_t)64 << 20, -1, 0, 0, 0, {{0, 0, 0}}, 0, 0};

void nc_arena_configure(size_t size, size_t retain)
{
    arena.size = size;
    arena.retain = retain;
}

static uint64_t round_up(uint64_t x, uint64_t to) { return (x + to - 1) / to * to; }

static char *base_of(void) { return atomic_load_explicit(&nc_arena_base, memory_order_relaxed); }

/* ---- free extents ------------------------------------------------------------------------ */

/* Gives pages back to the system: every process mapping them sees zeros from now on. */
static void punch(uint64_t off, uint64_t len)
{
    if (arena.fd < 0 || fallocate(arena.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len))
        madvise(base_of() + off, len, arena.fd < 0 ? MADV_DONTNEED : MADV_REMOVE);
}

static void remove_extent(int i)
{
    if (arena.free[i].dirty) arena.dirty -= arena.free[i].len;
    memmove(&arena.free[i], &arena.free[i + 1], sizeof(extent) * (size_t)(arena.nfree - i - 1));
    arena.nfree--;
}

/* Returns [off, off + len) to the free pages, merged with free neighbours of the same kind;
 * clean pages that reach the top lower it. */
static void give(uint64_t off, uint64_t len, int dirty)
{
    if (!len) return;
    int i = 0;
    while (i < arena.nfree && arena.free[i].off < off) i++;
    extent *prev = i > 0 ? &arena.free[i - 1] : NULL, *next = i < arena.nfree ? &arena.free[i] : NULL;
    int with_prev = prev && prev->dirty == dirty && prev->off + prev->len == off;
    int with_next = next && next->dirty == dirty && off + len == next->off;
    if (dirty) arena.dirty += len;
    if (with_prev && with_next) {
        prev->len += len + next->len;
        memmove(next, next + 1, sizeof(extent) * (size_t)(arena.nfree - i - 1));
        arena.nfree--;
        i--;
    } else if (with_prev) {
        prev->len += len;
        i--;
    } else if (with_next) {
        next->off = off;
        next->len += len;
    } else if (arena.nfree < EXTENTS_MAX) {
        memmove(&arena.free[i + 1], &arena.free[i], sizeof(extent) * (size_t)(arena.nfree - i));
        arena.free[i] = (extent){off, len, dirty};
        arena.nfree++;
    } else { /* the list is full (thousands of holes): the pages go back, their addresses stay unused */
        if (dirty) arena.dirty -= len;
        punch(off, len);
        return;
    }
    if (!arena.free[i].dirty && arena.free[i].off + arena.free[i].len == arena.top) {
        arena.top = arena.free[i].off;
        remove_extent(i);
    }
}

/* Keeps at most NODECOLL_HEAP_RETAIN bytes of freed pages backed: the largest go first. */
static void trim(void)
{
    while (arena.dirty > arena.retain) {
        int largest = -1;
        for (int i = 0; i < arena.nfree; i++)
            if (arena.free[i].dirty && (largest < 0 || arena.free[i].len > arena.free[largest].len)) largest = i;
        extent e = arena.free[largest];
        remove_extent(largest);
        punch(e.off, e.len);
        give(e.off, e.len, 0);
    }
}

/* Pages for a block: the smallest dirty extent that holds them (no page faults), else the
 * first clean one, else fresh pages at the top. */
static int take(uint64_t len, uint64_t *off, int *dirty)
{
    int best = -1;
    for (int i = 0; i < arena.nfree; i++)
        if (arena.free[i].dirty && arena.free[i].len >= len && (best < 0 || arena.free[i].len < arena.free[best].len))
            best = i;
    for (int i = 0; best < 0 && i < arena.nfree; i++)
        if (arena.free[i].len >= len) best = i;
    if (best >= 0) {
        extent *e = &arena.free[best];
        *off = e->off;
        *dirty = e->dirty;
        if (e->len == len) {
            remove_extent(best);
        } else {
            e->off += len;
            e->len -= len;
            if (e->dirty) arena.dirty -= len;
        }
        return 1;
    }
    if (len > arena.size - arena.top) return 0;
    *off = arena.top;
    *dirty = 0;
    arena.top += len;
    return 1;
}

/* ---- the arena ---------------------------------------------------------------------------- */

static uint64_t new_id(void)
{
    uint64_t id = 0;
    if (getrandom(&id, sizeof id, GRND_NONBLOCK) != (ssize_t)sizeof id)
        id = (uint64_t)getpid() << 32 ^ (uint64_t)time(NULL) ^ (uint64_t)(uintptr_t)&id;
    return id | 1; /* (0 means no heap) */
}

static int fork_pipe[2] = {-1, -1};
static void before_fork(void);
static void after_fork_in_parent(void);
static void after_fork_in_child(void);
static void register_fork_handlers(void) { pthread_atfork(before_fork, after_fork_in_parent, after_fork_in_child); }

static int create_failed(int err, int fd)
{
    if (fd >= 0) close(fd);
    arena.failed = err ? err : EINVAL;
    return arena.failed;
}

/* Under the lock.  The memfd is sealed at its size: a peer holding it can neither shrink it
 * (the owner would fault on its own blocks) nor grow it. */
static int create(void)
{
    static pthread_once_t handlers_once = PTHREAD_ONCE_INIT;
    if (base_of()) return arena.fd >= 0 ? 0 : ENODEV;
    if (arena.failed) return arena.failed;
    arena.page = (size_t)sysconf(_SC_PAGESIZE);
    arena.size = round_up(arena.size, arena.page);
    if (arena.size < 2 * arena.page) return create_failed(EINVAL, -1);
    int fd = memfd_create("nodecoll-heap", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) return create_failed(errno, fd);
    if (ftruncate(fd, (off_t)arena.size) || fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL))
        return create_failed(errno, fd);
    char *base = mmap(NULL, arena.size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
    if (base == MAP_FAILED) return create_failed(errno, fd);
    madvise(base, arena.size, MADV_DONTFORK);
    arena.fd = fd;
    arena.id = new_id();
    *(arena_header *)(void *)base = (arena_header){ARENA_MAGIC, arena.id, (uint64_t)getpid()};
    arena.top = arena.page;
    pthread_once(&handlers_once, register_fork_handlers);
    nc_arena_span = arena.size;
    atomic_store_explicit(&nc_arena_base, base, memory_order_release);
    return 0;
}

int nc_arena_get(nc_heap_arena *out)
{
    pthread_mutex_lock(&arena.lock);
    int err = create();
    *out = (nc_heap_arena){base_of(), arena.size, arena.fd, arena.id};
    pthread_mutex_unlock(&arena.lock);
    return err;
}

static block_header *header_of(const void *p) { return (block_header *)(uintptr_t)((const char *)p - BLOCK_HEADER); }

/* Carves the block for `bytes` at `align` out of the pages [off, off + len): its pointer;
 * the whole pages around it go back to the free pages. */
static char *carve(uint64_t off, uint64_t len, int dirty, size_t bytes, size_t align)
{
    char *base = base_of();
    /* (the address is aligned, not the offset: the arena's base is aligned to a page only) */
    uint64_t at = round_up((uint64_t)(uintptr_t)base + off + BLOCK_HEADER, align) - (uint64_t)(uintptr_t)base;
    uint64_t first = (at - BLOCK_HEADER) / arena.page * arena.page, end = round_up(at + bytes, arena.page);
    give(off, first - off, dirty);
    give(end, off + len - end, dirty);
    *header_of(base + at) = (block_header){BLOCK_MAGIC ^ (uint64_t)(uintptr_t)(base + at), first, end - first, {0}};
    return base + at;
}

void *nc_arena_alloc(size_t bytes, size_t align, int zero)
{
    if (align < BLOCK_HEADER) align = BLOCK_HEADER;
    pthread_mutex_lock(&arena.lock);
    char *p = NULL;
    uint64_t off, len;
    int dirty = 0;
    if (!create() && bytes <= arena.size && align <= arena.size / 2) {
        /* room for the header before an aligned pointer, whatever the first page's address */
        uint64_t lead = align <= arena.page ? align : align + BLOCK_HEADER;
        len = round_up(lead + bytes, arena.page);
        if (take(len, &off, &dirty)) p = carve(off, len, dirty, bytes, align);
    }
    pthread_mutex_unlock(&arena.lock);
    if (p && zero && dirty) memset(p, 0, bytes);
    return p;
}

static const block_header *checked_header(const void *p, const char *what)
{
    const block_header *h = header_of(p);
    if (h->check != (BLOCK_MAGIC ^ (uint64_t)(uintptr_t)p)) {
        fprintf(stderr, "nodecoll heap: %s(): invalid pointer %p (not a block of the shared heap, or freed)\n", what,
                p);
        abort();
    }
    return h;
}

void nc_arena_free(void *p)
{
    int saved = errno; /* (free keeps errno, as the C library's does) */
    pthread_mutex_lock(&arena.lock);
    block_header *h = (block_header *)(uintptr_t)checked_header(p, "free");
    uint64_t off = h->off, len = h->len;
    h->check = 0;
    give(off, len, 1);
    trim();
    pthread_mutex_unlock(&arena.lock);
    errno = saved;
}

size_t nc_arena_usable(const void *p)
{
    const block_header *h = checked_header(p, "malloc_usable_size");
    return (size_t)(h->off + h->len - (uint64_t)((const char *)p - base_of()));
}

int nc_arena_resize(void *p, size_t bytes)
{
    int saved = errno, done = 0;
    pthread_mutex_lock(&arena.lock);
    block_header *h = (block_header *)(uintptr_t)checked_header(p, "realloc");
    uint64_t at = (uint64_t)((char *)p - base_of()), end = h->off + h->len;
    uint64_t need = bytes <= arena.size ? round_up(at + bytes, arena.page) : UINT64_MAX;
    if (need <= end) { /* shrink: the pages beyond go back */
        give(need, end - need, 1);
        h->len = need - h->off;
        trim();
        done = 1;
    } else if (need != UINT64_MAX && end == arena.top && need <= arena.size) {
        arena.top = need;
        h->len = need - h->off;
        done = 1;
    } else if (need != UINT64_MAX) { /* grow into a free extent right behind the block */
        for (int i = 0; i < arena.nfree && !done; i++) {
            extent *e = &arena.free[i];
            if (e->off != end || e->off + e->len < need) continue;
            if (e->dirty) arena.dirty -= need - end;
            e->len -= need - end;
            e->off = need;
            if (!e->len) remove_extent(i);
            h->len = need - h->off;
            done = 1;
        }
    }
    pthread_mutex_unlock(&arena.lock);
    errno = saved;
    return done;
}

/* ---- fork ------------------------------------------------------------------------------------ */

static void before_fork(void)
{
    pthread_mutex_lock(&arena.lock);
    if (arena.fd < 0 || pipe2(fork_pipe, O_CLOEXEC)) fork_pipe[0] = fork_pipe[1] = -1;
}

/* The parent waits until the child has its copy: the blocks must not change under it. */
static void after_fork_in_parent(void)
{
    if (fork_pipe[0] >= 0) {
        char done;
        close(fork_pipe[1]);
        while (read(fork_pipe[0], &done, 1) < 0 && errno == EINTR) continue;
        close(fork_pipe[0]);
    }
    pthread_mutex_unlock(&arena.lock);
}

static void read_fully(int fd, char *to, uint64_t len, uint64_t off)
{
    while (len) {
        ssize_t n = pread(fd, to, len, (off_t)off);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            fprintf(stderr, "nodecoll heap: a forked child could not copy its parent's heap (errno %d)\n", errno);
            abort();
        }
        to += n;
        off += (uint64_t)n;
        len -= (uint64_t)n;
    }
}

/* In the child: private memory over the arena's range (the shared mapping was not
 * inherited), the parent's live blocks (every page below the top that is not free) read
 * into it.  Free pages are fresh zero pages now: none is dirty. */
static void make_private_copy(void)
{
    char *base = base_of();
    if (mmap(base, arena.size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1,
             0) == MAP_FAILED) {
        fprintf(stderr, "nodecoll heap: a forked child could not map its copy of the heap (errno %d)\n", errno);
        abort();
    }
    uint64_t at = 0;
    for (int i = 0; i <= arena.nfree; i++) {
        uint64_t live_end = i < arena.nfree ? arena.free[i].off : arena.top;
        read_fully(arena.fd, base + at, live_end - at, at);
        if (i < arena.nfree) at = arena.free[i].off + arena.free[i].len;
        if (i < arena.nfree) arena.free[i].dirty = 0;
    }
    arena.dirty = 0;
    close(arena.fd);
    arena.fd = -1;
    arena.id = 0;
}

static void after_fork_in_child(void)
{
    if (arena.fd >= 0) make_private_copy();
    if (fork_pipe[1] >= 0) {
        while (write(fork_pipe[1], "", 1) < 0 && errno == EINTR) continue;
        close(fork_pipe[0]);
        close(fork_pipe[1]);
    }
    pthread_mutex_init(&arena.lock, NULL);
}
