/* Sequence flags and the policy for waiting on them.
 *
 * A flag is a monotonic 64-bit sequence number on a cache line of its own, written only by
 * the rank that owns it.  Waiting spins (cheap when the writer runs on another core), then
 * yields (so an oversubscribed writer gets the core), then sleeps (so hundreds of idle ranks
 * stop burning the machine). */
#ifndef NC_WAIT_H
#define NC_WAIT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* Two lines per flag: the adjacent-line prefetcher fetches lines in pairs, so a neighbour's
 * flag on the paired line would still be falsely shared. */
#define NC_LINE_BYTES 64
#define NC_FLAG_BYTES (2 * NC_LINE_BYTES)

/* A flag and what it announces share its lines, so a small payload reaches the reader in
 * the same cache-line transfer as the signal. */
typedef struct nc_flag {
    _Alignas(NC_FLAG_BYTES) _Atomic uint64_t seq;
    union { /* written before seq is posted, read after it is seen */
        _Atomic uint64_t aux[3];
        unsigned char data[NC_FLAG_BYTES - sizeof(uint64_t)];
    };
} nc_flag;

/* What a long wait consults, set up by the layer that knows what the flags mean (the
 * waits of a node's segment have one; a thread team's have none).  Only the yield and sleep
 * phases look at the clock, every few polls: the spin and the fast path never do. */
typedef struct nc_wait_watch nc_wait_watch;
struct nc_wait_watch {
    int64_t report_ns; /* a wait this long calls report, once (0: never) */
    int64_t check_ns;  /* a wait this long calls check, and again each check_ns (0: never) */
    void (*report)(nc_wait_watch *w, const nc_flag *f, uint64_t target, int64_t waited_ns);
    void (*check)(nc_wait_watch *w, const nc_flag *f, uint64_t target, int64_t waited_ns);
};

typedef struct nc_wait_policy {
    int spin;     /* polls before the first yield */
    int yields;   /* yields before sleeping; 0 = never sleep */
    int sleep_us; /* sleep between polls after that */
    int spinners; /* threads of the process that may spin at once (its share of the cores) */
    nc_wait_watch *watch; /* NULL: nothing is timed */
    void (*idle)(void *); /* while yielding or sleeping: other work of the process (NULL: none) */
    int gap;      /* while spinning, pause instructions per poll (1: poll after every pause) */
} nc_wait_policy;

static inline void nc_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static inline uint64_t nc_flag_read(const nc_flag *f)
{
    return atomic_load_explicit(&f->seq, memory_order_acquire);
}

/* Release: everything written before (data, aux) is visible to a reader that sees `v`. */
static inline void nc_flag_post(nc_flag *f, uint64_t v)
{
    atomic_store_explicit(&f->seq, v, memory_order_release);
}

/* Asks for the lines of flag f that its signal and `payload` bytes of data take: for writing
 * (`write`: a flag this rank will post next, while it still has other work) or for reading
 * (a flag already posted, to be read soon).  A post to a line that a reader holds waits for
 * that reader's copy to be invalidated (a cross-core transfer); x86 commits stores in order,
 * so every later store of the caller waits behind it and a small call's stores filled the
 * store buffer.  (PREFETCHW is a no-op on x86-64 processors without it; elsewhere a plain
 * write hint.) */
static inline void nc_flag_touch(const nc_flag *f, size_t payload, int write)
{
    for (size_t at = 0; at < offsetof(nc_flag, data) + payload && at < sizeof *f; at += NC_LINE_BYTES) {
        const char *line = (const char *)f + at;
        if (!write) __builtin_prefetch(line);
#if defined(__x86_64__)
        else __asm__ volatile("prefetchw %0" ::"m"(*line));
#else
        else __builtin_prefetch(line, 1);
#endif
    }
}
static inline void nc_flag_prepare(const nc_flag *f, size_t payload) { nc_flag_touch(f, payload, 1); }
static inline void nc_flag_fetch(const nc_flag *f, size_t payload) { nc_flag_touch(f, payload, 0); }

void nc_wait_slow(const nc_flag *f, uint64_t target, const nc_wait_policy *p);

/* Returns once *f >= target (sequence numbers only grow, so a later value also satisfies). */
static inline void nc_wait_ge(const nc_flag *f, uint64_t target, const nc_wait_policy *p)
{
    if (__builtin_expect(nc_flag_read(f) >= target, 1)) return;
    nc_wait_slow(f, target, p);
}

/* Resolves the policy from the settings: spin < 0 means auto (depends on oversubscription).
 * It has no watch. */
nc_wait_policy nc_wait_policy_make(int64_t spin, int64_t yields, int64_t sleep_us, int oversubscribed);

/* The CPUs this process may run on, as a mask of NC_CPU_WORDS words (CPU i is bit i % 64 of
 * word i / 64); 0 if the system does not say (then every online CPU counts).  A node's
 * ranks OR their masks to learn how many cores they share: a container's cpuset or a
 * launcher's binding can leave fewer than the machine has online. */
/* (8192 CPUs: the kernel refuses a mask smaller than its possible CPUs with EINVAL, and
 * cpu_set_t holds only 1024; the mask itself is the kernel's buffer, a word per 64 CPUs on
 * a 64-bit machine) */
#define NC_CPU_WORDS 128
int nc_cpu_mask(uint64_t mask[NC_CPU_WORDS]);
/* CPUs in a mask (0 for an empty one). */
int nc_cpu_count(const uint64_t mask[NC_CPU_WORDS]);

#endif
