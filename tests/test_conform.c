/* Conformance case generator: does nodecoll turn a valid MPI program into a crash, a hang or
 * different bytes?
 *
 * One table (calls[] below) says, for each of the 17 intracommunicator collectives, which
 * arguments are significant at which ranks (MPI-4.0 chapter 6; docs/design.md (section "Conformance") is the same
 * table with the section numbers) and where MPI_IN_PLACE is allowed and what it makes
 * insignificant.  A seeded generator combines, per case:
 *   - the call, the communicator (dup, split with reversed or scrambled keys, create_group of a
 *     subset in reversed order, idup, dup_with_info, a child whose parent was already freed),
 *     the root, random counts (zero, small, past the move slot) and displacements (forwards,
 *     backwards, gaps, negative);
 *   - MPI_IN_PLACE at every position the standard allows;
 *   - garbage in every insignificant argument on the nodecoll run: NULL buffers and arrays,
 *     negative or huge counts, MPI_DATATYPE_NULL or a wrong type, arrays of garbage;
 *   - zero counts with NULL buffers;
 *   - MPI_BOTTOM with absolute-address datatypes (struct or hindexed over MPI_Get_address);
 *   - per rank and side a datatype of the same signature: the base type, its MPI_Type_dup, a
 *     contiguous(4), a vector with negative stride, a resize with lb < 0, a struct, a gappy
 *     resize, a reversed hindexed, and on the send side a resize to an extent smaller than the
 *     size (overlapping reads);
 *   - reductions over integer, floating and pair types with every op MPI defines on them, on
 *     the dup of MPI_INT where the host accepts a predefined op on it (also mixing MPI_INT and
 *     its dup across ranks).
 * Every case runs through PMPI_* (the oracle: valid values in the insignificant positions)
 * and through MPI_* (nodecoll) on identical inputs.  The receive arenas (sentinel bytes before,
 * after and in the gaps of the data) must be byte-identical, the send arenas unchanged, both
 * return codes MPI_SUCCESS.  An alarm() watchdog turns a hang into a message naming the case;
 * a crash prints the case before the host's own handler runs.
 * A last part checks MPI_ERRORS_RETURN: invalid calls (the same invalid argument on every
 * rank) give the host's error class, and the next valid call works.
 *
 * Usage: test_conform [CASES [SEED]] [--only=K] [--from=K] [--calls=gather,...] [--skip-calls=...]
 *                     [--parts=cases,errors] [--timeout=S] [--verbose]
 *   narrowing a failure down: [--without=garbage,zero,inplace,bottom,comms,types,null]
 *                             [--no-derived] [--shapes=MASK] [--plain-displs]
 * A failure names the case index, seed, call, dimensions and rank; rerun it alone with
 * --only=K and the same SEED, np and NODECOLL_* environment (--verbose prints every rank's
 * arguments).  After a hang, a rank whose own call returned may report a later case: it is
 * waiting there for the rank stuck in the earlier one, which reports first.
 *
 * Host quirks kept out of the generated cases (each checked with NODECOLL_ENABLE=0, where
 * MPI_* is the host itself): see host_accepts_garbage() and the error-case filters. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <limits.h>
#include <signal.h>
#include <unistd.h>

#include "common.h"

#define MAXP 8

/* ---- the table ------------------------------------------------------------------------- */

enum { C_BARRIER, C_BCAST, C_REDUCE, C_ALLREDUCE, C_REDUCE_SCATTER, C_REDUCE_SCATTER_BLOCK, C_SCAN, C_EXSCAN,
       C_GATHER, C_GATHERV, C_SCATTER, C_SCATTERV, C_ALLGATHER, C_ALLGATHERV, C_ALLTOALL, C_ALLTOALLV,
       C_ALLTOALLW, C_COUNT };
/* Argument positions.  Bcast's buffer/count/datatype and the reductions' count/datatype use
 * the R slots (their names are in the table). */
enum { A_SBUF, A_SCOUNT, A_STYPE, A_SCOUNTS, A_SDISPLS, A_STYPES, A_RBUF, A_RCOUNT, A_RTYPE, A_RCOUNTS, A_RDISPLS,
       A_RTYPES, A_OP, A_ROOT, A_COUNT };
static const char *arg_default_names[A_COUNT] = {"sendbuf", "sendcount", "sendtype", "sendcounts", "sdispls",
                                                  "sendtypes", "recvbuf", "recvcount", "recvtype", "recvcounts",
                                                  "rdispls", "recvtypes", "op", "root"};
/* Where an argument is significant: NO = not a parameter of the call. */
enum { NO = 0, ALL, ROOT, NOT_RANK0 };
/* Where MPI_IN_PLACE may be given. */
enum { IP_NONE, IP_SEND_ROOT, IP_RECV_ROOT, IP_SEND_ALL };
#define BIT(a) (1u << (a))

typedef struct call_desc {
    const char *name;    /* nodecoll's statistics name too */
    const char *section; /* MPI-4.0 */
    unsigned char sig[A_COUNT];
    int in_place;
    unsigned ip_ignores; /* arguments MPI_IN_PLACE makes insignificant at the rank giving it */
    const char *names[A_COUNT]; /* overrides of arg_default_names */
} call_desc;

#define SEND1 [A_SBUF] = ALL, [A_SCOUNT] = ALL, [A_STYPE] = ALL
#define RECV1 [A_RBUF] = ALL, [A_RCOUNT] = ALL, [A_RTYPE] = ALL
#define RED_NAMES {[A_RCOUNT] = "count", [A_RTYPE] = "datatype"}
static const call_desc calls[C_COUNT] = {
    [C_BARRIER] = {"barrier", "6.3", {0}, IP_NONE, 0, {0}},
    [C_BCAST] = {"bcast", "6.4", {RECV1, [A_ROOT] = ALL}, IP_NONE, 0,
                 {[A_RBUF] = "buffer", [A_RCOUNT] = "count", [A_RTYPE] = "datatype"}},
    [C_REDUCE] = {"reduce", "6.9.1",
                  {[A_SBUF] = ALL, [A_RBUF] = ROOT, [A_RCOUNT] = ALL, [A_RTYPE] = ALL, [A_OP] = ALL, [A_ROOT] = ALL},
                  IP_SEND_ROOT, 0, RED_NAMES},
    [C_ALLREDUCE] = {"allreduce", "6.9.6", {[A_SBUF] = ALL, RECV1, [A_OP] = ALL}, IP_SEND_ALL, 0, RED_NAMES},
    [C_REDUCE_SCATTER] = {"reduce_scatter", "6.10.2",
                          {[A_SBUF] = ALL, [A_RBUF] = ALL, [A_RCOUNTS] = ALL, [A_RTYPE] = ALL, [A_OP] = ALL},
                          IP_SEND_ALL, 0, {[A_RTYPE] = "datatype"}},
    [C_REDUCE_SCATTER_BLOCK] = {"reduce_scatter_block", "6.10.1", {[A_SBUF] = ALL, RECV1, [A_OP] = ALL},
                                IP_SEND_ALL, 0, {[A_RTYPE] = "datatype"}},
    [C_SCAN] = {"scan", "6.11.1", {[A_SBUF] = ALL, RECV1, [A_OP] = ALL}, IP_SEND_ALL, 0, RED_NAMES},
    /* recvbuf at rank 0: undefined output and not significant (6.11.2); in place it is input */
    [C_EXSCAN] = {"exscan", "6.11.2",
                  {[A_SBUF] = ALL, [A_RBUF] = NOT_RANK0, [A_RCOUNT] = ALL, [A_RTYPE] = ALL, [A_OP] = ALL},
                  IP_SEND_ALL, 0, RED_NAMES},
    [C_GATHER] = {"gather", "6.5",
                  {SEND1, [A_RBUF] = ROOT, [A_RCOUNT] = ROOT, [A_RTYPE] = ROOT, [A_ROOT] = ALL},
                  IP_SEND_ROOT, BIT(A_SCOUNT) | BIT(A_STYPE), {0}},
    [C_GATHERV] = {"gatherv", "6.5",
                   {SEND1, [A_RBUF] = ROOT, [A_RCOUNTS] = ROOT, [A_RDISPLS] = ROOT, [A_RTYPE] = ROOT, [A_ROOT] = ALL},
                   IP_SEND_ROOT, BIT(A_SCOUNT) | BIT(A_STYPE), {[A_RDISPLS] = "displs"}},
    [C_SCATTER] = {"scatter", "6.6",
                   {[A_SBUF] = ROOT, [A_SCOUNT] = ROOT, [A_STYPE] = ROOT, RECV1, [A_ROOT] = ALL},
                   IP_RECV_ROOT, BIT(A_RCOUNT) | BIT(A_RTYPE), {0}},
    [C_SCATTERV] = {"scatterv", "6.6",
                    {[A_SBUF] = ROOT, [A_SCOUNTS] = ROOT, [A_SDISPLS] = ROOT, [A_STYPE] = ROOT, RECV1, [A_ROOT] = ALL},
                    IP_RECV_ROOT, BIT(A_RCOUNT) | BIT(A_RTYPE), {[A_SDISPLS] = "displs"}},
    [C_ALLGATHER] = {"allgather", "6.7", {SEND1, RECV1}, IP_SEND_ALL, BIT(A_SCOUNT) | BIT(A_STYPE), {0}},
    [C_ALLGATHERV] = {"allgatherv", "6.7",
                      {SEND1, [A_RBUF] = ALL, [A_RCOUNTS] = ALL, [A_RDISPLS] = ALL, [A_RTYPE] = ALL},
                      IP_SEND_ALL, BIT(A_SCOUNT) | BIT(A_STYPE), {[A_RDISPLS] = "displs"}},
    [C_ALLTOALL] = {"alltoall", "6.8", {SEND1, RECV1}, IP_SEND_ALL, BIT(A_SCOUNT) | BIT(A_STYPE), {0}},
    [C_ALLTOALLV] = {"alltoallv", "6.8",
                     {[A_SBUF] = ALL, [A_SCOUNTS] = ALL, [A_SDISPLS] = ALL, [A_STYPE] = ALL, [A_RBUF] = ALL,
                      [A_RCOUNTS] = ALL, [A_RDISPLS] = ALL, [A_RTYPE] = ALL},
                     IP_SEND_ALL, BIT(A_SCOUNTS) | BIT(A_SDISPLS) | BIT(A_STYPE), {0}},
    [C_ALLTOALLW] = {"alltoallw", "6.8",
                     {[A_SBUF] = ALL, [A_SCOUNTS] = ALL, [A_SDISPLS] = ALL, [A_STYPES] = ALL, [A_RBUF] = ALL,
                      [A_RCOUNTS] = ALL, [A_RDISPLS] = ALL, [A_RTYPES] = ALL},
                     IP_SEND_ALL, BIT(A_SCOUNTS) | BIT(A_SDISPLS) | BIT(A_STYPES), {0}},
};

static const char *arg_name(int call, int a) { return calls[call].names[a] ? calls[call].names[a] : arg_default_names[a]; }
static int is_reduction(int call) { return call >= C_REDUCE && call <= C_EXSCAN; }
static int is_rooted(int call) { return calls[call].sig[A_ROOT] != NO; }

/* Does this rank give MPI_IN_PLACE in this case? */
static int gives_in_place(int call, int in_place, int rank, int root)
{
    if (!in_place) return 0;
    switch (calls[call].in_place) {
    case IP_SEND_ROOT:
    case IP_RECV_ROOT: return rank == root;
    case IP_SEND_ALL: return 1;
    default: return 0;
    }
}

/* 1: significant at this rank; 0: not; -1: not a parameter. */
static int significant(int call, int a, int rank, int root, int in_place)
{
    int sig = calls[call].sig[a];
    if (sig == NO) return -1;
    int here = gives_in_place(call, in_place, rank, root);
    if (here && (calls[call].ip_ignores & BIT(a))) return 0;
    switch (sig) {
    case ROOT: return rank == root;
    case NOT_RANK0: return rank != 0 || in_place;
    default: return 1;
    }
}

/* ---- datatypes ------------------------------------------------------------------------- */

enum { B_INT, B_DOUBLE, B_SCHAR, B_BYTE, B_2INT, B_LLONG, B_UNSIGNED, B_F90REAL, NBASE };
static const char *base_names[NBASE] = {"int", "double", "signed_char", "byte", "2int", "long_long", "unsigned",
                                        "f90_real(15)"};
static MPI_Datatype bases[NBASE];
/* Data movement and Bcast use these (an F90 real: predefined, yet not MPI_COMBINER_NAMED, and
 * its duplicate is what MPI_Type_dup makes of a predefined type). */
static const int move_bases[] = {B_INT, B_DOUBLE, B_SCHAR, B_BYTE, B_2INT, B_F90REAL};
#define NMOVE_BASES ((int)(sizeof move_bases / sizeof move_bases[0]))

enum { SH_BASE, SH_DUP, SH_CONTIG4, SH_VECNEG, SH_RESNEG, SH_STRUCT, SH_GAPPY, SH_HINDEXED, SH_OVERLAP, SH_COUNT };
static const char *shape_names[SH_COUNT] = {"base", "dup", "contig(4)", "vector(2,1,-3)", "resized(lb=-2e,ext=4e)",
                                            "struct{0,2e}", "resized(ext=2e)", "hindexed{2e,0}",
                                            "resized(contig2,ext=1e)"};
static const int shape_units[SH_COUNT] = {1, 1, 4, 2, 1, 2, 1, 2, 2};

typedef struct tinfo {
    MPI_Aint lb, ext, tlb, text;
    int size;
} tinfo;
static MPI_Datatype shapes[NBASE][SH_COUNT];
static tinfo tinfos[NBASE][SH_COUNT];

static tinfo info_of(MPI_Datatype t)
{
    tinfo i;
    MPI_Type_get_extent(t, &i.lb, &i.ext);
    MPI_Type_get_true_extent(t, &i.tlb, &i.text);
    MPI_Type_size(t, &i.size);
    return i;
}

static void make_shapes(void)
{
    MPI_Datatype f90_real;
    MPI_Type_create_f90_real(15, MPI_UNDEFINED, &f90_real);
    MPI_Datatype b0[NBASE] = {MPI_INT, MPI_DOUBLE, MPI_SIGNED_CHAR, MPI_BYTE, MPI_2INT, MPI_LONG_LONG, MPI_UNSIGNED,
                              f90_real};
    for (int b = 0; b < NBASE; b++) {
        MPI_Datatype B = bases[b] = b0[b], t, *s = shapes[b];
        MPI_Aint lb, e;
        MPI_Type_get_extent(B, &lb, &e);
        s[SH_BASE] = B;
        MPI_Type_dup(B, &s[SH_DUP]);
        MPI_Type_contiguous(4, B, &s[SH_CONTIG4]);
        MPI_Type_vector(2, 1, -3, B, &s[SH_VECNEG]);
        MPI_Type_create_resized(B, -2 * e, 4 * e, &s[SH_RESNEG]);
        int bl[2] = {1, 1};
        MPI_Aint sd[2] = {0, 2 * e}, hd[2] = {2 * e, 0};
        MPI_Datatype st[2] = {B, B};
        MPI_Type_create_struct(2, bl, sd, st, &s[SH_STRUCT]);
        MPI_Type_create_resized(B, 0, 2 * e, &s[SH_GAPPY]);
        MPI_Type_create_hindexed(2, bl, hd, B, &s[SH_HINDEXED]);
        MPI_Type_contiguous(2, B, &t);
        MPI_Type_create_resized(t, 0, e, &s[SH_OVERLAP]);
        MPI_Type_free(&t);
        for (int k = 0; k < SH_COUNT; k++) {
            if (k != SH_BASE) MPI_Type_commit(&s[k]);
            tinfos[b][k] = info_of(s[k]);
        }
    }
}

static void free_shapes(void)
{
    for (int b = 0; b < NBASE; b++)
        for (int k = 1; k < SH_COUNT; k++) MPI_Type_free(&shapes[b][k]);
}

/* ---- reductions: types and ops --------------------------------------------------------- */

enum { O_SUM, O_PROD, O_MIN, O_MAX, O_LAND, O_LOR, O_LXOR, O_BAND, O_BOR, O_BXOR, O_MINLOC, O_MAXLOC, O_COUNT };
static const char *op_names[O_COUNT] = {"sum", "prod", "min", "max", "land", "lor", "lxor", "band", "bor", "bxor",
                                        "minloc", "maxloc"};
static MPI_Op ops[O_COUNT];
#define OPS_INT 0x3ffu
#define OPS_FLOAT 0xfu
#define OPS_BYTE (BIT(O_BAND) | BIT(O_BOR) | BIT(O_BXOR))
#define OPS_PAIR (BIT(O_MINLOC) | BIT(O_MAXLOC))
/* MPI-4.0 6.9.2.  Random bytes are valid input for every pair here (integers wrap the same in
 * any order); doubles get small integers so any summation order is exact.  The host is the
 * oracle, so pairs a host gets wrong (checked against a serial fold) are left out:
 *   - Open MPI 4.1.4: SUM on 8- and 16-bit integers (MPI_SHORT, MPI_UNSIGNED_SHORT, int8; its
 *     AVX kernels, see wrap_reduce.c);
 *   - MPICH 4.0.2: MIN/MAX on unsigned integers (MPI_UNSIGNED, MPI_UNSIGNED_SHORT) compare
 *     as signed (MIN of 0x80000000u and 1u gives 0x80000000u);
 * and MPI_C_BOOL (random bytes are not valid bools). */
#if defined(MPICH_VERSION)
#define OPS_UNSIGNED (OPS_INT & ~(BIT(O_MIN) | BIT(O_MAX)))
#else
#define OPS_UNSIGNED OPS_INT
#endif
static const struct { int base; unsigned ops; } red_types[] = {
    {B_INT, OPS_INT}, {B_LLONG, OPS_INT}, {B_UNSIGNED, OPS_UNSIGNED}, {B_DOUBLE, OPS_FLOAT}, {B_BYTE, OPS_BYTE}, {B_2INT, OPS_PAIR}};
#define NRED_TYPES (int)(sizeof red_types / sizeof red_types[0])
static int host_dup_op_ok; /* the host accepts MPI_SUM on MPI_Type_dup(MPI_INT) */

/* ---- communicators --------------------------------------------------------------------- */

enum { CM_WORLD_DUP, CM_SPLIT_REV, CM_SPLIT_ODD, CM_GROUP_REV, CM_IDUP, CM_DUP_INFO, CM_CHILD_OF_FREED, CM_COUNT };
static const char *comm_names[CM_COUNT] = {"world-dup", "split-reversed", "split-odd", "create_group-reversed-subset",
                                           "idup", "dup_with_info", "child-of-freed"};
static MPI_Comm comms[CM_COUNT];

static void make_comms(void)
{
    MPI_Comm_dup(MPI_COMM_WORLD, &comms[CM_WORLD_DUP]);
    MPI_Comm_split(MPI_COMM_WORLD, 0, t_size - t_rank, &comms[CM_SPLIT_REV]);
    MPI_Comm_split(MPI_COMM_WORLD, t_rank % 2, (t_rank * 5 + 3) % 7, &comms[CM_SPLIT_ODD]);
    /* every rank but 1 (when there are 3 or more), in reversed order */
    MPI_Group world, sub;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int members[MAXP], n = 0;
    for (int r = t_size - 1; r >= 0; r--)
        if (r != 1 || t_size < 3) members[n++] = r;
    MPI_Group_incl(world, n, members, &sub);
    comms[CM_GROUP_REV] = MPI_COMM_NULL;
    if (t_rank != 1 || t_size < 3) MPI_Comm_create_group(MPI_COMM_WORLD, sub, 77, &comms[CM_GROUP_REV]);
    MPI_Group_free(&sub);
    MPI_Group_free(&world);
    MPI_Request req;
    MPI_Comm_idup(MPI_COMM_WORLD, &comms[CM_IDUP], &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpi_assert_no_any_tag", "true");
    MPI_Info_set(info, "nodecoll_conformance", "1");
    MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &comms[CM_DUP_INFO]);
    MPI_Info_free(&info);
    /* The parent is used (nodecoll builds its state), the child built from it, then the
     * parent freed while the child stays in use for the rest of the run. */
    MPI_Comm parent;
    MPI_Comm_split(MPI_COMM_WORLD, 0, (t_rank * 3) % t_size + t_rank * t_size, &parent);
    int x = t_rank, y = 0;
    MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, parent);
    MPI_Barrier(parent);
    MPI_Comm_split(parent, 0, -t_rank, &comms[CM_CHILD_OF_FREED]);
    MPI_Bcast(&y, 1, MPI_INT, 0, comms[CM_CHILD_OF_FREED]);
    MPI_Comm_free(&parent);
    for (int k = 0; k < CM_COUNT; k++)
        if (comms[k] != MPI_COMM_NULL) MPI_Comm_set_errhandler(comms[k], MPI_ERRORS_RETURN);
}

/* ---- watchdog and crash reports -------------------------------------------------------- */

static char g_where[2048];
static size_t g_where_len;
/* Seconds one case may take (both runs) before it counts as a hang: a case takes well under a
 * second even at 5 oversubscribed ranks; sanitised builds (NODECOLL_TEST_SCALE < 1) get more. */
static int g_timeout = 10;
static struct sigaction g_old[32];

/* One write(), so the ranks' reports do not interleave. */
static void on_fatal(int sig)
{
    static char msg[sizeof g_where + 128];
    size_t n = 0;
    const char *head = sig == SIGALRM ? "\nFAIL HANG (no return within the watchdog's time) " : "\nFAIL CRASH (signal ";
    memcpy(msg, head, strlen(head));
    n += strlen(head);
    if (sig != SIGALRM) {
        char num[8];
        int k = 0;
        for (int v = sig; v; v /= 10) num[k++] = (char)('0' + v % 10);
        while (k) msg[n++] = num[--k];
        msg[n++] = ')', msg[n++] = ' ';
    }
    memcpy(msg + n, g_where, g_where_len);
    n += g_where_len;
    msg[n++] = '\n';
    (void)!write(2, msg, n);
    if (sig == SIGALRM) _exit(3);
    sigaction(sig, &g_old[sig], NULL);
    raise(sig);
}

static void install_watchdog(void)
{
    int sigs[] = {SIGALRM, SIGSEGV, SIGBUS, SIGFPE, SIGABRT, SIGILL};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_fatal;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_NODEFER;
        sigaction(sigs[i], &sa, &g_old[sigs[i]]);
    }
}

__attribute__((format(printf, 1, 2))) static void set_where(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = snprintf(g_where, sizeof g_where, "[rank %d/%d] ", t_rank, t_size);
    vsnprintf(g_where + n, sizeof g_where - (size_t)n, fmt, ap);
    va_end(ap);
    g_where_len = strlen(g_where);
}

/* ---- one case -------------------------------------------------------------------------- */

enum { K_ONE, K_UNI, K_V, K_W }; /* count+type / n blocks of count / counts+displs / +types, byte displs */

typedef struct side {
    int used, kind, n, base;
    int count, counts[MAXP], displs[MAXP], shape[MAXP];
    long lo, hi;      /* footprint, bytes from the buffer pointer */
    size_t off, len;  /* arena: buffer pointer at arena + off */
    unsigned char *init, *arena[2];
    MPI_Datatype types[2][MAXP]; /* per run (MPI_BOTTOM types differ) */
    int bottom, pass_null;
    long skip_lo, skip_hi; /* undefined output: not compared */
} side;

typedef struct ccase {
    int index, call, comm_kind, root, in_place, garbage, zero, bottom, base, red, op, mix_dup;
    int systematic;
    uint64_t common; /* seed of draws every rank makes alike */
    /* the same on every rank */
    int m_uni, mv[MAXP], M[MAXP][MAXP], cnt, rsc[MAXP];
} ccase;

typedef struct cargs {
    void *sbuf;
    int scount;
    MPI_Datatype stype;
    int *scounts, *sdispls;
    MPI_Datatype *stypes;
    void *rbuf;
    int rcount;
    MPI_Datatype rtype;
    int *rcounts, *rdispls;
    MPI_Datatype *rtypes;
    MPI_Op op;
    int root;
} cargs;

static uint64_t g_seed = 1;
static int g_verbose;
/* Narrowing a failure down: --no-derived (every side the base type), --plain-displs
 * (blocks forwards, no negative displacements). */
static int g_no_derived, g_plain_displs;
static unsigned g_without; /* --without=garbage,zero,inplace,bottom,comms */
enum { W_GARBAGE = 1, W_ZERO = 2, W_INPLACE = 4, W_BOTTOM = 8, W_COMMS = 16, W_NULL = 32 };
static unsigned g_shape_mask = ~0u; /* --shapes=MASK: the derived shapes allowed (bit k: shape k) */

static int pick(uint64_t *rng, int n) { return n <= 1 ? 0 : (int)(t_rand(rng) % (uint64_t)n); }

static int gcd(int a, int b)
{
    while (b) {
        int t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* A shape whose signature unit divides every block (g: gcd of the blocks' base elements). */
static int choose_shape(uint64_t *rng, int g, int recv, int derived)
{
    if (!derived || pick(rng, 5) < 2 || g_no_derived) return SH_BASE;
    int cand[SH_COUNT], n = 0;
    for (int k = 1; k < SH_COUNT; k++)
        if ((g == 0 || g % shape_units[k] == 0) && !(recv && k == SH_OVERLAP) && (g_shape_mask & BIT(k))) cand[n++] = k;
    return n ? cand[pick(rng, n)] : SH_BASE;
}

/* Open MPI 4.1.4's Gather(v) from 4 ranks up (its binomial tree, whose inner ranks forward
 * their subtrees) delivers wrong bytes for a send type whose elements overlap (extent
 * smaller than its size: the last element's tail is replaced by the next rank's data, where
 * nodecoll delivers what the type map says).  There the send side of Gather(v) keeps to
 * shapes the host gets right. */
static int host_safe_send_shape(int call, int shape)
{
#if defined(OPEN_MPI)
    if ((call == C_GATHER || call == C_GATHERV) && shape == SH_OVERLAP) return SH_BASE;
#else
    (void)call;
#endif
    return shape;
}

/* A shape (either side) with the same signature unit as shape k. */
__attribute__((unused)) static int same_unit_shape(uint64_t *rng, int k)
{
    int cand[SH_COUNT], n = 0;
    for (int j = 0; j < SH_COUNT; j++)
        if (shape_units[j] == shape_units[k] && (g_shape_mask & BIT(j) || j == k) && !(g_no_derived && j)) cand[n++] = j;
    return cand[pick(rng, n)];
}

static const tinfo *ti(const side *s, int i) { return &tinfos[s->base][s->shape[s->kind == K_W ? i : 0]]; }
static int blk_count(const side *s, int i) { return s->kind == K_ONE || s->kind == K_UNI ? s->count : s->counts[i]; }

static long blk_off(const side *s, int i)
{
    const tinfo *t = ti(s, i);
    switch (s->kind) {
    case K_UNI: return (long)i * s->count * t->ext;
    case K_V: return (long)s->displs[i] * t->ext;
    case K_W: return s->displs[i];
    default: return 0;
    }
}

static void blk_span(const side *s, int i, long off, long *lo, long *hi)
{
    const tinfo *t = ti(s, i);
    int c = blk_count(s, i);
    *lo = off + t->tlb;
    *hi = off + (long)(c - 1) * t->ext + t->tlb + t->text;
}

/* Lays out the blocks of a K_V / K_W side without overlap: forwards or backwards, gaps, and a
 * start that may make displacements negative. */
static void place_blocks(side *s, uint64_t *rng)
{
    int backwards = pick(rng, 3) == 0;
    long at = pick(rng, 4) == 0 ? -(long)pick(rng, 3) * 16 : pick(rng, 3) * 8;
    if (g_plain_displs) backwards = 0, at = 0;
    for (int k = 0; k < s->n; k++) {
        int i = backwards ? s->n - 1 - k : k;
        const tinfo *t = ti(s, i);
        if (s->kind == K_W) {
            long lo, hi;
            s->displs[i] = 0;
            if (!s->counts[i]) {
                s->displs[i] = (int)at;
                continue;
            }
            blk_span(s, i, 0, &lo, &hi);
            long d = at - lo;
            d = (d + 15) / 16 * 16;
            if (d < at - lo) d += 16;
            s->displs[i] = (int)d;
            at = d + hi + pick(rng, 3) * 8;
        } else {
            long lo, hi;
            if (!s->counts[i]) {
                s->displs[i] = (int)(at / t->ext) + pick(rng, 2);
                continue;
            }
            blk_span(s, i, 0, &lo, &hi);
            long need = at - lo, d = need >= 0 ? (need + t->ext - 1) / t->ext : -((-need) / t->ext);
            s->displs[i] = (int)d;
            at = d * t->ext + hi + pick(rng, 3) * t->ext;
        }
    }
}

static void finish_side(side *s)
{
    int any = 0;
    s->lo = s->hi = 0;
    for (int i = 0; i < s->n; i++) {
        if (!blk_count(s, i)) continue;
        long lo, hi;
        blk_span(s, i, blk_off(s, i), &lo, &hi);
        if (!any || lo < s->lo) s->lo = lo;
        if (!any || hi > s->hi) s->hi = hi;
        any = 1;
    }
    long pre = 64 + (s->lo < 0 ? -s->lo : 0);
    s->off = (size_t)((pre + 15) / 16 * 16);
    s->len = s->off + (size_t)(s->hi > 0 ? s->hi : 0) + 64;
    s->skip_lo = s->skip_hi = 0;
}

/* base elements -> count of shape k (the shape divides it) */
static int units_to_count(int m, int shape) { return m / shape_units[shape]; }

static int gcd_of(const int *v, int n)
{
    int g = 0;
    for (int i = 0; i < n; i++) g = gcd(g, v[i]);
    return g;
}

/* Describes this rank's send (S) and receive (R) sides from the case. */
static void plan_sides(const ccase *c, int rank, int size, uint64_t *rng, side *S, side *R)
{
    memset(S, 0, sizeof *S);
    memset(R, 0, sizeof *R);
    int call = c->call, derived = !is_reduction(call);
    int ip_here = gives_in_place(call, c->in_place, rank, c->root);
    S->base = R->base = c->base;
    int mrow[MAXP], mcol[MAXP];
    switch (call) {
    case C_BARRIER: break;
    case C_BCAST:
        R->used = 1, R->kind = K_ONE, R->n = 1;
        R->shape[0] = choose_shape(rng, c->m_uni, 1, derived);
        R->count = units_to_count(c->m_uni, R->shape[0]);
        break;
    case C_REDUCE:
    case C_ALLREDUCE:
    case C_SCAN:
    case C_EXSCAN:
    case C_REDUCE_SCATTER_BLOCK:
    case C_REDUCE_SCATTER: {
        int shape = c->mix_dup ? (rank % 2 ? SH_DUP : SH_BASE) : c->red >= 100 ? SH_DUP : SH_BASE;
        int total = call == C_REDUCE_SCATTER_BLOCK ? c->cnt * size : c->cnt, mine = c->cnt;
        if (call == C_REDUCE_SCATTER) {
            total = 0;
            for (int q = 0; q < size; q++) total += c->rsc[q];
            mine = c->rsc[rank];
        }
        S->used = R->used = 1, S->kind = R->kind = K_ONE, S->n = R->n = 1;
        S->shape[0] = R->shape[0] = shape;
        S->count = total;
        R->count = ip_here ? total : mine;
        break;
    }
    case C_GATHER:
    case C_SCATTER:
    case C_ALLGATHER: {
        side *one = call == C_SCATTER ? R : S, *all = call == C_SCATTER ? S : R;
        one->used = all->used = 1;
        one->kind = K_ONE, one->n = 1;
        one->shape[0] = choose_shape(rng, c->m_uni, one == R, derived);
        one->shape[0] = host_safe_send_shape(call, one->shape[0]);
        one->count = units_to_count(c->m_uni, one->shape[0]);
        all->kind = K_UNI, all->n = size;
        all->shape[0] = choose_shape(rng, c->m_uni, all == R, derived);
        all->count = units_to_count(c->m_uni, all->shape[0]);
        break;
    }
    case C_GATHERV:
    case C_SCATTERV:
    case C_ALLGATHERV: {
        side *one = call == C_SCATTERV ? R : S, *all = call == C_SCATTERV ? S : R;
        one->used = all->used = 1;
        one->kind = K_ONE, one->n = 1;
        one->shape[0] = host_safe_send_shape(call, choose_shape(rng, c->mv[rank], one == R, derived));
        all->kind = K_V, all->n = size;
        all->shape[0] = choose_shape(rng, gcd_of(c->mv, size), all == R, derived);
#if defined(MPICH_VERSION)
        /* MPICH 4.0's ring Allgatherv (large messages) cuts the blocks it forwards into
         * pieces counted in each rank's own receive type: receive types of different extents
         * on different ranks give MPI_ERR_TRUNCATE from the host alone.  One receive type
         * for every rank there. */
        if (call == C_ALLGATHERV) {
            uint64_t common = c->common;
            all->shape[0] = choose_shape(&common, gcd_of(c->mv, size), 1, derived);
        }
#endif
#if defined(OPEN_MPI)
        /* Open MPI 4.1's tuned Allgatherv picks its algorithm from size(sendtype) x sum of
         * recvcounts: ranks whose send and receive types differ in size per element pick
         * different algorithms and the host hangs.  Same unit on both sides there. */
        if (call == C_ALLGATHERV) one->shape[0] = same_unit_shape(rng, all->shape[0]);
#endif
        one->count = units_to_count(c->mv[rank], one->shape[0]);
        for (int i = 0; i < size; i++) all->counts[i] = units_to_count(c->mv[i], all->shape[0]);
        place_blocks(all, rng);
        break;
    }
    case C_ALLTOALL:
        S->used = R->used = 1, S->kind = R->kind = K_UNI, S->n = R->n = size;
        S->shape[0] = choose_shape(rng, c->m_uni, 0, derived);
        R->shape[0] = choose_shape(rng, c->m_uni, 1, derived);
        S->count = units_to_count(c->m_uni, S->shape[0]);
        R->count = units_to_count(c->m_uni, R->shape[0]);
        break;
    case C_ALLTOALLV:
    case C_ALLTOALLW:
        for (int j = 0; j < size; j++) mrow[j] = c->M[rank][j], mcol[j] = c->M[j][rank];
        S->used = R->used = 1, S->n = R->n = size;
        S->kind = R->kind = call == C_ALLTOALLV ? K_V : K_W;
        if (call == C_ALLTOALLV) {
            S->shape[0] = choose_shape(rng, gcd_of(mrow, size), 0, derived);
            R->shape[0] = choose_shape(rng, gcd_of(mcol, size), 1, derived);
            for (int j = 0; j < size; j++) {
                S->counts[j] = units_to_count(mrow[j], S->shape[0]);
                R->counts[j] = units_to_count(mcol[j], R->shape[0]);
            }
        } else {
            for (int j = 0; j < size; j++) {
                S->shape[j] = choose_shape(rng, mrow[j], 0, derived);
                R->shape[j] = choose_shape(rng, mcol[j], 1, derived);
                S->counts[j] = units_to_count(mrow[j], S->shape[j]);
                R->counts[j] = units_to_count(mcol[j], R->shape[j]);
            }
        }
        place_blocks(S, rng);
        place_blocks(R, rng);
        break;
    }
    finish_side(S);
    finish_side(R);
    /* Undefined output, not compared: Exscan's recvbuf at rank 0 (6.11.2); the tail of an
     * in-place Reduce_scatter(_block) input past this rank's block. */
    if (call == C_EXSCAN && rank == 0 && !c->in_place) R->skip_lo = R->lo, R->skip_hi = R->hi;
    if ((call == C_REDUCE_SCATTER || call == C_REDUCE_SCATTER_BLOCK) && ip_here) {
        int mine = call == C_REDUCE_SCATTER ? c->rsc[rank] : c->cnt;
        R->skip_lo = (long)mine * tinfos[R->base][R->shape[0]].ext;
        R->skip_hi = R->hi;
    }
}

/* MPI_BOTTOM form of type t for a buffer at p: t's type map moved to p's absolute address
 * (alternately through a struct and through an hindexed), resized to t's bounds there. */
static MPI_Datatype absolute_type(MPI_Datatype t, void *p, int how)
{
    MPI_Aint addr, lb, ext;
    MPI_Get_address(p, &addr);
    MPI_Type_get_extent(t, &lb, &ext);
    MPI_Datatype a, r;
    int one = 1;
    if (how) MPI_Type_create_struct(1, &one, &addr, &t, &a);
    else MPI_Type_create_hindexed(1, &one, &addr, t, &a);
    MPI_Type_create_resized(a, addr + lb, ext, &r);
    MPI_Type_free(&a);
    MPI_Type_commit(&r);
    return r;
}

static void *side_buf(side *s, int run) { return s->arena[run] + s->off; }

static void side_types(side *s, int run, int how)
{
    int nt = s->kind == K_W ? s->n : 1;
    for (int i = 0; i < nt; i++) {
        MPI_Datatype t = shapes[s->base][s->shape[i]];
        s->types[run][i] = s->bottom ? absolute_type(t, side_buf(s, run), how + i) : t;
    }
    for (int i = nt; i < MAXP; i++) s->types[run][i] = s->types[run][0];
}

static void free_side(side *s)
{
    for (int run = 0; run < 2; run++) {
        if (s->bottom)
            for (int i = 0; i < (s->kind == K_W ? s->n : 1); i++) MPI_Type_free(&s->types[run][i]);
        free(s->arena[run]);
    }
    free(s->init);
}

/* Garbage for an insignificant argument (nodecoll run only). */
static int garbage_counts[MAXP] = {-1, -7, -1, -3, -1, -1, -2, -1};
static int garbage_displs[MAXP] = {INT_MIN / 2, -99999, INT_MAX / 2, -1, 12345678, -5, INT_MIN / 4, 77777777};
static MPI_Datatype garbage_types[MAXP];

/* Garbage the host accepts in an insignificant position.  Checked by running this test with
 * NODECOLL_ENABLE=0 (MPI_* is then the host itself, fed the garbage):
 *   - Open MPI 4.1: with MPI_IN_PLACE at the root of Gather(v) it still checks sendcount and
 *     sendtype (sendcount < 0: MPI_ERR_COUNT; MPI_DATATYPE_NULL: MPI_ERR_TYPE), and at the
 *     root of Scatter(v) recvcount/recvtype likewise; ... (filled in below per MPI). */
static int host_accepts_garbage(int call, int a, int kind, int in_place_here);

typedef struct gchoice {
    unsigned mask;      /* arguments given garbage */
    int kind[A_COUNT];  /* 0 or 1: which garbage */
} gchoice;

static void apply_garbage(int call, const gchoice *g, cargs *a)
{
    for (int k = 0; k < A_COUNT; k++) {
        if (!(g->mask & BIT(k))) continue;
        int v = g->kind[k];
        switch (k) {
        case A_SBUF: a->sbuf = NULL; break;
        case A_RBUF: a->rbuf = NULL; break;
        case A_SCOUNT: a->scount = v ? 1 << 30 : -1; break;
        case A_RCOUNT: a->rcount = v ? 1 << 30 : -1; break;
        case A_STYPE: a->stype = v ? MPI_DOUBLE_INT : MPI_DATATYPE_NULL; break;
        case A_RTYPE: a->rtype = v ? MPI_DOUBLE_INT : MPI_DATATYPE_NULL; break;
        case A_SCOUNTS: a->scounts = v ? garbage_counts : NULL; break;
        case A_RCOUNTS: a->rcounts = v ? garbage_counts : NULL; break;
        case A_SDISPLS: a->sdispls = v ? garbage_displs : NULL; break;
        case A_RDISPLS: a->rdispls = v ? garbage_displs : NULL; break;
        case A_STYPES: a->stypes = v ? garbage_types : NULL; break;
        case A_RTYPES: a->rtypes = v ? garbage_types : NULL; break;
        default: break;
        }
    }
    (void)call;
}

static const char *garbage_text(int a, int v)
{
    switch (a) {
    case A_SBUF:
    case A_RBUF: return "NULL";
    case A_SCOUNT:
    case A_RCOUNT: return v ? "1<<30" : "-1";
    case A_STYPE:
    case A_RTYPE: return v ? "MPI_DOUBLE_INT" : "MPI_DATATYPE_NULL";
    case A_SCOUNTS:
    case A_RCOUNTS: return v ? "{-1,-7,...}" : "NULL";
    case A_SDISPLS:
    case A_RDISPLS: return v ? "{INT_MIN/2,...}" : "NULL";
    default: return v ? "{MPI_DATATYPE_NULL,...}" : "NULL";
    }
}

static int invoke(int call, const cargs *a, MPI_Comm comm, int nodecoll)
{
    switch (call) {
    case C_BARRIER: return (nodecoll ? MPI_Barrier : PMPI_Barrier)(comm);
    case C_BCAST: return (nodecoll ? MPI_Bcast : PMPI_Bcast)(a->rbuf, a->rcount, a->rtype, a->root, comm);
    case C_REDUCE:
        return (nodecoll ? MPI_Reduce : PMPI_Reduce)(a->sbuf, a->rbuf, a->rcount, a->rtype, a->op, a->root, comm);
    case C_ALLREDUCE:
        return (nodecoll ? MPI_Allreduce : PMPI_Allreduce)(a->sbuf, a->rbuf, a->rcount, a->rtype, a->op, comm);
    case C_REDUCE_SCATTER:
        return (nodecoll ? MPI_Reduce_scatter : PMPI_Reduce_scatter)(a->sbuf, a->rbuf, a->rcounts, a->rtype, a->op, comm);
    case C_REDUCE_SCATTER_BLOCK:
        return (nodecoll ? MPI_Reduce_scatter_block : PMPI_Reduce_scatter_block)(a->sbuf, a->rbuf, a->rcount, a->rtype,
                                                                                 a->op, comm);
    case C_SCAN: return (nodecoll ? MPI_Scan : PMPI_Scan)(a->sbuf, a->rbuf, a->rcount, a->rtype, a->op, comm);
    case C_EXSCAN: return (nodecoll ? MPI_Exscan : PMPI_Exscan)(a->sbuf, a->rbuf, a->rcount, a->rtype, a->op, comm);
    case C_GATHER:
        return (nodecoll ? MPI_Gather : PMPI_Gather)(a->sbuf, a->scount, a->stype, a->rbuf, a->rcount, a->rtype, a->root,
                                                     comm);
    case C_GATHERV:
        return (nodecoll ? MPI_Gatherv : PMPI_Gatherv)(a->sbuf, a->scount, a->stype, a->rbuf, a->rcounts, a->rdispls,
                                                       a->rtype, a->root, comm);
    case C_SCATTER:
        return (nodecoll ? MPI_Scatter : PMPI_Scatter)(a->sbuf, a->scount, a->stype, a->rbuf, a->rcount, a->rtype,
                                                       a->root, comm);
    case C_SCATTERV:
        return (nodecoll ? MPI_Scatterv : PMPI_Scatterv)(a->sbuf, a->scounts, a->sdispls, a->stype, a->rbuf, a->rcount,
                                                         a->rtype, a->root, comm);
    case C_ALLGATHER:
        return (nodecoll ? MPI_Allgather : PMPI_Allgather)(a->sbuf, a->scount, a->stype, a->rbuf, a->rcount, a->rtype,
                                                           comm);
    case C_ALLGATHERV:
        return (nodecoll ? MPI_Allgatherv : PMPI_Allgatherv)(a->sbuf, a->scount, a->stype, a->rbuf, a->rcounts,
                                                             a->rdispls, a->rtype, comm);
    case C_ALLTOALL:
        return (nodecoll ? MPI_Alltoall : PMPI_Alltoall)(a->sbuf, a->scount, a->stype, a->rbuf, a->rcount, a->rtype,
                                                         comm);
    case C_ALLTOALLV:
        return (nodecoll ? MPI_Alltoallv : PMPI_Alltoallv)(a->sbuf, a->scounts, a->sdispls, a->stype, a->rbuf,
                                                           a->rcounts, a->rdispls, a->rtype, comm);
    default:
        return (nodecoll ? MPI_Alltoallw : PMPI_Alltoallw)(a->sbuf, a->scounts, a->sdispls, a->stypes, a->rbuf,
                                                           a->rcounts, a->rdispls, a->rtypes, comm);
    }
}

/* The arguments of one run from the two sides (valid everywhere). */
static void assemble(const ccase *c, side *S, side *R, int run, int rank, int size, int oracle_oop, cargs *a)
{
    int call = c->call, ip_here = gives_in_place(call, c->in_place, rank, c->root);
    memset(a, 0, sizeof *a);
    a->root = c->root;
    a->op = is_reduction(call) ? ops[c->op] : MPI_OP_NULL;
    if (S->used) {
        a->sbuf = S->pass_null ? NULL : S->bottom ? MPI_BOTTOM : side_buf(S, run);
        a->scount = S->count;
        a->stype = S->types[run][0];
        a->scounts = S->counts;
        a->sdispls = S->displs;
        a->stypes = S->types[run];
    }
    if (R->used) {
        a->rbuf = R->pass_null ? NULL : R->bottom ? MPI_BOTTOM : side_buf(R, run);
        a->rcount = R->count;
        a->rtype = R->types[run][0];
        a->rcounts = R->counts;
        a->rdispls = R->displs;
        a->rtypes = R->types[run];
    }
    if (is_reduction(call)) {
        a->rcount = call == C_REDUCE_SCATTER_BLOCK ? c->cnt : c->cnt;
        a->rcounts = (int *)c->rsc;
        a->rtype = R->types[run][0];
    }
    if (ip_here && !(run == 0 && oracle_oop)) {
        if (calls[call].in_place == IP_RECV_ROOT) a->rbuf = MPI_IN_PLACE;
        else a->sbuf = MPI_IN_PLACE;
    }
    (void)size;
}

static char *describe_side(char *p, char *end, const char *what, const side *s, int in_place)
{
    if (!s->used) return p;
    if (in_place) return p + snprintf(p, (size_t)(end - p), " %s=MPI_IN_PLACE", what);
    p += snprintf(p, (size_t)(end - p), " %s=", what);
    int nt = s->kind == K_W ? s->n : 1;
    for (int i = 0; i < nt && p < end; i++)
        p += snprintf(p, (size_t)(end - p), "%s%s", i ? "|" : "", shape_names[s->shape[i]]);
    if (s->kind == K_ONE || s->kind == K_UNI) p += snprintf(p, (size_t)(end - p), " count %d", s->count);
    else {
        p += snprintf(p, (size_t)(end - p), " counts/displs");
        for (int i = 0; i < s->n && p < end; i++) p += snprintf(p, (size_t)(end - p), " %d@%d", s->counts[i], s->displs[i]);
    }
    if (s->bottom) p += snprintf(p, (size_t)(end - p), " MPI_BOTTOM");
    if (s->pass_null) p += snprintf(p, (size_t)(end - p), " NULL");
    return p;
}

static void describe_case(char *buf, size_t len, const ccase *c, const side *S, const side *R, const gchoice *g,
                          int crank, int csize)
{
    char *p = buf, *end = buf + len;
    p += snprintf(p, (size_t)(end - p), "case %d (seed %llu) %s comm=%s(rank %d of %d)", c->index,
                  (unsigned long long)g_seed, calls[c->call].name, comm_names[c->comm_kind], crank, csize);
    if (is_rooted(c->call)) p += snprintf(p, (size_t)(end - p), " root=%d", c->root);
    if (is_reduction(c->call))
        p += snprintf(p, (size_t)(end - p), " type=%s%s op=%s", base_names[c->base],
                      c->mix_dup ? " (dup on odd ranks)" : c->red >= 100 ? " (dup)" : "", op_names[c->op]);
    else if (c->call != C_BARRIER) p += snprintf(p, (size_t)(end - p), " base=%s", base_names[c->base]);
    p += snprintf(p, (size_t)(end - p), "%s%s%s%s", c->in_place ? " IN_PLACE" : "", c->zero ? " zero-counts" : "",
                  c->garbage ? " garbage" : "", c->bottom ? " bottom" : "");
    int ip = gives_in_place(c->call, c->in_place, crank, c->root), recv_ip = calls[c->call].in_place == IP_RECV_ROOT;
    p = describe_side(p, end, "send", S, ip && !recv_ip);
    p = describe_side(p, end, "recv", R, ip && recv_ip);
    if (ip && !recv_ip && S->used && is_reduction(c->call)) p += snprintf(p, (size_t)(end - p), " (input in recvbuf)");
    if (g->mask) {
        p += snprintf(p, (size_t)(end - p), "; garbage at this rank:");
        for (int k = 0; k < A_COUNT && p < end; k++)
            if (g->mask & BIT(k))
                p += snprintf(p, (size_t)(end - p), " %s=%s", arg_name(c->call, k), garbage_text(k, g->kind[k]));
    }
}

static void fill_random(unsigned char *p, size_t n, uint64_t *rng)
{
    for (size_t i = 0; i < n; i += 8) {
        uint64_t v = t_rand(rng);
        memcpy(p + i, &v, n - i < 8 ? n - i : 8);
    }
}

/* Doubles of reductions: small integers (exact in any order). */
static void fill_doubles(side *s, uint64_t *rng)
{
    int n = s->count;
    for (int i = 0; i < n; i++) {
        double v = (double)(pick(rng, 7) - 3);
        memcpy(s->init + s->off + (size_t)i * sizeof v, &v, sizeof v);
    }
}

static int error_class(int err)
{
    int cls = err;
    if (err != MPI_SUCCESS) MPI_Error_class(err, &cls);
    return cls;
}

static const char *err_text(int err)
{
    static char text[MPI_MAX_ERROR_STRING];
    int len;
    if (MPI_Error_string(err, text, &len) != MPI_SUCCESS) snprintf(text, sizeof text, "error %d", err);
    return text;
}

static int g_calls_run[C_COUNT];

static void run_case(const ccase *c)
{
    MPI_Comm comm = comms[c->comm_kind];
    if (comm == MPI_COMM_NULL) return;
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    ccase cc = *c;
    cc.root = c->root % size;
    int call = c->call;
#if defined(MPICH_VERSION)
    /* MPICH 4.0.2's Reduce with MPI_IN_PLACE at a root other than 0 segfaults (in memcpy)
     * from about 4 KiB up (its long-message algorithm): kept below 2 KiB there. */
    if (call == C_REDUCE && cc.in_place && cc.root != 0) {
        int limit = 2048 / (int)tinfos[cc.base][SH_BASE].ext;
        if (cc.cnt > limit) cc.cnt = limit;
    }
#endif
#if defined(OPEN_MPI)
    /* Open MPI 4.1's Alltoallw on one rank (coll/self, ompi_datatype_sndrcv) reads past the
     * send buffer and mixes up different send and receive types: wrong bytes or an abort
     * from the host alone (nodecoll hands one-rank calls to it anyway). */
    if (call == C_ALLTOALLW && size == 1) return;
#endif
    uint64_t rng = g_seed * 0x100000001b3ULL + (uint64_t)c->index * 7919u + (uint64_t)rank * 104729u;
    side S, R;
    plan_sides(&cc, rank, size, &rng, &S, &R);
    int ip_here = gives_in_place(call, cc.in_place, rank, cc.root);
    /* Open MPI 4.1's in-place Alltoallw corrupts memory (see test_move.c): its oracle runs
     * the same exchange out of place, from a copy of the receive buffer. */
    int oracle_oop = 0;
#if defined(OPEN_MPI)
    oracle_oop = call == C_ALLTOALLW && cc.in_place;
#endif
    if (oracle_oop) {
        side keep = R;
        S = keep;
    }
    /* MPI_BOTTOM and NULL for empty sides */
    for (int k = 0; k < 2; k++) {
        side *s = k ? &R : &S;
        if (!s->used) continue;
        int sig = significant(call, k ? A_RBUF : A_SBUF, rank, cc.root, cc.in_place) == 1;
        int absent = ip_here && !oracle_oop && ((k == 0) == (calls[call].in_place != IP_RECV_ROOT));
        if (absent) continue;
        int empty = s->hi <= s->lo;
        if (cc.bottom && !is_reduction(call) && !empty && sig) s->bottom = pick(&rng, 4) != 0;
        if (empty && (cc.zero || pick(&rng, 2)) && !(g_without & W_NULL)) s->pass_null = 1;
    }
    /* In place, a side given as the other side's copy (oracle out of place) must not be
     * NULL/bottom differently from R: keep them plain. */
    if (oracle_oop) S.bottom = R.bottom = 0, S.pass_null = R.pass_null = R.pass_null && S.pass_null;
    for (int k = 0; k < 2; k++) {
        side *s = k ? &R : &S;
        if (!s->used) continue;
        s->init = malloc(s->len);
        fill_random(s->init, s->len, &rng);
        if (is_reduction(call) && cc.base == B_DOUBLE) fill_doubles(s, &rng);
    }
    if (oracle_oop) memcpy(S.init, R.init, S.len);
    /* garbage in insignificant positions */
    gchoice g = {0, {0}};
    if (cc.garbage)
        for (int k = 0; k < A_COUNT; k++) {
            if (significant(call, k, rank, cc.root, cc.in_place) != 0) continue;
            int kind = pick(&rng, 2);
            if (!host_accepts_garbage(call, k, kind, ip_here)) kind ^= 1;
            if (!host_accepts_garbage(call, k, kind, ip_here)) continue;
            if (cc.systematic || pick(&rng, 4) != 0) {
                g.mask |= BIT(k);
                g.kind[k] = kind;
            }
        }
    char desc[1536];
    describe_case(desc, sizeof desc, &cc, &S, &R, &g, rank, size);
    if (g_verbose) fprintf(stderr, "[rank %d] %s\n", t_rank, desc);
    int rc[2];
    alarm((unsigned)g_timeout);
    for (int run = 0; run < 2; run++) {
        for (int k = 0; k < 2; k++) {
            side *s = k ? &R : &S;
            if (!s->used) continue;
            s->arena[run] = malloc(s->len);
            memcpy(s->arena[run], s->init, s->len);
            side_types(s, run, c->index & 1);
        }
        cargs a;
        assemble(&cc, &S, &R, run, rank, size, oracle_oop, &a);
        if (oracle_oop && run == 0) { /* out of place from the copy, with the receive layout */
            a.sbuf = side_buf(&S, 0);
            a.scounts = R.counts, a.sdispls = R.displs, a.stypes = S.types[0];
        }
        if (run == 1) apply_garbage(call, &g, &a);
        set_where("during the %s call of %s", run ? "nodecoll (MPI_)" : "oracle (PMPI_)", desc);
        rc[run] = invoke(call, &a, comm, run);
    }
    alarm(0);
    set_where("between cases (after %s)", desc);
    g_calls_run[call]++;
    T_CHECK(rc[0] == MPI_SUCCESS, "oracle returned %s (host quirk? the case is wrong): %s", err_text(rc[0]), desc);
    T_CHECK(rc[1] == MPI_SUCCESS, "nodecoll returned %s (class %d), the host MPI_SUCCESS: %s", err_text(rc[1]),
            error_class(rc[1]), desc);
    /* receive arenas byte for byte; send arenas untouched */
    if (R.used) {
        for (size_t i = 0; i < R.len; i++) {
            long at = (long)i - (long)R.off;
            if (at >= R.skip_lo && at < R.skip_hi) continue;
            if (R.arena[0][i] != R.arena[1][i]) {
                const char *where = at < R.lo ? "before the data" : at >= R.hi ? "after the data" : "in the data/gaps";
                t_fail("receive buffer differs at byte %ld from the buffer pointer (%s; footprint [%ld,%ld)): nodecoll "
                       "0x%02x, host 0x%02x: %s",
                       at, where, R.lo, R.hi, R.arena[1][i], R.arena[0][i], desc);
                break;
            }
        }
    }
    if (S.used && !oracle_oop && memcmp(S.arena[1], S.init, S.len))
        t_fail("nodecoll wrote into the send buffer: %s", desc);
    free_side(&S);
    free_side(&R);
}

/* ---- the generator ---------------------------------------------------------------------- */

static int draw_m(uint64_t *rng, int zero)
{
    if (zero) return 0;
    int r = pick(rng, 16);
    if (r < 3) return 0;
    if (r < 13) return 4 * pick(rng, 10);
    if (r < 15) return 1 + pick(rng, 13);          /* odd: only unit-1 shapes fit */
    return 4 * (1500 + pick(rng, 3000));         /* past the move slot: single-copy paths */
}

/* Order of the systematic flag combinations (IN_PLACE, garbage, zero): the known-bad
 * garbage-and-zero shapes come first, so a small sample has them. */
static const int sys_flags[8] = {6, 2, 3, 5, 0, 1, 4, 7};
enum { F_IN_PLACE = 1, F_GARBAGE = 2, F_ZERO = 4 };

static ccase gen_case(int index, int force_call)
{
    ccase c;
    memset(&c, 0, sizeof c);
    uint64_t rng = g_seed * 0x9e3779b97f4a7c15ULL + (uint64_t)index * 0x2545f4914f6cdd1dULL;
    c.index = index;
    c.common = t_rand(&rng);
    int flags;
    if (index < C_COUNT * 8) {
        c.systematic = 1;
        c.call = index % C_COUNT;
        flags = sys_flags[index / C_COUNT];
        c.bottom = pick(&rng, 6) == 0;
    } else {
        c.call = pick(&rng, C_COUNT);
        flags = (pick(&rng, 3) == 0 ? F_IN_PLACE : 0) | (pick(&rng, 2) ? F_GARBAGE : 0) | (pick(&rng, 8) == 0 ? F_ZERO : 0);
        c.bottom = pick(&rng, 4) == 0;
    }
    if (force_call >= 0) c.call = force_call;
    if (g_without & W_GARBAGE) flags &= ~F_GARBAGE;
    if (g_without & W_ZERO) flags &= ~F_ZERO;
    if (g_without & W_INPLACE) flags &= ~F_IN_PLACE;
    if (g_without & W_BOTTOM) c.bottom = 0;
    c.in_place = (flags & F_IN_PLACE) && calls[c.call].in_place != IP_NONE;
    c.garbage = !!(flags & F_GARBAGE);
    c.zero = !!(flags & F_ZERO);
    c.comm_kind = pick(&rng, 2) ? CM_WORLD_DUP : pick(&rng, CM_COUNT);
    if (g_without & W_COMMS) c.comm_kind = CM_WORLD_DUP;
    c.root = pick(&rng, MAXP * 3);
    c.base = move_bases[pick(&rng, NMOVE_BASES)];
    c.m_uni = draw_m(&rng, c.zero);
    for (int i = 0; i < MAXP; i++) c.mv[i] = draw_m(&rng, c.zero);
    if (!c.zero && pick(&rng, 3) == 0) /* mostly zero */
        for (int i = 0; i < MAXP; i++)
            if (pick(&rng, 3)) c.mv[i] = 0;
    for (int i = 0; i < MAXP; i++)
        for (int j = 0; j < MAXP; j++) {
            int v = draw_m(&rng, c.zero);
            c.M[i][j] = v > 400 && pick(&rng, 4) ? v % 64 * 4 : v;
        }
    if (c.in_place) /* in place, one vector describes both directions */
        for (int i = 0; i < MAXP; i++)
            for (int j = 0; j < i; j++) c.M[i][j] = c.M[j][i];
    /* reductions */
    int rt = pick(&rng, NRED_TYPES);
    unsigned mask = red_types[rt].ops;
    int cand[O_COUNT], n = 0;
    for (int o = 0; o < O_COUNT; o++)
        if (mask & BIT(o)) cand[n++] = o;
    c.op = cand[pick(&rng, n)];
    int dup = pick(&rng, 4) == 0, mix = pick(&rng, 2);
    c.red = rt;
    c.cnt = c.zero ? 0 : pick(&rng, 8) == 0 ? 1000 + pick(&rng, 9000) : pick(&rng, 40);
    for (int i = 0; i < MAXP; i++) c.rsc[i] = c.zero ? 0 : pick(&rng, 4) == 0 ? 0 : pick(&rng, 20);
    if (is_reduction(c.call)) {
        c.base = red_types[rt].base;
        c.bottom = 0; /* an absolute-address type is derived: no predefined op on it */
        /* A predefined op on a dup of a predefined type: only where the host takes it. */
        if (dup && host_dup_op_ok && red_types[rt].base == B_INT) {
            c.red = 100 + rt;
            c.mix_dup = mix;
        }
    }
    return c;
}

/* ---- host quirks ------------------------------------------------------------------------- */

static int host_accepts_garbage(int call, int a, int kind, int in_place_here)
{
    (void)kind, (void)in_place_here;
#if defined(MPICH_VERSION)
    /* MPICH 4.0 checks Exscan's recvbuf at rank 0 (MPI_ERR_BUFFER "Null buffer pointer")
     * although it is not significant there. */
    if (call == C_EXSCAN && a == A_RBUF) return 0;
#endif
    (void)call, (void)a;
    return 1;
}

static const char *g_call_list, *g_skip_list;

static int call_selected(const char *list, int call)
{
    if (!list) return 1;
    size_t n = strlen(calls[call].name);
    for (const char *p = list; *p;) {
        const char *q = strchr(p, ',');
        size_t len = q ? (size_t)(q - p) : strlen(p);
        if (len == n && !strncmp(p, calls[call].name, n)) return 1;
        p += len + (q ? 1 : 0);
    }
    return 0;
}

/* ---- MPI_ERRORS_RETURN: invalid calls ------------------------------------------------- */

enum { E_ROOT_HIGH, E_ROOT_NEG, E_COUNT_NEG, E_TYPE_NULL, E_OP_NULL, E_DUP_OP, E_KINDS };
static const char *e_names[E_KINDS] = {"root == size", "root == -3", "every count -1", "every datatype MPI_DATATYPE_NULL",
                                       "MPI_OP_NULL", "MPI_SUM on a dup of MPI_INT"};

/* Invalid calls the host itself does not survive or answers unevenly (one rank returns an
 * error while another waits in the call): not nodecoll's business, left out. */
static int host_error_case_ok(int call, int e)
{
#if defined(MPICH_VERSION)
    /* MPICH 4.0.2 aborts (yaksa "memcpy argument memory ranges overlap ... len_=-4") on a
     * reduction with a negative count instead of returning MPI_ERR_COUNT. */
    if (is_reduction(call) && e == E_COUNT_NEG) return 0;
#endif
    (void)call, (void)e;
    return 1;
}

static void run_errors(int comm_kind, int *next_index)
{
    MPI_Comm comm = comms[comm_kind];
    if (comm == MPI_COMM_NULL) return;
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int *sbuf = calloc((size_t)size * 8, sizeof(int)), *rbuf = calloc((size_t)size * 8, sizeof(int));
    int ones[MAXP], displs[MAXP], neg[MAXP], bdispls[MAXP];
    MPI_Datatype ints[MAXP], nulls[MAXP];
    for (int i = 0; i < MAXP; i++)
        ones[i] = 1, displs[i] = i, neg[i] = -1, bdispls[i] = i * (int)sizeof(int), ints[i] = MPI_INT,
        nulls[i] = MPI_DATATYPE_NULL;
    for (int call = C_BCAST; call < C_COUNT; call++)
        for (int e = 0; e < E_KINDS; e++) {
            if ((e == E_ROOT_HIGH || e == E_ROOT_NEG) && !is_rooted(call)) continue;
            if ((e == E_OP_NULL || e == E_DUP_OP) && !is_reduction(call)) continue;
            if (e == E_DUP_OP && host_dup_op_ok) continue; /* valid there: the cases cover it */
            if (!host_error_case_ok(call, e)) continue;
            cargs a = {sbuf, 1, MPI_INT, ones, call == C_ALLTOALLW ? bdispls : displs, ints,
                       rbuf, 1, MPI_INT, ones, call == C_ALLTOALLW ? bdispls : displs, ints, MPI_SUM, 0};
            switch (e) {
            case E_ROOT_HIGH: a.root = size; break;
            case E_ROOT_NEG: a.root = -3; break;
            case E_COUNT_NEG: a.scount = a.rcount = -1, a.scounts = a.rcounts = neg; break;
            case E_TYPE_NULL: a.stype = a.rtype = MPI_DATATYPE_NULL, a.stypes = a.rtypes = nulls; break;
            case E_OP_NULL: a.op = MPI_OP_NULL; break;
            default: a.rtype = shapes[B_INT][SH_DUP];
            }
            char what[256];
            snprintf(what, sizeof what, "MPI_ERRORS_RETURN on %s: %s with %s", comm_names[comm_kind], calls[call].name,
                     e_names[e]);
            set_where("during the oracle (PMPI_) call of %s", what);
            alarm((unsigned)g_timeout);
            int want = error_class(invoke(call, &a, comm, 0));
            set_where("during the nodecoll (MPI_) call of %s", what);
            int got = error_class(invoke(call, &a, comm, 1));
            alarm(0);
            if (want == MPI_SUCCESS) {
                if (g_verbose && t_rank == 0) printf("note: the host accepts %s\n", what);
                continue;
            }
            T_CHECK(got == want, "%s: nodecoll gives error class %d (%s), the host %d (%s)", what, got, err_text(got),
                    want, err_text(want));
            /* the next valid call works */
            if (!call_selected(g_call_list, call) || (g_skip_list && call_selected(g_skip_list, call))) continue;
            ccase c = gen_case((*next_index)++, call);
            c.comm_kind = comm_kind, c.garbage = c.zero = c.in_place = 0;
            run_case(&c);
        }
    free(sbuf);
    free(rbuf);
}

/* ---- main ---------------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    t_init(&argc, &argv);
    int cases = 150, only = -1, from = 0, positional = 0;
    const char *parts = "cases,errors";
    for (int i = 1; i < argc; i++) {
        if (!strncmp(argv[i], "--only=", 7)) only = atoi(argv[i] + 7);
        else if (!strncmp(argv[i], "--from=", 7)) from = atoi(argv[i] + 7);
        else if (!strncmp(argv[i], "--calls=", 8)) g_call_list = argv[i] + 8;
        else if (!strncmp(argv[i], "--skip-calls=", 13)) g_skip_list = argv[i] + 13;
        else if (!strncmp(argv[i], "--parts=", 8)) parts = argv[i] + 8;
        else if (!strncmp(argv[i], "--timeout=", 10)) g_timeout = atoi(argv[i] + 10);
        else if (!strcmp(argv[i], "--verbose")) g_verbose = 1;
        else if (!strcmp(argv[i], "--no-derived")) g_no_derived = 1;
        else if (!strncmp(argv[i], "--without=", 10)) {
            const char *w = argv[i] + 10;
            g_without = (strstr(w, "garbage") ? W_GARBAGE : 0) | (strstr(w, "zero") ? W_ZERO : 0) |
                        (strstr(w, "inplace") ? W_INPLACE : 0) | (strstr(w, "bottom") ? W_BOTTOM : 0) |
                        (strstr(w, "comms") ? W_COMMS : 0) | (strstr(w, "null") ? W_NULL : 0);
            if (strstr(w, "types")) g_no_derived = 1;
        }
        else if (!strncmp(argv[i], "--shapes=", 9)) g_shape_mask = (unsigned)strtoul(argv[i] + 9, NULL, 0);
        else if (!strcmp(argv[i], "--plain-displs")) g_plain_displs = 1;
        else if (positional++ == 0) cases = atoi(argv[i]);
        else g_seed = strtoull(argv[i], NULL, 0);
    }
    cases = t_scale(cases);
    const char *scale = getenv("NODECOLL_TEST_SCALE");
    if (scale && atof(scale) < 1.0 && g_timeout == 10) g_timeout = 60;
    if (t_size > MAXP) {
        if (t_rank == 0) printf("test_conform: at most %d ranks\n", MAXP);
        MPI_Finalize();
        return 0;
    }
    make_shapes();
    MPI_Op o[O_COUNT] = {MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX, MPI_LAND, MPI_LOR, MPI_LXOR, MPI_BAND, MPI_BOR, MPI_BXOR,
                         MPI_MINLOC, MPI_MAXLOC};
    memcpy(ops, o, sizeof ops);
    for (int i = 0; i < MAXP; i++) garbage_types[i] = MPI_DATATYPE_NULL;
    make_comms();
    {   /* does the host take MPI_SUM on a dup of MPI_INT? (the same answer on every rank) */
        int x = 1, y = 0;
        int err = PMPI_Allreduce(&x, &y, 1, shapes[B_INT][SH_DUP], MPI_SUM, comms[CM_WORLD_DUP]);
        host_dup_op_ok = err == MPI_SUCCESS && y == t_size;
        if (t_rank == 0)
            printf("test_conform: %s, host %s MPI_SUM on MPI_Type_dup(MPI_INT); %d cases from seed %llu\n",
                   t_mpi_name(), host_dup_op_ok ? "accepts" : "rejects", cases, (unsigned long long)g_seed);
    }
    install_watchdog();
    int next_index = 1000000;
    if (strstr(parts, "cases"))
        for (int k = from; k < cases; k++) {
            if (only >= 0 && k != only) continue;
            ccase c = gen_case(k, -1);
            if (!call_selected(g_call_list, c.call) || (g_skip_list && call_selected(g_skip_list, c.call))) continue;
            run_case(&c);
        }
    if (strstr(parts, "errors") && only < 0) {
        run_errors(CM_WORLD_DUP, &next_index);
        run_errors(CM_SPLIT_REV, &next_index);
    }
    /* The accelerated path ran (not only the host's). */
    const char *enable = getenv("NODECOLL_ENABLE");
    /* (Without single-copy, the data-movement calls go to the host by design.) */
    const char *cma = getenv("NODECOLL_CMA");
    int no_cma = cma && !strcmp(cma, "off");
    if (t_size > 1 && !(enable && !strcmp(enable, "0")) && only < 0)
        for (int call = 0; call < C_COUNT; call++) {
            if (g_calls_run[call] < 4 || (no_cma && call >= C_GATHER)) continue;
            uint64_t all = nodecoll_stat_calls(calls[call].name, "*"), host = nodecoll_stat_calls(calls[call].name, "pmpi:*");
            T_CHECK(all > host, "%s: %d cases, nodecoll never ran its own path (%llu calls, all to the host)",
                    calls[call].name, g_calls_run[call], (unsigned long long)all);
        }
    set_where("in MPI_Finalize");
    for (int k = 0; k < CM_COUNT; k++)
        if (comms[k] != MPI_COMM_NULL) MPI_Comm_free(&comms[k]);
    free_shapes();
    return t_finish("test_conform");
}
