#include "heap.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "config.h"


/* ---- this process's heap ------------------------------------------------------------------ */

static const nc_heap_api *api;
static nc_heap_arena arena;
const nc_heap_arena *nc_heap_own;
static pthread_mutex_t own_lock = PTHREAD_MUTEX_INITIALIZER;
static int looked_for_library;

static const nc_heap_api *api_in(void *handle)
{
    const nc_heap_api *a = dlsym(handle, NC_HEAP_API_SYMBOL);
    return a && a->version == NC_HEAP_API_VERSION ? a : NULL;
}

/* The heap library next to this one (or wherever the loader finds it: a static link). */
static const nc_heap_api *load_library(void)
{
    Dl_info self;
    char path[4096];
    void *handle = NULL;
    if (dladdr((void *)&load_library, &self) && self.dli_fname && strrchr(self.dli_fname, '/')) {
        int dir = (int)(strrchr(self.dli_fname, '/') - self.dli_fname);
        snprintf(path, sizeof path, "%.*s/%s", dir, self.dli_fname, NC_HEAP_LIBRARY);
        handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    }
    if (!handle) handle = dlopen(NC_HEAP_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    return handle ? api_in(handle) : NULL;
}

const nc_heap_arena *nc_heap_mine(int mode)
{
    if (mode == NC_HEAP_OFF) return NULL;
    pthread_mutex_lock(&own_lock);
    if (!looked_for_library) { /* preloaded, else loaded now (it is not the process's malloc then) */
        looked_for_library = 1;
        api = api_in(RTLD_DEFAULT);
        if (!api) api = load_library();
        if (api && !api->arena(&arena)) nc_heap_own = &arena;
    }
    pthread_mutex_unlock(&own_lock);
    return nc_heap_own;
}

int nc_heap_interposed(void) { return nc_heap_own && api->interposed(); }

void *nc_heap_alloc(size_t bytes) { return nc_heap_own ? api->alloc(bytes) : NULL; }

int nc_heap_release(void *p) { return nc_heap_own && api->release(p); }

/* ---- views of other processes' heaps ------------------------------------------------------------ */

#define VIEWS_MAX 4096
static nc_heap_view *views[VIEWS_MAX];
static int nviews;
static pthread_mutex_t views_lock = PTHREAD_MUTEX_INITIALIZER;

nc_heap_view *nc_heap_view_get(uint64_t id)
{
    nc_heap_view *found = NULL;
    pthread_mutex_lock(&views_lock);
    for (int i = 0; i < nviews && !found; i++)
        if (views[i]->id == id) found = views[i];
    if (found) found->refs++;
    pthread_mutex_unlock(&views_lock);
    return found;
}

void nc_heap_view_put(nc_heap_view *v)
{
    if (!v) return;
    pthread_mutex_lock(&views_lock);
    if (--v->refs == 0) {
        for (int i = 0; i < nviews; i++)
            if (views[i] == v) views[i] = views[--nviews];
        munmap(v->local, v->size);
        free(v);
    }
    pthread_mutex_unlock(&views_lock);
}

/* What a datagram carries besides the descriptor. */
typedef struct offer {
    uint64_t id, base, size;
} offer;

/* The header the heap library writes at the start of its arena. */
typedef struct arena_header {
    uint64_t magic, id, pid;
} arena_header;
#define ARENA_MAGIC UINT64_C(0x6e6f6465636f6c6c)

/* Under views_lock: maps the heap of one datagram, unless it is mapped already (a
 * communicator set up before asked for it) or is not what it claims.  Not inherited by a
 * fork's child, which must not share its parent's peers' memory either. */
static void map_offer(const offer *o, int fd)
{
    for (int i = 0; i < nviews; i++)
        if (views[i]->id == o->id) return;
    nc_heap_view *v = nviews < VIEWS_MAX ? malloc(sizeof *v) : NULL;
    char *local = v ? mmap(NULL, o->size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0) : MAP_FAILED;
    const arena_header *h = local != MAP_FAILED ? (const arena_header *)(void *)local : NULL;
    if (!h || h->magic != ARENA_MAGIC || h->id != o->id) {
        if (h) munmap(local, o->size);
        free(v);
        return;
    }
    madvise(local, o->size, MADV_DONTFORK);
    *v = (nc_heap_view){o->id, (const char *)(uintptr_t)o->base, o->size, local, 0};
    views[nviews++] = v;
}

/* ---- the socket ------------------------------------------------------------------------------------- */

static int link_fd = -1;
static uint64_t link_name;
static pthread_once_t link_once = PTHREAD_ONCE_INIT;

static socklen_t address_of(uint64_t name, struct sockaddr_un *a)
{
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    int n = snprintf(a->sun_path + 1, sizeof a->sun_path - 1, "nodecoll-heap-%016llx", (unsigned long long)name);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

/* A fork's child must not take its parent's datagrams: it gets no socket. */
static void forget_link_in_child(void)
{
    if (link_fd >= 0) close(link_fd);
    link_fd = -1;
    link_name = 0;
}

static void open_link(void)
{
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), on = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &on, sizeof on)) goto fail;
    for (int tries = 0; tries < 8; tries++) {
        uint64_t name = 0;
        struct sockaddr_un a;
        if (getrandom(&name, sizeof name, GRND_NONBLOCK) != (ssize_t)sizeof name) name ^= (uint64_t)getpid() << 20;
        name |= 1;
        if (!bind(fd, (struct sockaddr *)&a, address_of(name, &a))) {
            link_fd = fd;
            link_name = name;
            pthread_atfork(NULL, NULL, forget_link_in_child);
            return;
        }
        if (errno != EADDRINUSE) break;
    }
fail:
    if (fd >= 0) close(fd);
}

uint64_t nc_heap_link(void)
{
    pthread_once(&link_once, open_link);
    return link_name;
}

int nc_heap_offer(uint64_t to, const nc_heap_arena *mine)
{
    offer o = {mine->id, (uint64_t)(uintptr_t)mine->base, mine->size};
    struct sockaddr_un a;
    socklen_t alen = address_of(to, &a);
    struct iovec iov = {&o, sizeof o};
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } control;
    struct msghdr m = {.msg_name = &a, .msg_namelen = alen, .msg_iov = &iov, .msg_iovlen = 1,
                       .msg_control = control.buf, .msg_controllen = sizeof control.buf};
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &mine->fd, sizeof(int));
    return link_fd >= 0 && sendmsg(link_fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL) == (ssize_t)sizeof o ? 0 : errno;
}

/* The descriptor and sender of one datagram's control messages (fd -1: none); any other
 * descriptor it carried is closed. */
static int take_control(struct msghdr *m, uid_t *sender)
{
    int fd = -1;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c)) {
        if (c->cmsg_level != SOL_SOCKET) continue;
        if (c->cmsg_type == SCM_CREDENTIALS) {
            struct ucred cred;
            memcpy(&cred, CMSG_DATA(c), sizeof cred);
            *sender = cred.uid;
        } else if (c->cmsg_type == SCM_RIGHTS) {
            size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (size_t i = 0; i < n; i++) {
                int got;
                memcpy(&got, CMSG_DATA(c) + i * sizeof(int), sizeof got);
                if (fd < 0) fd = got;
                else close(got);
            }
        }
    }
    return fd;
}

void nc_heap_take_offers(void)
{
    pthread_mutex_lock(&views_lock);
    for (;;) {
        offer o;
        union {
            char buf[CMSG_SPACE(sizeof(struct ucred)) + CMSG_SPACE(4 * sizeof(int))];
            struct cmsghdr align;
        } control;
        struct iovec iov = {&o, sizeof o};
        struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf,
                           .msg_controllen = sizeof control.buf};
        if (link_fd < 0) break;
        ssize_t n = recvmsg(link_fd, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) break;
        uid_t sender = (uid_t)-1;
        int fd = take_control(&m, &sender);
        if (fd >= 0 && n == (ssize_t)sizeof o && sender == getuid() && !(m.msg_flags & MSG_CTRUNC)) map_offer(&o, fd);
        if (fd >= 0) close(fd);
    }
    pthread_mutex_unlock(&views_lock);
}
