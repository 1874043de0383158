/*
 * nodecoll-bench: measures each collective through nodecoll (MPI_*) and through the host
 * MPI (PMPI_*) in the same run, next to the machine's physical limits.
 *
 * Every .c file of the tool includes this header first.
 */
#ifndef NODECOLL_BENCH_H
#define NODECOLL_BENCH_H

/* The standalone build (mpicc on the sources alone) has no -D_GNU_SOURCE; nanosleep, setenv,
 * posix_memalign and friends must still be declared. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define BENCH_MAX_SIZES 64
#define BENCH_MAX_SETS 64
#define BENCH_PATH_MAX 1024

/* ---- collectives (colls.c) ---------------------------------------------------------- */

enum variant { VAR_NODECOLL = 0, VAR_HOST = 1, VAR_COUNT = 2 };

/* How big a buffer is, in units of the message size n. */
enum blocks {
    BLK_NONE, BLK_ONE, BLK_ALL, /* one block per rank: P * n */
    BLK_EDGES                   /* one block per edge of a neighbourhood pattern: NEIGHBOR_EDGES * n */
};
#define NEIGHBOR_EDGES 8

/* Where the result of a call is defined, for --check. */
enum out_scope { OUT_NONE, OUT_ALL, OUT_ROOT, OUT_NOT_FIRST /* exscan: rank 0 undefined */ };

/* How the counts of a vector collective are spread over the ranks. */
enum pattern {
    PAT_UNIFORM, /* n to or from every rank (comparable with the plain form) */
    PAT_SKEWED,  /* rank 0 contributes n, every other rank one element */
    PAT_RING,    /* n with each ring neighbour (rank +- 1), nothing with the rest */
    /* Neighbourhood collectives (neighbors.c), on a communicator of their own: */
    PAT_STENCIL, /* 3-D periodic Cartesian grid, 7-point halo exchange: faces of n, n/2, n/4 */
    PAT_GRAPH,   /* distributed graph to rank + 1, 2, 4, 8: n to rank + 1, n/16 to the others */
};

enum coll_flags {
    COLL_ROOTED = 1u << 0,
    COLL_REDUCES = 1u << 1,
    COLL_DEFAULT = 1u << 2,   /* part of the default --coll set */
    COLL_OUT_SEND = 1u << 3,  /* the result lands in the send buffer (bcast) */
    COLL_SIZELESS = 1u << 4,  /* barrier: measured once, size 0 */
    COLL_ALLDEP = 1u << 5,    /* every result depends on every rank: calls cannot overlap */
};

/* Arguments of one call; every collective reads the fields it needs. */
struct call {
    void *sbuf, *rbuf;
    int count;
    MPI_Datatype type;
    MPI_Op op;
    int root;
    MPI_Comm comm;
    const int *counts, *displs, *bdispls;
    const MPI_Datatype *types;
    /* neighbourhood collectives: the receive side's own (in-edges differ from out-edges), and
     * Neighbor_alltoallw's byte displacements (MPI_Aint) */
    const int *rcounts, *rdispls;
    const MPI_Aint *adispls, *radispls;
};

struct mpi_api; /* the entry points of one family (MPI_ or PMPI_), colls.c */

/* How a collective is called (--mode). */
enum mode {
    MODE_BLOCKING,    /* MPI_<Coll> */
    MODE_NONBLOCKING, /* MPI_I<coll>, then MPI_Wait */
    MODE_PERSISTENT,  /* MPI_<Coll>_init once per point; MPI_Start, then MPI_Wait per call */
    MODE_COUNT
};

/* The three forms of one collective, generated from its one argument list (colls.c). */
struct coll_forms {
    int (*run)(const struct mpi_api *api, const struct call *c);
    int (*post)(const struct mpi_api *api, const struct call *c, MPI_Request *req);
    /* NULL when the MPI has no persistent collectives */
    int (*init)(const struct mpi_api *api, const struct call *c, MPI_Request *req);
};

/* What a collective cannot avoid reading and writing, in units of the message size n
 * (coll_traffic; docs/benchmark.md, "Lower bounds"). */
enum traffic {
    TR_NONE,        /* barrier */
    TR_BCAST,       /* read 1, write P-1 */
    TR_REDUCE,      /* read P, write 1 */
    TR_EACH,        /* read P, write P: allreduce, gather, scatter, scan */
    TR_ALLGATHER,   /* read P, write P^2 */
    TR_ALLTOALL,    /* read P^2, write P^2 */
    TR_RSCATTER,    /* read P^2, write P */
    TR_EXSCAN,      /* read P-1, write P-1 */
    TR_SKEWED,      /* allgatherv_skewed: read 1, write P */
    TR_RING,        /* alltoallw_ring: read and write P times the distinct neighbours */
    TR_STENCIL,     /* neighbor_*_stencil: read 3P, write 3P */
};

struct coll {
    const char *name;
    const struct coll_forms *forms;
    unsigned flags;
    enum blocks send, recv;
    enum out_scope out;
    enum traffic traffic;
    enum pattern pattern;
};

int coll_count(void);
const struct coll *coll_at(int index);
void coll_call_name(const struct coll *c, char *out, size_t len);
int coll_find(const char *name);
const struct mpi_api *coll_api(enum variant v);
const char *variant_name(enum variant v);
/* "MPI_<Coll>_init" (MPI-4), "MPIX_<Coll>_init" (Open MPI's extension), or NULL: none. */
const char *coll_persistent_name(void);
/* The request calls of a family: MPI_Wait/Start/Request_free or their PMPI_ forms. */
int api_wait(const struct mpi_api *api, MPI_Request *req);
int api_start(const struct mpi_api *api, MPI_Request *req);
int api_request_free(const struct mpi_api *api, MPI_Request *req);
const char *mode_name(enum mode m);
int mode_find(const char *name);
size_t coll_blocks(enum blocks b, int nranks);
/* Bytes every call must read and write, summed over ranks, per byte of n. */
void coll_traffic(const struct coll *c, int nranks, double *reads, double *writes);

/* ---- neighbourhood patterns (neighbors.c) --------------------------------------------- */

/* Edge lists, counts and displacements of one neighbourhood pattern, and its communicator. */
struct neighbors {
    MPI_Comm comm;
    int in, out;                                  /* edges */
    int sources[NEIGHBOR_EDGES], dests[NEIGHBOR_EDGES]; /* as the topology queries give them */
    int cartesian;
    int counts[NEIGHBOR_EDGES], displs[NEIGHBOR_EDGES];   /* out-edges, elements */
    int rcounts[NEIGHBOR_EDGES], rdispls[NEIGHBOR_EDGES]; /* in-edges */
    MPI_Aint adispls[NEIGHBOR_EDGES], radispls[NEIGHBOR_EDGES];
    MPI_Datatype types[NEIGHBOR_EDGES];
};

int pattern_is_neighborhood(enum pattern p);
/* Builds pattern p for `count` elements of `type` per full block (collective over
 * MPI_COMM_WORLD; the communicator is set up by one nodecoll collective). */
void neighbors_create(struct neighbors *nb, enum pattern p, int count, MPI_Datatype type);
void neighbors_free(struct neighbors *nb);
/* --check's oracle: the call as MPI defines it, through the host's point-to-point calls
 * (MPICH 4.0.2's own Neighbor_alltoallv/w order the blocks of a rank that is a neighbour twice
 * otherwise).  0 or an MPI error. */
int neighbors_oracle(const struct neighbors *nb, const struct call *c);

/* ---- datatypes and operations (dtypes.c) --------------------------------------------- */

enum dt_kind { DT_BITS, DT_INT, DT_FLOAT };
enum op_kind { OP_ARITH, OP_PROD, OP_BITWISE };

struct dtype {
    const char *name;
    MPI_Datatype type;
    size_t size;
    enum dt_kind kind;
    void (*fill)(void *buf, size_t count, unsigned seed, int sparse);
};

struct op {
    const char *name;
    MPI_Op op;
    enum op_kind kind;
};

const struct dtype *dtype_find(const char *name);
const struct op *op_find(const char *name);
int op_fits(const struct op *op, const struct dtype *dt);
const struct dtype *dtype_auto(const struct coll *c, const struct op *op);

/* ---- options (options.c) -------------------------------------------------------------- */

enum root_pattern { ROOT_ZERO, ROOT_LAST, ROOT_ROTATE, ROOT_PATTERNS };

struct options {
    unsigned long colls;            /* bit i: coll_at(i) selected */
    size_t sizes[BENCH_MAX_SIZES];
    int nsizes;
    const struct dtype *dtypes[BENCH_MAX_SIZES]; /* NULL: auto, by collective */
    int ndtypes;
    const struct op *op;
    int roots[ROOT_PATTERNS];
    int nroots;
    int ranks_per_node;             /* 0: leave NODECOLL_RANKS_PER_NODE alone */
    const char *sets[BENCH_MAX_SETS];
    int nsets;
    int iters, warmup;
    double time_budget;
    enum mode modes[MODE_COUNT];    /* in the order given */
    int nmodes;
    int overlap;                    /* --overlap */
    int check, off_cache, quiet, help;
    const char *json, *csv;
    char error[256];
};

void options_parse(int argc, char **argv, struct options *o);
int options_export_env(struct options *o);
void options_usage(FILE *out);
int options_want_mode(const struct options *o, enum mode m);
const char *root_pattern_name(int pattern);

/* ---- physical limits (limits.c) -------------------------------------------------------- */

#define LIMIT_SIZES 32

struct limits {
    int valid;                 /* 0 when the ranks span several machines */
    int cores, node_ranks, nodes, copiers;
    size_t llc;
    /* cache-line round trip between node ranks 0 and 1: the lowest of rtt_probes
     * measurements (start-up, then after every point), and their median */
    double rtt_ns;
    double rtt_one_line_ns;    /* the same, both ranks writing one line */
    double rtt_median_ns;
    int rtt_probes;
    int nsizes;
    size_t size[LIMIT_SIZES];
    /* memcpy GB/s: one core, and `copiers` cores at once (sum), data hot or cold */
    double hot1[LIMIT_SIZES], cold1[LIMIT_SIZES], hot_all[LIMIT_SIZES], cold_all[LIMIT_SIZES];
    /* single-copy reads, GB/s: node rank 1 copying node rank 0's buffer (hot), with
     * process_vm_readv (0: not permitted) and with loads from a mapping both share (the
     * shared heap's way); 0 below READ_MIN */
    double read_cma[LIMIT_SIZES], read_map[LIMIT_SIZES];
};

void limits_measure(struct limits *l, const struct options *o);
void limits_probe(struct limits *l); /* collective: the round trip again */
void limits_copy_again(struct limits *l); /* collective: the copy rates again, the best kept */
/* collective: after a point that copies 1 MiB or more per copier, its size's hot rate again
 * (not for cold points: their bound uses the cold rates) */
void limits_copy_probe(struct limits *l, const struct coll *c, int nranks, size_t bytes, int cold);
void limits_close(void);
double limits_bound_us(const struct limits *l, const struct coll *c, int nranks, size_t n,
                       int cold);

/* ---- measurement (measure.c) ----------------------------------------------------------- */

struct point {
    const struct coll *coll;
    const struct dtype *dt;
    int root_pattern;
    size_t bytes; /* n: count * datatype size */
    int count;
    enum mode mode;
};

struct sample { /* microseconds; each a median over rounds */
    double min, med, max; /* over ranks; max is the latency of the collective */
    double q1, q3;        /* quartiles over rounds of the per-round max */
};

struct result {
    struct point pt;
    int k[VAR_COUNT], rounds; /* calls per block of each variant; rounds */
    struct sample t[VAR_COUNT];
    double speedup, ratio_q1, ratio_q3; /* host / nodecoll per round: median, quartiles */
    double bound_us;
    char algs[128];
    int check; /* -1 not checked, else number of ranks that saw a mismatch */
    /* --overlap: t is post + wait (t_pure); each call of the second pass computed for
     * compute_us and took total (t_total); exposed is t_total - t_compute, taken on each
     * rank before the slowest rank of a round is */
    int overlap;
    double compute_us[VAR_COUNT];
    struct sample total[VAR_COUNT], exposed[VAR_COUNT];
};

struct arena; /* pre-faulted buffers shared by every point, measure.c */

struct arena *arena_create(const struct options *o, int nranks);
void arena_destroy(struct arena *a);
struct bench_sync *arena_sync(struct arena *a);
void measure_point(struct arena *a, const struct options *o, const struct point *pt,
                   struct result *res);
int point_fits(const struct point *pt, int nranks);

/* ---- the synchronisation before each timed block (sync.c) ------------------------------ */

struct bench_sync;
struct bench_sync *sync_open(void); /* collective over MPI_COMM_WORLD */
void sync_close(struct bench_sync *s);
void sync_wait(struct bench_sync *s);
int sync_oversubscribed(const struct bench_sync *s); /* node ranks outnumber the cores */

/* ---- the computation --overlap hides a collective behind (compute.c) ------------------- */

void compute_calibrate(void);
double compute_spin(double seconds);

/* ---- algorithm counters (stats.c) ------------------------------------------------------- */

int stats_available(void);
const char *stats_nodecoll_version(void);
struct stats_snap;
struct stats_snap *stats_snapshot(void);
void stats_moved(struct stats_snap *before, const char *coll, char *out, size_t len);

/* ---- output (report.c) ------------------------------------------------------------------ */

struct run_info {
    char mpi[256];
    int mpi_major, mpi_minor;
    char cpu[128];
    char date[32];
    char command[2048];
    char settings[2048];     /* NODECOLL_*=value, space separated */
    int nranks;
    int oversubscribed;
    int heap_buffers;        /* every rank's buffers come from nodecoll's shared heap */
    double seconds;
};

void report_collect(struct run_info *ri, int argc, char **argv, const struct limits *l);
void report_header(FILE *out, const struct run_info *ri, const struct limits *l,
                   const struct options *o);
void report_row(FILE *out, const struct result *r, int nranks);
void report_footer(FILE *out, const struct limits *l);
int report_sectioned(const struct options *o);
void report_section(FILE *out, enum mode mode, int overlap);
double result_overlap(const struct result *r, enum variant v);
int report_json(const char *path, const struct run_info *ri, const struct limits *l,
                const struct options *o, const struct result *rs, int n);
int report_csv(const char *path, const struct run_info *ri, const struct result *rs, int n);
double result_speedup(const struct result *r);
double result_gbs(const struct result *r, int nranks);
double result_pct_bound(const struct result *r);
int result_noisy(const struct result *r);

/* ---- small helpers (util.c) -------------------------------------------------------------- */

double now_s(void);
void *xalloc_touched(size_t bytes);
size_t round_up(size_t v, size_t to);
int cmp_double(const void *a, const void *b);
double median_of(double *v, int n);
void format_bytes(char *out, size_t len, size_t bytes);
size_t llc_bytes(void);
/* Instead of fmax/fmin/ceil: the tool then links without -lm, from a bare mpicc line. */
double dmax(double a, double b);
double dmin(double a, double b);
double ceil_pos(double x);
int table_find(const void *table, int n, size_t stride, const char *name);

#endif
