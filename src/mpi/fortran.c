/* nodecoll's Fortran entry points, generated from fortran_table.h (which says why they exist
 * and which names each host gets).  Every one converts its Fortran arguments the way the
 * host's own binding does and calls nodecoll's C entry point; nodecoll then runs the call or
 * hands it to the host's PMPI_ function, which is what the binding would have called. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "request.h"
#include "fortran_table.h"
#include "neighbor_lists.h"
#include "../core/fatal.h"

#if defined(NODECOLL_FORTRAN_ENTRY_POINTS) && (defined(OPEN_MPI) || defined(MPICH))

/* Counts and displacements are passed on as the Fortran arrays themselves. */
_Static_assert(sizeof(MPI_Fint) == sizeof(int), "nodecoll's Fortran entry points need MPI_Fint to be an int");
/* A Fortran status (mpif.h's INTEGER array, mpi_f08's TYPE(MPI_Status)) takes this many
 * INTEGERs on both hosts: MPI_STATUS_SIZE (Open MPI 6, MPICH 5). */
#define NC_F_STATUS_INTS (sizeof(MPI_Status) / sizeof(MPI_Fint))

/* ---- the host's sentinels ------------------------------------------------------------------
 * The Fortran MPI_IN_PLACE, MPI_BOTTOM, MPI_STATUS(ES)_IGNORE are variables of the host (in
 * a common block or a bind(C) variable the program's executable may hold itself), which
 * its bindings recognise by address.  Their addresses come from the dynamic linker, as the
 * bindings' own references to them do, under every name the host's binding compares with. */
enum { NC_F_IN_PLACE, NC_F_BOTTOM, NC_F_STATUS_IGNORE, NC_F_STATUSES_IGNORE, NC_F_SENTINELS };
enum { NC_F_SPELLINGS = 4 };
#if defined(OPEN_MPI)
#define NC_F_SPELL(base, BASE) {base, base "_", base "__", BASE}
static const char *const sentinel_names[NC_F_SENTINELS][NC_F_SPELLINGS] = {
    NC_F_SPELL("mpi_fortran_in_place", "MPI_FORTRAN_IN_PLACE"),
    NC_F_SPELL("mpi_fortran_bottom", "MPI_FORTRAN_BOTTOM"),
    NC_F_SPELL("mpi_fortran_status_ignore", "MPI_FORTRAN_STATUS_IGNORE"),
    NC_F_SPELL("mpi_fortran_statuses_ignore", "MPI_FORTRAN_STATUSES_IGNORE"),
};
#else /* MPICH's mpi_f08 */
static const char *const sentinel_names[NC_F_SENTINELS][NC_F_SPELLINGS] = {
    {"MPIR_F08_MPI_IN_PLACE"}, {"MPIR_F08_MPI_BOTTOM"}, {"MPIR_F08_MPI_STATUS_IGNORE_OBJ"},
    {"MPIR_F08_MPI_STATUSES_IGNORE_OBJ"}};
#endif
static const void *sentinels[NC_F_SENTINELS][NC_F_SPELLINGS];
static pthread_once_t sentinels_once = PTHREAD_ONCE_INIT;

static void find_sentinels(void)
{
    for (int s = 0; s < NC_F_SENTINELS; s++)
        for (int k = 0; k < NC_F_SPELLINGS; k++)
            if (sentinel_names[s][k]) sentinels[s][k] = dlsym(RTLD_DEFAULT, sentinel_names[s][k]);
}

static int is_sentinel(const void *p, int which)
{
    pthread_once(&sentinels_once, find_sentinels);
    for (int k = 0; k < NC_F_SPELLINGS; k++)
        if (sentinels[which][k] && p == sentinels[which][k]) return 1;
    return 0;
}

/* (entry points with buffers exist under Open MPI only: fortran_table.h) */
#if defined(OPEN_MPI)
#define NC_F_WITH_BUFFERS 1
#endif

#ifdef NC_F_WITH_BUFFERS
static void *f_buffer(void *b) { return is_sentinel(b, NC_F_BOTTOM) ? MPI_BOTTOM : b; }
static void *f_in_place_buffer(void *b) { return is_sentinel(b, NC_F_IN_PLACE) ? MPI_IN_PLACE : f_buffer(b); }
#endif

/* ---- LOGICAL results ------------------------------------------------------------------------
 * A flag is returned as the host's binding writes .TRUE. and .FALSE.: learnt once from the
 * host's own Fortran MPI_INITIALIZED (true once MPI runs, which it does when a flag is
 * returned) and MPI_FINALIZED (false until then). */
#if defined(OPEN_MPI)
#define NC_F_HOST_INITIALIZED "mpi_initialized_"
#define NC_F_HOST_FINALIZED "mpi_finalized_"
#else
#define NC_F_HOST_INITIALIZED "mpi_initialized_f08_"
#define NC_F_HOST_FINALIZED "mpi_finalized_f08_"
#endif
static MPI_Fint logical_true = 1, logical_false = 0;
static pthread_once_t logicals_once = PTHREAD_ONCE_INIT;

static void find_logicals(void)
{
    typedef void flag_fn(MPI_Fint *flag, MPI_Fint *ierr);
    flag_fn *initialized = (flag_fn *)(uintptr_t)dlsym(RTLD_NEXT, NC_F_HOST_INITIALIZED);
    flag_fn *finalized = (flag_fn *)(uintptr_t)dlsym(RTLD_NEXT, NC_F_HOST_FINALIZED);
    MPI_Fint t = 1, f = 0, err = MPI_SUCCESS;
    if (initialized && finalized) {
        initialized(&t, &err);
        if (err == MPI_SUCCESS) finalized(&f, &err);
        if (err == MPI_SUCCESS && t != f) logical_true = t, logical_false = f;
    }
}

static MPI_Fint f_logical(int c)
{
    pthread_once(&logicals_once, find_logicals);
    return c ? logical_true : logical_false;
}

/* ---- statuses -------------------------------------------------------------------------------- */

/* Where the C call writes a status: nowhere for the Fortran MPI_STATUS_IGNORE. */
static MPI_Status *f_status(MPI_Fint *f, MPI_Status *c)
{
    if (is_sentinel(f, NC_F_STATUS_IGNORE)) return MPI_STATUS_IGNORE;
    memset(c, 0, sizeof *c); /* (a probe that finds nothing leaves it alone) */
    return c;
}

static void f_status_out(MPI_Fint *f, const MPI_Status *c)
{
    if (!is_sentinel(f, NC_F_STATUS_IGNORE)) PMPI_Status_c2f(c, f);
}

/* The C statuses of an array call, or MPI_STATUSES_IGNORE; freed by statuses_out. */
static MPI_Status *f_statuses(MPI_Fint *f, int count)
{
    if (is_sentinel(f, NC_F_STATUSES_IGNORE)) return MPI_STATUSES_IGNORE;
    MPI_Status *c = nc_alloc_or_die(sizeof(MPI_Status) * (size_t)(count > 0 ? count : 1));
    memset(c, 0, sizeof(MPI_Status) * (size_t)(count > 0 ? count : 1));
    return c;
}

/* Statuses [0, n) back into Fortran (those entries the call set), then frees c. */
static void f_statuses_out(MPI_Fint *f, MPI_Status *c, int n)
{
    if (c == MPI_STATUSES_IGNORE) return;
    for (int i = 0; i < n; i++) PMPI_Status_c2f(&c[i], f + (size_t)i * NC_F_STATUS_INTS);
    free(c);
}

/* ---- arrays of handles ------------------------------------------------------------------- */

#ifdef NC_F_WITH_BUFFERS
/* Which blocks a type array describes: one per rank of comm (of its remote group if it is an
 * intercommunicator: Alltoallw), or one per out- or in-edge of its topology
 * (Neighbor_alltoallw). */
enum { NC_F_RANKS, NC_F_OUT_EDGES, NC_F_IN_EDGES };

/* How many blocks of `which` comm has, or -1 when it cannot tell (the call reports it). */
static int f_blocks(MPI_Comm c, int which)
{
    int size = -1, inter = 0, in = 0, out = 0;
    if (which != NC_F_RANKS) {
        if (nc_mpi_neighbor_degrees(c, &in, &out, NULL) == MPI_UNDEFINED) return -1;
        return which == NC_F_OUT_EDGES ? out : in;
    }
    if (PMPI_Comm_test_inter(c, &inter) != MPI_SUCCESS ||
        (inter ? PMPI_Comm_remote_size(c, &size) : PMPI_Comm_size(c, &size)) != MPI_SUCCESS)
        return -1;
    return size;
}

/* (Neighbor_)Alltoallw's datatypes as C handles, one per block of `which`; NULL for the send
 * side of a call in place, whose types MPI ignores, and where comm cannot tell. */
static MPI_Datatype *f_types(const MPI_Fint *types, const MPI_Fint *comm, const void *sendbuf, int which)
{
    if (sendbuf && is_sentinel(sendbuf, NC_F_IN_PLACE)) return NULL;
    MPI_Comm c = PMPI_Comm_f2c(*comm);
#if defined(OPEN_MPI)
    if (c == NULL) return NULL; /* (an invalid handle: the call reports it) */
#endif
    int size = c == MPI_COMM_NULL ? -1 : f_blocks(c, which);
    if (size < 0) return NULL;
    MPI_Datatype *out = nc_alloc_or_die(sizeof(MPI_Datatype) * (size_t)(size > 0 ? size : 1));
    for (int i = 0; i < size; i++) out[i] = PMPI_Type_f2c(types[i]);
    return out;
}
#endif

/* ---- Alltoallw's datatype arrays, when the host runs the operation ------------------------
 * A nonblocking or persistent Alltoallw that nodecoll hands to the host (one rank, an
 * intercommunicator, a communicator whose first call is nonblocking, NODECOLL_ENABLE=0)
 * reads its datatype arrays until it completes, or until it is freed if persistent, and the
 * C arrays converted here are all it has.  They are kept with the request's handle and freed
 * by the Fortran completion call that makes it MPI_REQUEST_NULL.  (Open MPI 4.1's own binding
 * frees them when the call returns, and its operation then reads freed memory.)  nodecoll's
 * own requests copy the arrays (wrap_move.c): theirs are freed at once. */
#ifdef NC_F_WITH_BUFFERS
typedef struct kept_types {
    MPI_Request request;
    MPI_Datatype *types;
    struct kept_types *next;
} kept_types;
static kept_types *kept;
static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int kept_count; /* (completion calls look only when some are kept) */

/* After the call: keeps types for *request (a successful nonblocking or persistent call the
 * host runs), else frees them. */
static void f_types_after(int err, const MPI_Request *request, MPI_Datatype *types)
{
    if (!types) return;
    if (err != MPI_SUCCESS || !request || *request == MPI_REQUEST_NULL || nc_mpi_request_is_nodecoll(*request)) {
        free(types);
        return;
    }
    kept_types *k = nc_alloc_or_die(sizeof *k);
    pthread_mutex_lock(&kept_lock);
    *k = (kept_types){*request, types, kept};
    kept = k;
    atomic_fetch_add_explicit(&kept_count, 1, memory_order_relaxed);
    pthread_mutex_unlock(&kept_lock);
}

static int is_kept(MPI_Request request)
{
    int found = 0;
    pthread_mutex_lock(&kept_lock);
    for (kept_types *k = kept; k && !found; k = k->next) found = k->request == request;
    pthread_mutex_unlock(&kept_lock);
    return found;
}

/* A completion call made `before` into `after`: once a request is gone, what was kept for it
 * is freed, unless the operation may still run (`idle` 0: an active request freed, which
 * MPI makes erroneous for collectives; its arrays are then left). */
static void f_kept_release(MPI_Request before, MPI_Request after, int idle)
{
    if (!atomic_load_explicit(&kept_count, memory_order_relaxed) || before == MPI_REQUEST_NULL ||
        after != MPI_REQUEST_NULL)
        return;
    pthread_mutex_lock(&kept_lock);
    for (kept_types **at = &kept; *at;) {
        kept_types *k = *at;
        if (k->request != before) {
            at = &k->next;
            continue;
        }
        *at = k->next;
        if (idle) free(k->types);
        free(k);
        atomic_fetch_sub_explicit(&kept_count, 1, memory_order_relaxed);
    }
    pthread_mutex_unlock(&kept_lock);
}

/* Before MPI_Request_free: whether the operation of a request kept for is over. */
static int f_request_idle(MPI_Request request)
{
    int flag = 1;
    if (atomic_load_explicit(&kept_count, memory_order_relaxed) && is_kept(request))
        PMPI_Request_get_status(request, &flag, MPI_STATUS_IGNORE);
    return flag;
}
#else
static void f_kept_release(MPI_Request before, MPI_Request after, int idle) {}
static int f_request_idle(MPI_Request request) { return 1; }
#endif

/* The C handles of a Fortran array of requests, followed by a copy (what they were before
 * the call: f_requests_out). */
static MPI_Request *f_requests(const MPI_Fint *f, int count)
{
    MPI_Request *c = nc_alloc_or_die(sizeof(MPI_Request) * 2 * (size_t)(count > 0 ? count : 1));
    for (int i = 0; i < count; i++) c[i] = c[count + i] = PMPI_Request_f2c(f[i]);
    return c;
}

/* The handles back into Fortran (completed ones are MPI_REQUEST_NULL now), then frees c. */
static void f_requests_out(MPI_Fint *f, MPI_Request *c, int count)
{
    for (int i = 0; i < count; i++) {
        f_kept_release(c[count + i], c[i], 1);
        f[i] = PMPI_Request_c2f(c[i]);
    }
    free(c);
}

/* ---- generated entry points ------------------------------------------------------------------
 * For each kind of argument (fortran_table.h): its Fortran parameter, what it needs
 * declared before the call, the C argument, and what goes back after a successful call. */
#define NC_F_PARAM_BUF(n) void *n
#define NC_F_PARAM_IPBUF(n) void *n
#define NC_F_PARAM_DEFAULT(n) MPI_Fint *n
#define NC_F_PARAM_INT NC_F_PARAM_DEFAULT
#define NC_F_PARAM_INTS NC_F_PARAM_DEFAULT
#define NC_F_PARAM_TYPE NC_F_PARAM_DEFAULT
#define NC_F_PARAM_OP NC_F_PARAM_DEFAULT
#define NC_F_PARAM_COMM NC_F_PARAM_DEFAULT
#define NC_F_PARAM_INFO NC_F_PARAM_DEFAULT
#define NC_F_PARAM_STYPES NC_F_PARAM_DEFAULT
#define NC_F_PARAM_RTYPES NC_F_PARAM_DEFAULT
#define NC_F_PARAM_OUT_TYPES NC_F_PARAM_DEFAULT
#define NC_F_PARAM_IN_TYPES NC_F_PARAM_DEFAULT
#define NC_F_PARAM_AINTS(n) MPI_Aint *n
#define NC_F_PARAM_REQUEST NC_F_PARAM_DEFAULT
#define NC_F_PARAM_REQUEST_INOUT NC_F_PARAM_DEFAULT
#define NC_F_PARAM_REQUEST_IN NC_F_PARAM_DEFAULT
#define NC_F_PARAM_REQUEST_FREED NC_F_PARAM_DEFAULT
#define NC_F_PARAM_STATUS NC_F_PARAM_DEFAULT
#define NC_F_PARAM_FLAG NC_F_PARAM_DEFAULT
#define NC_F_PARAM_MESSAGE NC_F_PARAM_DEFAULT
#define NC_F_PARAM_MESSAGE_INOUT NC_F_PARAM_DEFAULT
#define NC_F_PARAM_TYPE_INOUT NC_F_PARAM_DEFAULT
#define NC_F_PARAM_OP_INOUT NC_F_PARAM_DEFAULT

#define NC_F_DECL_BUF(n)
#define NC_F_DECL_IPBUF(n)
#define NC_F_DECL_INT(n)
#define NC_F_DECL_INTS(n)
#define NC_F_DECL_TYPE(n)
#define NC_F_DECL_OP(n)
#define NC_F_DECL_COMM(n)
#define NC_F_DECL_INFO(n)
#define NC_F_DECL_AINTS(n)
#define NC_F_DECL_STYPES(n) MPI_Datatype *c_##n = f_types(n, comm, sendbuf, NC_F_RANKS);
#define NC_F_DECL_RTYPES(n) MPI_Datatype *c_##n = f_types(n, comm, NULL, NC_F_RANKS);
#define NC_F_DECL_OUT_TYPES(n) MPI_Datatype *c_##n = f_types(n, comm, NULL, NC_F_OUT_EDGES);
#define NC_F_DECL_IN_TYPES(n) MPI_Datatype *c_##n = f_types(n, comm, NULL, NC_F_IN_EDGES);
#define NC_F_DECL_REQUEST(n) MPI_Request c_##n = MPI_REQUEST_NULL; f_request = &c_##n;
#define NC_F_DECL_REQUEST_INOUT(n) MPI_Request c_##n = PMPI_Request_f2c(*n), before_##n = c_##n;
#define NC_F_DECL_REQUEST_FREED(n) NC_F_DECL_REQUEST_INOUT(n) int idle_##n = f_request_idle(c_##n);
#define NC_F_DECL_REQUEST_IN(n)
#define NC_F_DECL_STATUS(n) MPI_Status c_##n;
#define NC_F_DECL_FLAG(n) int c_##n = 0;
#define NC_F_DECL_MESSAGE(n) MPI_Message c_##n = MPI_MESSAGE_NULL;
#define NC_F_DECL_MESSAGE_INOUT(n) MPI_Message c_##n = PMPI_Message_f2c(*n);
#define NC_F_DECL_TYPE_INOUT(n) MPI_Datatype c_##n = PMPI_Type_f2c(*n);
#define NC_F_DECL_OP_INOUT(n) MPI_Op c_##n = PMPI_Op_f2c(*n);

#define NC_F_ARG_BUF(n) f_buffer(n)
#define NC_F_ARG_IPBUF(n) f_in_place_buffer(n)
#define NC_F_ARG_INT(n) (int)*n
#define NC_F_ARG_INTS(n) (int *)n
#define NC_F_ARG_TYPE(n) PMPI_Type_f2c(*n)
#define NC_F_ARG_OP(n) PMPI_Op_f2c(*n)
#define NC_F_ARG_COMM(n) PMPI_Comm_f2c(*n)
#define NC_F_ARG_INFO(n) PMPI_Info_f2c(*n)
#define NC_F_ARG_AINTS(n) n
#define NC_F_ARG_STYPES(n) c_##n
#define NC_F_ARG_RTYPES(n) c_##n
#define NC_F_ARG_OUT_TYPES(n) c_##n
#define NC_F_ARG_IN_TYPES(n) c_##n
#define NC_F_ARG_REQUEST(n) &c_##n
#define NC_F_ARG_REQUEST_INOUT(n) &c_##n
#define NC_F_ARG_REQUEST_IN(n) PMPI_Request_f2c(*n)
#define NC_F_ARG_REQUEST_FREED(n) &c_##n
#define NC_F_ARG_STATUS(n) f_status(n, &c_##n)
#define NC_F_ARG_FLAG(n) &c_##n
#define NC_F_ARG_MESSAGE(n) &c_##n
#define NC_F_ARG_MESSAGE_INOUT(n) &c_##n
#define NC_F_ARG_TYPE_INOUT(n) &c_##n
#define NC_F_ARG_OP_INOUT(n) &c_##n

#define NC_F_AFTER_BUF(n)
#define NC_F_AFTER_IPBUF(n)
#define NC_F_AFTER_INT(n)
#define NC_F_AFTER_INTS(n)
#define NC_F_AFTER_TYPE(n)
#define NC_F_AFTER_OP(n)
#define NC_F_AFTER_COMM(n)
#define NC_F_AFTER_INFO(n)
#define NC_F_AFTER_AINTS(n)
#define NC_F_AFTER_STYPES(n) f_types_after(err, f_request, c_##n);
#define NC_F_AFTER_RTYPES NC_F_AFTER_STYPES
#define NC_F_AFTER_OUT_TYPES NC_F_AFTER_STYPES
#define NC_F_AFTER_IN_TYPES NC_F_AFTER_STYPES
#define NC_F_AFTER_REQUEST(n) if (err == MPI_SUCCESS) *n = PMPI_Request_c2f(c_##n);
#define NC_F_AFTER_REQUEST_INOUT(n) NC_F_AFTER_REQUEST(n) f_kept_release(before_##n, c_##n, 1);
#define NC_F_AFTER_REQUEST_FREED(n) NC_F_AFTER_REQUEST(n) f_kept_release(before_##n, c_##n, idle_##n);
#define NC_F_AFTER_REQUEST_IN(n)
#define NC_F_AFTER_STATUS(n) if (err == MPI_SUCCESS) f_status_out(n, &c_##n);
#define NC_F_AFTER_FLAG(n) if (err == MPI_SUCCESS) *n = f_logical(c_##n);
#define NC_F_AFTER_MESSAGE(n) if (err == MPI_SUCCESS) *n = PMPI_Message_c2f(c_##n);
#define NC_F_AFTER_MESSAGE_INOUT NC_F_AFTER_MESSAGE
#define NC_F_AFTER_TYPE_INOUT(n) if (err == MPI_SUCCESS) *n = PMPI_Type_c2f(c_##n);
#define NC_F_AFTER_OP_INOUT(n) if (err == MPI_SUCCESS) *n = PMPI_Op_c2f(c_##n);

/* A sequence (kind, name)(kind, name)... walked once per phase: each step expands one
 * element and names the other step macro, which the next element calls; the last name left
 * is pasted with _END into nothing. */
#define NC_F_END(...) NC_F_END_(__VA_ARGS__)
#define NC_F_END_(...) __VA_ARGS__##_END
#define NC_F_PARAMS(seq) NC_F_END(NC_F_PARAM_A seq)
#define NC_F_PARAM_A(kind, n) NC_F_PARAM_##kind(n), NC_F_PARAM_B
#define NC_F_PARAM_B(kind, n) NC_F_PARAM_##kind(n), NC_F_PARAM_A
#define NC_F_PARAM_A_END
#define NC_F_PARAM_B_END
#define NC_F_DECLS(seq) NC_F_END(NC_F_DECL_A seq)
#define NC_F_DECL_A(kind, n) NC_F_DECL_##kind(n) NC_F_DECL_B
#define NC_F_DECL_B(kind, n) NC_F_DECL_##kind(n) NC_F_DECL_A
#define NC_F_DECL_A_END
#define NC_F_DECL_B_END
#define NC_F_ARGS(seq) NC_F_END(NC_F_ARG_A seq) /* (each with a comma before it) */
#define NC_F_ARG_A(kind, n) , NC_F_ARG_##kind(n) NC_F_ARG_B
#define NC_F_ARG_B(kind, n) , NC_F_ARG_##kind(n) NC_F_ARG_A
#define NC_F_ARG_A_END
#define NC_F_ARG_B_END
#define NC_F_AFTERS(seq) NC_F_END(NC_F_AFTER_A seq)
#define NC_F_AFTER_A(kind, n) NC_F_AFTER_##kind(n) NC_F_AFTER_B
#define NC_F_AFTER_B(kind, n) NC_F_AFTER_##kind(n) NC_F_AFTER_A
#define NC_F_AFTER_A_END
#define NC_F_AFTER_B_END
#define NC_F_APPLY(...) NC_F_APPLY_(__VA_ARGS__)
#define NC_F_APPLY_(fn, ...) fn(__VA_ARGS__)

/* The entry point `fn`, calling C function `cfn` with the arguments of `seq`. */
#define NC_F_ENTRY(fn, cfn, seq)                                                                 \
    static void fn(NC_F_PARAMS(seq) MPI_Fint *ierr)                                              \
    {                                                                                            \
        MPI_Request *f_request = NULL; /* (the request a nonblocking or persistent call makes) */ \
        (void)f_request;                                                                         \
        NC_F_DECLS(seq)                                                                          \
        int err = NC_F_APPLY(cfn NC_F_ARGS(seq));                                                \
        NC_F_AFTERS(seq)                                                                         \
        if (ierr) *ierr = (MPI_Fint)err;                                                         \
    }

/* Its names, mpi_<lower> in each spelling of the host (see fortran_table.h); under MPICH
 * only the mpi_f08 names of the entries without buffers. */
#define NC_F_ALIAS(fn, name) extern __typeof__(fn) name __attribute__((alias(#fn), visibility("default")));
#define NC_F_NAMES(fn, lower, UPPER) NC_F_NAMES_(fn, lower, UPPER) /* (lower and UPPER expanded first) */
#if defined(OPEN_MPI)
#define NC_F_NAMES_(fn, lower, UPPER)                                                            \
    NC_F_ALIAS(fn, lower) NC_F_ALIAS(fn, lower##_) NC_F_ALIAS(fn, lower##__) NC_F_ALIAS(fn, UPPER) \
    NC_F_ALIAS(fn, lower##_f08_)
#define NC_F_INIT_NAME(lower) mpix_##lower##_init /* (Open MPI 4.1's persistent collectives) */
#define NC_F_INIT_UPPER(UPPER) MPIX_##UPPER##_INIT
#define NC_F_WANTED_BUF(...) __VA_ARGS__ /* (NC_F_WITH_BUFFERS) */
#else
#define NC_F_NAMES_(fn, lower, UPPER) NC_F_ALIAS(fn, lower##_f08_)
#define NC_F_INIT_NAME(lower) mpi_##lower##_init
#define NC_F_INIT_UPPER(UPPER) MPI_##UPPER##_INIT
#define NC_F_WANTED_BUF(...)
#endif
#define NC_F_WANTED_NOBUF(...) __VA_ARGS__

#define NC_F_ONE(Name, lower, UPPER, seq)                                                        \
    NC_F_ENTRY(nc_f_##lower, MPI_##Name, seq)                                                    \
    NC_F_NAMES(nc_f_##lower, mpi_##lower, MPI_##UPPER)
#ifdef NC_PERSISTENT_COLLECTIVES
#define NC_F_PERSISTENT(Name, lower, UPPER, seq)                                                 \
    NC_F_ENTRY(nc_f_##lower##_init, NC_INIT(Name), seq(INFO, info)(REQUEST, request))           \
    NC_F_NAMES(nc_f_##lower##_init, NC_F_INIT_NAME(lower), NC_F_INIT_UPPER(UPPER))
#else
#define NC_F_PERSISTENT(Name, lower, UPPER, seq)
#endif
#ifdef NC_NEIGHBOR_PERSISTENT_COLLECTIVES
#define NC_F_NEIGHBOR_PERSISTENT NC_F_PERSISTENT
#else
#define NC_F_NEIGHBOR_PERSISTENT(Name, lower, UPPER, seq)
#endif
#define NC_F_COLL(Name, lower, UPPER, seq) NC_F_FORMS(NC_F_PERSISTENT, Name, lower, UPPER, seq)
#define NC_F_NCOLL(Name, lower, UPPER, seq) NC_F_FORMS(NC_F_NEIGHBOR_PERSISTENT, Name, lower, UPPER, seq)
#define NC_F_FORMS(persistent, Name, lower, UPPER, seq)                                          \
    NC_F_ONE(Name, lower, UPPER, seq)                                                            \
    NC_F_ENTRY(nc_f_i##lower, MPI_I##lower, seq(REQUEST, request))                               \
    NC_F_NAMES(nc_f_i##lower, mpi_i##lower, MPI_I##UPPER)                                      \
    persistent(Name, lower, UPPER, seq)
#define NC_F_GENERATE(forms, buffers, Name, lower, UPPER, seq) \
    NC_F_WANTED_##buffers(NC_F_##forms(Name, lower, UPPER, seq))

NC_FORTRAN_TABLE(NC_F_GENERATE)

/* ---- completion calls on arrays of requests ---------------------------------------------------
 * As the host's bindings, but the handles and statuses go back also after MPI_ERR_IN_STATUS
 * (Open MPI 4.1's own write nothing back then, leaving freed requests' handles behind). */

static int array_results(int err) { return err == MPI_SUCCESS || err == MPI_ERR_IN_STATUS; }

/* MPICH's MPI_STATUSES_IGNORE is the address 1, which GCC takes for an empty array of
 * statuses the calls below would overflow. */
#pragma GCC diagnostic ignored "-Wstringop-overflow"

/* A Fortran index (from 1) for a C one; MPI_UNDEFINED stays. */
static MPI_Fint f_index(int i) { return i == MPI_UNDEFINED ? MPI_UNDEFINED : i + 1; }

static void nc_f_waitall(MPI_Fint *count, MPI_Fint *requests, MPI_Fint *statuses, MPI_Fint *ierr)
{
    int n = (int)*count;
    MPI_Request *c = f_requests(requests, n);
    MPI_Status *st = f_statuses(statuses, n);
    int err = MPI_Waitall(n, c, st);
    if (array_results(err)) f_requests_out(requests, c, n);
    else free(c);
    f_statuses_out(statuses, st, array_results(err) ? n : 0);
    if (ierr) *ierr = (MPI_Fint)err;
}

static void nc_f_testall(MPI_Fint *count, MPI_Fint *requests, MPI_Fint *flag, MPI_Fint *statuses, MPI_Fint *ierr)
{
    int n = (int)*count, c_flag = 0;
    MPI_Request *c = f_requests(requests, n);
    MPI_Status *st = f_statuses(statuses, n);
    int err = MPI_Testall(n, c, &c_flag, st);
    if (array_results(err)) f_requests_out(requests, c, n);
    else free(c);
    f_statuses_out(statuses, st, array_results(err) && c_flag ? n : 0);
    if (array_results(err)) *flag = f_logical(c_flag);
    if (ierr) *ierr = (MPI_Fint)err;
}

/* Waitany and Testany (flag NULL for Waitany). */
static void any(MPI_Fint *count, MPI_Fint *requests, MPI_Fint *index, MPI_Fint *flag, MPI_Fint *status,
                MPI_Fint *ierr)
{
    int n = (int)*count, c_index = MPI_UNDEFINED, c_flag = 0;
    MPI_Status c_status;
    MPI_Request *c = f_requests(requests, n);
    MPI_Status *st = f_status(status, &c_status);
    int err = flag ? MPI_Testany(n, c, &c_index, &c_flag, st) : MPI_Waitany(n, c, &c_index, st);
    if (err == MPI_SUCCESS) f_requests_out(requests, c, n);
    else free(c);
    if (err == MPI_SUCCESS) {
        *index = f_index(c_index);
        if (flag) *flag = f_logical(c_flag);
        f_status_out(status, &c_status);
    }
    if (ierr) *ierr = (MPI_Fint)err;
}

static void nc_f_waitany(MPI_Fint *count, MPI_Fint *requests, MPI_Fint *index, MPI_Fint *status, MPI_Fint *ierr)
{
    any(count, requests, index, NULL, status, ierr);
}

static void nc_f_testany(MPI_Fint *count, MPI_Fint *requests, MPI_Fint *index, MPI_Fint *flag, MPI_Fint *status,
                         MPI_Fint *ierr)
{
    any(count, requests, index, flag, status, ierr);
}

/* Waitsome and Testsome. */
static void some(int wait, MPI_Fint *incount, MPI_Fint *requests, MPI_Fint *outcount, MPI_Fint *indices,
                 MPI_Fint *statuses, MPI_Fint *ierr)
{
    int n = (int)*incount, out = MPI_UNDEFINED;
    MPI_Request *c = f_requests(requests, n);
    MPI_Status *st = f_statuses(statuses, n);
    int err = wait ? MPI_Waitsome(n, c, &out, (int *)indices, st) : MPI_Testsome(n, c, &out, (int *)indices, st);
    int done = array_results(err) && out != MPI_UNDEFINED ? out : 0;
    if (array_results(err)) f_requests_out(requests, c, n);
    else free(c);
    f_statuses_out(statuses, st, done);
    if (array_results(err)) {
        *outcount = out;
        for (int i = 0; i < done; i++) indices[i] = f_index(indices[i]);
    }
    if (ierr) *ierr = (MPI_Fint)err;
}

static void nc_f_waitsome(MPI_Fint *incount, MPI_Fint *requests, MPI_Fint *outcount, MPI_Fint *indices,
                          MPI_Fint *statuses, MPI_Fint *ierr)
{
    some(1, incount, requests, outcount, indices, statuses, ierr);
}

static void nc_f_testsome(MPI_Fint *incount, MPI_Fint *requests, MPI_Fint *outcount, MPI_Fint *indices,
                          MPI_Fint *statuses, MPI_Fint *ierr)
{
    some(0, incount, requests, outcount, indices, statuses, ierr);
}

static void nc_f_startall(MPI_Fint *count, MPI_Fint *requests, MPI_Fint *ierr)
{
    int n = (int)*count;
    MPI_Request *c = f_requests(requests, n);
    int err = MPI_Startall(n, c);
    if (err == MPI_SUCCESS) f_requests_out(requests, c, n);
    else free(c);
    if (ierr) *ierr = (MPI_Fint)err;
}

#define NC_F_ARRAY_NAMES(lower, UPPER) NC_F_NAMES(nc_f_##lower, mpi_##lower, MPI_##UPPER)
NC_F_ARRAY_NAMES(waitall, WAITALL)
NC_F_ARRAY_NAMES(testall, TESTALL)
NC_F_ARRAY_NAMES(waitany, WAITANY)
NC_F_ARRAY_NAMES(testany, TESTANY)
NC_F_ARRAY_NAMES(waitsome, WAITSOME)
NC_F_ARRAY_NAMES(testsome, TESTSOME)
NC_F_ARRAY_NAMES(startall, STARTALL)

/* ---- MPI_OP_CREATE ----------------------------------------------------------------------------
 * Open MPI: the host's Fortran binding makes the op (so that the host, where it runs the op,
 * calls the function with Fortran arguments), and nodecoll records it as a Fortran op, whose
 * function it calls with the datatype's Fortran handle.  MPICH (mpi_f08 only: its mpif.h
 * binding calls MPI_Op_create itself): a Fortran function takes the arguments of a C one
 * there (its handles are the same integers), so nodecoll's MPI_Op_create records it. */
#if defined(OPEN_MPI)
typedef void host_op_create_fn(MPI_User_function *fn, MPI_Fint *commute, MPI_Fint *op, MPI_Fint *ierr);
static host_op_create_fn *host_op_create;
static pthread_once_t host_op_create_once = PTHREAD_ONCE_INIT;

static void find_host_op_create(void)
{
    host_op_create = (host_op_create_fn *)(uintptr_t)dlsym(RTLD_NEXT, "mpi_op_create_");
}

static int fortran_op_create(MPI_User_function *fn, MPI_Fint *commute, MPI_Op *op)
{
    pthread_once(&host_op_create_once, find_host_op_create);
    MPI_Fint f_op = 0, err = MPI_ERR_INTERN;
    if (host_op_create) host_op_create(fn, commute, &f_op, &err);
    if (err == MPI_SUCCESS) *op = PMPI_Op_f2c(f_op);
    return (int)err;
}

/* (nc_mpi_op_maker: another op of the same function, a request's own handle) */
static int make_fortran_op(MPI_User_function *fn, int commute, MPI_Op *op)
{
    MPI_Fint c = f_logical(commute);
    return fortran_op_create(fn, &c, op);
}

static void nc_f_op_create(MPI_User_function *fn, MPI_Fint *commute, MPI_Fint *op, MPI_Fint *ierr)
{
    MPI_Op c = MPI_OP_NULL;
    int commutative = 1;
    int err = fortran_op_create(fn, commute, &c);
    if (err == MPI_SUCCESS && PMPI_Op_commutative(c, &commutative) == MPI_SUCCESS)
        nc_mpi_record_user_op(c, fn, commutative, make_fortran_op);
    if (err == MPI_SUCCESS) *op = PMPI_Op_c2f(c);
    if (ierr) *ierr = (MPI_Fint)err;
}
#else
static void nc_f_op_create(MPI_User_function *fn, MPI_Fint *commute, MPI_Fint *op, MPI_Fint *ierr)
{
    pthread_once(&logicals_once, find_logicals);
    MPI_Op c = MPI_OP_NULL;
    int err = MPI_Op_create(fn, *commute != logical_false, &c);
    if (err == MPI_SUCCESS) *op = PMPI_Op_c2f(c);
    if (ierr) *ierr = (MPI_Fint)err;
}
#endif
NC_F_ARRAY_NAMES(op_create, OP_CREATE)

#endif
