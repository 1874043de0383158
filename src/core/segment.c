#include "segment.h"

#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define NC_SEGMENT_MAGIC 0x6e6f6465636f6c6cULL /* "nodecoll" */
#define NC_SEGMENT_VERSION 3
#define NC_NAME_PREFIX "nodecoll."

typedef struct nc_segment_header {
    uint64_t magic;
    uint64_t version;
    uint64_t nranks, nseg, seg_size, total;
} nc_segment_header;

static _Atomic size_t mapped_bytes;

size_t nc_segment_mapped_bytes(void) { return atomic_load(&mapped_bytes); }

static size_t page_size(void) { return (size_t)sysconf(_SC_PAGESIZE); }

static size_t round_up(size_t x, size_t a) { return (x + a - 1) / a * a; }

/* The flags of a control page, single or in arrays (count flags `stride` bytes apart). */
#define NC_CTL_FLAG(field, name) {offsetof(nc_rank_ctl, field), 1, 0, name}
#define NC_CTL_FLAGS(field, count, stride, name) {offsetof(nc_rank_ctl, field), count, stride, name}
static const struct ctl_flag {
    size_t offset;
    int count;
    size_t stride;
    const char *name;
} ctl_flags[] = {
    NC_CTL_FLAG(fanin, "fanin"), NC_CTL_FLAG(fanout, "fanout"), NC_CTL_FLAG(dissem, "dissemination"),
    NC_CTL_FLAG(pub, "pub"), NC_CTL_FLAG(cons, "cons"), NC_CTL_FLAG(ready, "ready"), NC_CTL_FLAG(push, "push"),
    NC_CTL_FLAG(info, "info"), NC_CTL_FLAGS(inline_frags, NC_INLINE_SLOTS, sizeof(nc_flag), "inline fragment"),
    NC_CTL_FLAG(move_pub, "move_pub"), NC_CTL_FLAG(move_done, "move_done"),
    NC_CTL_FLAGS(shared[0].state, NC_SHARED_SLOTS, sizeof(nc_shared_flags), "node-shared state"),
    NC_CTL_FLAGS(shared[0].ready, NC_SHARED_SLOTS, sizeof(nc_shared_flags), "node-shared ready"),
    NC_CTL_FLAGS(shared[0].chain, NC_SHARED_SLOTS, sizeof(nc_shared_flags), "node-shared chain"),
    NC_CTL_FLAG(entered, "entered"), NC_CTL_FLAGS(check, 2, sizeof(nc_flag), "check"),
    NC_CTL_FLAG(verdict, "verdict"),
};

nc_flag_owner nc_segment_flag_owner(void *base, const nc_layout *l, const nc_flag *f)
{
    nc_flag_owner none = {-1, "unknown", -1};
    const char *first = (const char *)nc_segment_ctl(base, l, 0), *at = (const char *)f;
    if (at < first || at >= (const char *)base + l->total) return none;
    size_t rel = (size_t)(at - first), in_page = rel % l->rank_stride;
    for (size_t i = 0; i < sizeof ctl_flags / sizeof ctl_flags[0]; i++) {
        const struct ctl_flag *c = &ctl_flags[i];
        if (in_page < c->offset) continue;
        size_t k = c->count > 1 ? (in_page - c->offset) / c->stride : 0; /* (sets interleave) */
        if (k >= (size_t)c->count || in_page - c->offset - k * c->stride >= sizeof(nc_flag)) continue;
        return (nc_flag_owner){(int)(rel / l->rank_stride), c->name, c->count > 1 ? (int)k : -1};
    }
    return none;
}

nc_layout nc_layout_make(int nranks, size_t seg_size, int nseg, size_t move_bytes)
{
    nc_layout l;
    l.nranks = nranks;
    l.nseg = nseg;
    l.seg_size = round_up(seg_size, page_size());
    l.ctl_bytes = round_up(sizeof(nc_rank_ctl), page_size());
    l.move_bytes = round_up(move_bytes, page_size());
    l.rank_stride = l.ctl_bytes + (size_t)nseg * l.seg_size + l.move_bytes;
    l.header_bytes = round_up(sizeof(nc_segment_header), page_size());
    l.total = l.header_bytes + (size_t)nranks * l.rank_stride;
    return l;
}

static int map_fd(int fd, size_t total, void **base)
{
    void *p = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) return errno;
    *base = p;
    atomic_fetch_add(&mapped_bytes, total);
    return 0;
}

static void unmap(void *base, size_t total)
{
    munmap(base, total);
    atomic_fetch_sub(&mapped_bytes, total);
}

/* A new, uniquely named shared-memory object of `total` bytes, mapped.  The creator's pid in
 * the name lets a later job remove it if this one is killed before the name is unlinked. */
static int create_named(size_t total, char name[NC_SEGMENT_NAME_MAX], int *fd, void **base)
{
    static _Atomic unsigned counter;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    snprintf(name, NC_SEGMENT_NAME_MAX, "/" NC_NAME_PREFIX "%ld.%u.%lx", (long)getpid(),
             atomic_fetch_add(&counter, 1), (unsigned long)ts.tv_nsec);
    int f = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (f < 0) return errno;
    int err = ftruncate(f, (off_t)total) ? errno : 0;
    if (!err) err = map_fd(f, total, base);
    if (err) {
        shm_unlink(name);
        close(f);
        return err;
    }
    *fd = f;
    return 0;
}

int nc_segment_create(const nc_layout *l, char name[NC_SEGMENT_NAME_MAX], int *fd, void **base)
{
    int err = create_named(l->total, name, fd, base);
    if (err) return err;
    nc_segment_header *h = *base;
    *h = (nc_segment_header){NC_SEGMENT_MAGIC, NC_SEGMENT_VERSION, (uint64_t)l->nranks,
                             (uint64_t)l->nseg, l->seg_size, l->total};
    return 0;
}

int nc_segment_attach(const char *name, const nc_layout *l, int *fd, void **base)
{
    int f = shm_open(name, O_RDWR, 0600);
    if (f < 0) return errno;
    int err = map_fd(f, l->total, base);
    if (err) {
        close(f);
        return err;
    }
    const nc_segment_header *h = *base;
    if (h->magic != NC_SEGMENT_MAGIC || h->version != NC_SEGMENT_VERSION ||
        h->nranks != (uint64_t)l->nranks || h->total != l->total) {
        nc_segment_unmap(*base, l);
        close(f);
        return EPROTO;
    }
    *fd = f;
    return 0;
}

int nc_segment_claim(int fd, void *base, const nc_layout *l, int rank)
{
    char *mine = (char *)nc_segment_ctl(base, l, rank);
    off_t offset = (off_t)(mine - (char *)base);
    /* Reserving up front turns "tmpfs is full" into a setup failure we can fall back from,
     * instead of a SIGBUS in the middle of a collective. */
    int err = posix_fallocate(fd, offset, (off_t)l->rank_stride);
    if (err) return err;
    memset(mine, 0, l->rank_stride);
    return 0;
}

void nc_segment_unlink(const char *name) { shm_unlink(name); }

void nc_segment_unmap(void *base, const nc_layout *l)
{
    if (base) unmap(base, l->total);
}

/* ---- regions: header page + data ------------------------------------------------------ */

#define NC_REGION_MAGIC 0x6e6f64657368726dULL /* "nodeshrm" */

typedef struct nc_region_header {
    uint64_t magic, version, total;
} nc_region_header;

size_t nc_region_header_bytes(void) { return round_up(sizeof(nc_region_header), page_size()); }

size_t nc_region_total(size_t bytes) { return nc_region_header_bytes() + round_up(bytes ? bytes : 1, page_size()); }

int nc_region_create(size_t bytes, char name[NC_SEGMENT_NAME_MAX], void **base)
{
    size_t total = nc_region_total(bytes);
    int fd;
    int err = create_named(total, name, &fd, base);
    if (err) return err;
    err = posix_fallocate(fd, 0, (off_t)total);
    close(fd);
    if (err) {
        unmap(*base, total);
        shm_unlink(name);
        return err;
    }
    nc_region_header *h = *base;
    *h = (nc_region_header){NC_REGION_MAGIC, NC_SEGMENT_VERSION, total};
    return 0;
}

int nc_region_attach(const char *name, size_t bytes, void **base)
{
    size_t total = nc_region_total(bytes);
    int fd = shm_open(name, O_RDWR, 0600);
    if (fd < 0) return errno;
    int err = map_fd(fd, total, base);
    close(fd);
    if (err) return err;
    const nc_region_header *h = *base;
    if (h->magic != NC_REGION_MAGIC || h->version != NC_SEGMENT_VERSION || h->total != total) {
        unmap(*base, total);
        return EPROTO;
    }
    return 0;
}

void nc_region_unmap(void *base, size_t bytes)
{
    if (base) unmap(base, nc_region_total(bytes));
}

void nc_segment_sweep_stale(void)
{
    DIR *d = opendir("/dev/shm");
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, NC_NAME_PREFIX, sizeof NC_NAME_PREFIX - 1)) continue;
        long pid = strtol(e->d_name + sizeof NC_NAME_PREFIX - 1, NULL, 10);
        if (pid <= 0 || kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
        char name[sizeof e->d_name + 2];
        snprintf(name, sizeof name, "/%s", e->d_name);
        shm_unlink(name);
    }
    closedir(d);
}
