/* MPI_Reduce, MPI_Allreduce, MPI_Reduce_scatter(_block), MPI_Scan, MPI_Exscan, and the
 * mapping of MPI datatypes and operations onto nodecoll's reduction kernels.
 *
 * Accelerated: the predefined C datatypes (every integer width, the multi-language integers
 * MPI_AINT/OFFSET/COUNT, MPI_BYTE, float/double/long double, the C complex types,
 * MPI_C_BOOL, the MINLOC/MAXLOC pair types), the predefined Fortran datatypes (INTEGER and
 * INTEGERn, REAL, DOUBLE PRECISION and REALn, COMPLEX, DOUBLE COMPLEX and COMPLEXn, LOGICAL,
 * 2INTEGER, 2REAL, 2DOUBLE_PRECISION) with every predefined op MPI defines on them, and
 * user-defined ops (MPI_Op_create) on any of those datatypes and on derived datatypes
 * whose data lie inside each element's extent.  Everything else goes to the host MPI
 * unchanged, counted as "pmpi:type": combinations MPI forbids (so the host raises
 * MPI_ERR_OP, as for a predefined op on a derived type, or does what it does where it goes
 * beyond MPI), MPI_CHAR/MPI_WCHAR/MPI_CHARACTER (in no group of MPI-4.0 6.9.2), REAL16 and
 * COMPLEX32 (both hosts compute them as x87 long double, not as the Fortran compiler's
 * quad precision), types the host does not have, derived types whose data reach outside
 * their extents, MPI_REPLACE/MPI_NO_OP (one-sided only in MPI). */
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "datatype.h"
#include "dtype_decode.h"
#include "request.h"
#include "state.h"
#include "../core/fatal.h"

#define NC_EXPORT __attribute__((visibility("default")))

/* ---- datatypes ------------------------------------------------------------------------ */

/* MPI-4.0 section 6.9.2 groups the datatypes; each group allows a set of operations. */
enum type_group { G_INTEGER, G_FORTRAN_INTEGER, G_MULTI_LANGUAGE, G_BYTE, G_FLOAT, G_COMPLEX, G_LOGICAL, G_PAIR };

#define OPS_BIT(op) (1u << NC_OP_##op)
static const unsigned group_ops[] = {
    [G_INTEGER] = OPS_BIT(MIN) | OPS_BIT(MAX) | OPS_BIT(SUM) | OPS_BIT(PROD) | OPS_BIT(LAND) | OPS_BIT(LOR) |
                  OPS_BIT(LXOR) | OPS_BIT(BAND) | OPS_BIT(BOR) | OPS_BIT(BXOR),
    [G_FORTRAN_INTEGER] = OPS_BIT(MIN) | OPS_BIT(MAX) | OPS_BIT(SUM) | OPS_BIT(PROD) | OPS_BIT(BAND) |
                          OPS_BIT(BOR) | OPS_BIT(BXOR),
    [G_MULTI_LANGUAGE] = OPS_BIT(MIN) | OPS_BIT(MAX) | OPS_BIT(SUM) | OPS_BIT(PROD) | OPS_BIT(BAND) |
                         OPS_BIT(BOR) | OPS_BIT(BXOR),
    [G_BYTE] = OPS_BIT(BAND) | OPS_BIT(BOR) | OPS_BIT(BXOR),
    [G_FLOAT] = OPS_BIT(MIN) | OPS_BIT(MAX) | OPS_BIT(SUM) | OPS_BIT(PROD),
    [G_COMPLEX] = OPS_BIT(SUM) | OPS_BIT(PROD),
    [G_LOGICAL] = OPS_BIT(LAND) | OPS_BIT(LOR) | OPS_BIT(LXOR),
    [G_PAIR] = OPS_BIT(MINLOC) | OPS_BIT(MAXLOC),
};

/* A Fortran type's element kind follows the size the host gives it (a compiler may make
 * INTEGER, REAL or LOGICAL 8 bytes). */
enum fortran_kind { F_NONE, F_INTEGER, F_REAL, F_COMPLEX, F_LOGICAL, F_2INTEGER, F_2REAL };

typedef struct known_type {
    MPI_Datatype type;
    nc_elem_id elem;
    enum type_group group;
    enum fortran_kind fortran; /* F_NONE: elem is the C type's */
    size_t extent;
    size_t true_extent; /* without the trailing padding of MPI_DOUBLE_INT and friends */
} known_type;

/* Integers by width and signedness. */
static nc_elem_id integer_elem(size_t bytes, int is_signed)
{
    switch (bytes) {
    case 1: return is_signed ? NC_ELEM_I8 : NC_ELEM_U8;
    case 2: return is_signed ? NC_ELEM_I16 : NC_ELEM_U16;
    case 4: return is_signed ? NC_ELEM_I32 : NC_ELEM_U32;
    case 8: return is_signed ? NC_ELEM_I64 : NC_ELEM_U64;
    default: return NC_ELEM_COUNT;
    }
}

/* (ctype)-1 is negative only for signed types; the comparison goes through long double so
 * the compiler does not flag "unsigned < 0". */
#define NC_IS_SIGNED(ctype) ((long double)(ctype)-1 < 0.0L)
/* The element kind of a C integer type by width and signedness; the extent is filled in
 * from the kind (nodecoll's C layout), and the host's must match it. */
#define NC_INT(mpi, ctype) {mpi, integer_elem(sizeof(ctype), NC_IS_SIGNED(ctype)), G_INTEGER, F_NONE, 0, 0}
#define NC_MULTI(mpi, ctype) {mpi, integer_elem(sizeof(ctype), NC_IS_SIGNED(ctype)), G_MULTI_LANGUAGE, F_NONE, 0, 0}
#define NC_OTHER(mpi, elem, group) {mpi, NC_ELEM_##elem, group, F_NONE, 0, 0}
#define NC_FORTRAN(mpi, kind, group) {mpi, NC_ELEM_COUNT, group, kind, 0, 0}

/* The element kind of a Fortran type of `size` bytes, or NC_ELEM_COUNT. */
static nc_elem_id fortran_elem(enum fortran_kind kind, int size)
{
    switch (kind) {
    case F_INTEGER: return integer_elem((size_t)size, 1);
    case F_REAL: return size == 4 ? NC_ELEM_F32 : size == 8 ? NC_ELEM_F64 : NC_ELEM_COUNT;
    case F_COMPLEX: return size == 8 ? NC_ELEM_C32 : size == 16 ? NC_ELEM_C64 : NC_ELEM_COUNT;
    case F_LOGICAL: return size == 4 ? NC_ELEM_FLOG32 : size == 8 ? NC_ELEM_FLOG64 : NC_ELEM_COUNT;
    case F_2INTEGER: return size == 8 ? NC_ELEM_INT_INT : NC_ELEM_COUNT;
    case F_2REAL: return size == 8 ? NC_ELEM_REAL_REAL : size == 16 ? NC_ELEM_DOUBLE_DOUBLE : NC_ELEM_COUNT;
    case F_NONE: break;
    }
    return NC_ELEM_COUNT;
}

/* One LOGICAL of `elem` (4 or 8 bytes) holding v, and back. */
static void logical_put(void *at, nc_elem_id elem, long long v)
{
    if (elem == NC_ELEM_FLOG32) *(int32_t *)at = (int32_t)v;
    else *(int64_t *)at = (int64_t)v;
}
static long long logical_get(const void *at, nc_elem_id elem)
{
    return elem == NC_ELEM_FLOG32 ? *(const int32_t *)at : *(const int64_t *)at;
}

/* Fortran LOGICAL as the host reduces it: the values it writes for true and false, and
 * which values it reads as true, found by reducing LOGICALs through the host itself (its
 * Fortran binding may have told it the compiler's .TRUE.).  nodecoll's kernels then follow
 * that rule; 0 (MPI_LOGICAL stays with the host) when some probe does not fit it. */
static int probe_fortran_logical(MPI_Datatype type, nc_elem_id elem)
{
    enum { NPROBES = 4, NOPS = 3 };
    const long long probes[NPROBES] = {0, 1, 2, -1};
    const MPI_Op ops[NOPS] = {MPI_LAND, MPI_LOR, MPI_LXOR};
    const nc_op_id ids[NOPS] = {NC_OP_LAND, NC_OP_LOR, NC_OP_LXOR};
    long long host[NOPS][NPROBES][NPROBES];
    _Alignas(8) char in[8], inout[8];
    for (int o = 0; o < NOPS; o++)
        for (int a = 0; a < NPROBES; a++)
            for (int b = 0; b < NPROBES; b++) {
                logical_put(in, elem, probes[a]);
                logical_put(inout, elem, probes[b]);
                if (PMPI_Reduce_local(in, inout, 1, type, ops[o]) != MPI_SUCCESS) return 0;
                host[o][a][b] = logical_get(inout, elem);
            }
    long long false_value = host[1][0][0]; /* LOR(0, 0) */
    long long true_value = host[1][1][0] != false_value ? host[1][1][0] : host[1][3][0];
    nc_fortran_logical_set(true_value, false_value, host[1][2][0] == false_value /* 2 is not true */);
    for (int o = 0; o < NOPS; o++)
        for (int a = 0; a < NPROBES; a++)
            for (int b = 0; b < NPROBES; b++) {
                logical_put(in, elem, probes[a]);
                logical_put(inout, elem, probes[b]);
                nc_kernel(ids[o], elem)(in, inout, 1, NULL);
                if (logical_get(inout, elem) != host[o][a][b]) return 0;
            }
    return 1;
}

/* Open MPI's handles are addresses, not constants: the table is built at first use. */
static known_type known[64];
static int known_count;
static pthread_once_t known_once = PTHREAD_ONCE_INIT;

static void build_type_table(void)
{
    const known_type all[] = {
        NC_INT(MPI_SIGNED_CHAR, signed char), NC_INT(MPI_UNSIGNED_CHAR, unsigned char),
        NC_INT(MPI_SHORT, short), NC_INT(MPI_UNSIGNED_SHORT, unsigned short), NC_INT(MPI_INT, int),
        NC_INT(MPI_UNSIGNED, unsigned), NC_INT(MPI_LONG, long), NC_INT(MPI_UNSIGNED_LONG, unsigned long),
        NC_INT(MPI_LONG_LONG_INT, long long), NC_INT(MPI_LONG_LONG, long long),
        NC_INT(MPI_UNSIGNED_LONG_LONG, unsigned long long), NC_INT(MPI_INT8_T, int8_t),
        NC_INT(MPI_UINT8_T, uint8_t), NC_INT(MPI_INT16_T, int16_t), NC_INT(MPI_UINT16_T, uint16_t),
        NC_INT(MPI_INT32_T, int32_t), NC_INT(MPI_UINT32_T, uint32_t), NC_INT(MPI_INT64_T, int64_t),
        NC_INT(MPI_UINT64_T, uint64_t), NC_MULTI(MPI_AINT, MPI_Aint), NC_MULTI(MPI_OFFSET, MPI_Offset),
        NC_MULTI(MPI_COUNT, MPI_Count), NC_OTHER(MPI_BYTE, U8, G_BYTE),
        NC_OTHER(MPI_FLOAT, F32, G_FLOAT), NC_OTHER(MPI_DOUBLE, F64, G_FLOAT),
        NC_OTHER(MPI_LONG_DOUBLE, F80, G_FLOAT),
        NC_OTHER(MPI_C_FLOAT_COMPLEX, C32, G_COMPLEX),
        NC_OTHER(MPI_C_COMPLEX, C32, G_COMPLEX),
        NC_OTHER(MPI_C_DOUBLE_COMPLEX, C64, G_COMPLEX),
        NC_OTHER(MPI_C_LONG_DOUBLE_COMPLEX, C80, G_COMPLEX),
        NC_OTHER(MPI_C_BOOL, BOOL, G_LOGICAL),
        NC_OTHER(MPI_FLOAT_INT, FLOAT_INT, G_PAIR),
        NC_OTHER(MPI_DOUBLE_INT, DOUBLE_INT, G_PAIR),
        NC_OTHER(MPI_LONG_INT, LONG_INT, G_PAIR),
        NC_OTHER(MPI_2INT, INT_INT, G_PAIR),
        NC_OTHER(MPI_SHORT_INT, SHORT_INT, G_PAIR),
        NC_OTHER(MPI_LONG_DOUBLE_INT, LONG_DOUBLE_INT, G_PAIR),
        /* Fortran, by MPI-4.0 6.9.2's groups (REAL16 and COMPLEX32 stay with the host: see
         * the top; MPI_CHARACTER is in no group) */
        NC_FORTRAN(MPI_INTEGER, F_INTEGER, G_FORTRAN_INTEGER),
        NC_FORTRAN(MPI_INTEGER1, F_INTEGER, G_FORTRAN_INTEGER),
        NC_FORTRAN(MPI_INTEGER2, F_INTEGER, G_FORTRAN_INTEGER),
        NC_FORTRAN(MPI_INTEGER4, F_INTEGER, G_FORTRAN_INTEGER),
        NC_FORTRAN(MPI_INTEGER8, F_INTEGER, G_FORTRAN_INTEGER),
        NC_FORTRAN(MPI_REAL, F_REAL, G_FLOAT),
        NC_FORTRAN(MPI_DOUBLE_PRECISION, F_REAL, G_FLOAT),
        NC_FORTRAN(MPI_REAL4, F_REAL, G_FLOAT),
        NC_FORTRAN(MPI_REAL8, F_REAL, G_FLOAT),
        NC_FORTRAN(MPI_COMPLEX, F_COMPLEX, G_COMPLEX),
        NC_FORTRAN(MPI_DOUBLE_COMPLEX, F_COMPLEX, G_COMPLEX),
        NC_FORTRAN(MPI_COMPLEX8, F_COMPLEX, G_COMPLEX),
        NC_FORTRAN(MPI_COMPLEX16, F_COMPLEX, G_COMPLEX),
        NC_FORTRAN(MPI_LOGICAL, F_LOGICAL, G_LOGICAL),
        NC_FORTRAN(MPI_2INTEGER, F_2INTEGER, G_PAIR),
        NC_FORTRAN(MPI_2REAL, F_2REAL, G_PAIR),
        NC_FORTRAN(MPI_2DOUBLE_PRECISION, F_2REAL, G_PAIR),
    };
    _Static_assert(sizeof all / sizeof all[0] <= sizeof known / sizeof known[0], "known[] is too small");
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        /* Only where the host lays the type out exactly like the kernel's element; a type the
         * host lacks (null, or of size 0 where it was built without Fortran) is skipped. */
        known_type t = all[i];
        MPI_Aint lb, extent, true_lb, true_extent;
        int size = 0;
        if (t.type == MPI_DATATYPE_NULL || PMPI_Type_size(t.type, &size) != MPI_SUCCESS || size <= 0) continue;
        if (t.fortran != F_NONE) t.elem = fortran_elem(t.fortran, size);
        if (t.elem == NC_ELEM_COUNT) continue;
        if (PMPI_Type_get_extent(t.type, &lb, &extent) != MPI_SUCCESS ||
            PMPI_Type_get_true_extent(t.type, &true_lb, &true_extent) != MPI_SUCCESS)
            continue;
        if (lb != 0 || true_lb != 0 || (size_t)extent != nc_elem_size(t.elem)) continue;
        if (t.fortran == F_LOGICAL && !probe_fortran_logical(t.type, t.elem)) continue;
        t.extent = (size_t)extent;
        t.true_extent = (size_t)true_extent;
        known[known_count++] = t;
    }
}

static const known_type *find_type(MPI_Datatype type)
{
    pthread_once(&known_once, build_type_table);
    for (int i = 0; i < known_count; i++)
        if (known[i].type == type) return &known[i];
    return NULL;
}

/* ---- operations ----------------------------------------------------------------------- */

static nc_op_id predefined_op(MPI_Op op)
{
    const struct { MPI_Op mpi; nc_op_id id; } ops[] = {
        {MPI_SUM, NC_OP_SUM},   {MPI_PROD, NC_OP_PROD}, {MPI_MIN, NC_OP_MIN},       {MPI_MAX, NC_OP_MAX},
        {MPI_LAND, NC_OP_LAND}, {MPI_LOR, NC_OP_LOR},   {MPI_LXOR, NC_OP_LXOR},     {MPI_BAND, NC_OP_BAND},
        {MPI_BOR, NC_OP_BOR},   {MPI_BXOR, NC_OP_BXOR}, {MPI_MINLOC, NC_OP_MINLOC}, {MPI_MAXLOC, NC_OP_MAXLOC},
    };
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (ops[i].mpi == op) return ops[i].id;
    return NC_OP_COUNT;
}

/* Inter-node steps run predefined ops through the host MPI as user-defined ops that call
 * nodecoll's own kernels: Open MPI 4.1.4 sums MPI_INT8_T wrongly in its AVX component, and
 * the same kernels everywhere give the same bits wherever an element is combined. */
static void bridge_apply(nc_op_id op, void *in, void *inout, int len, MPI_Datatype type)
{
    const known_type *t = find_type(type);
    nc_reduce_fn fn = nc_kernel(op, t->elem);
    if (len <= 0) return;
    fn(in, inout, (size_t)len - 1, NULL);
    /* The host's temporary buffers end at the last element's true extent, so that one
     * element goes through a full-sized copy (the kernel moves whole structs). */
    _Alignas(16) char a[64], b[64];
    size_t at = ((size_t)len - 1) * t->extent;
    memcpy(a, (char *)in + at, t->true_extent);
    memcpy(b, (char *)inout + at, t->true_extent);
    fn(a, b, 1, NULL);
    memcpy((char *)inout + at, b, t->true_extent);
}

#define NC_BRIDGE_FN(name)                                                                      \
    static void bridge_##name(void *in, void *inout, int *len, MPI_Datatype *type)             \
    {                                                                                           \
        bridge_apply(NC_OP_##name, in, inout, *len, *type);                                     \
    }
NC_OPS(NC_BRIDGE_FN)
#undef NC_BRIDGE_FN

static MPI_Op bridge_ops[NC_OP_COUNT];
static pthread_once_t bridge_ops_once = PTHREAD_ONCE_INIT;

static void create_bridge_ops(void)
{
    MPI_User_function *fns[] = {
#define NC_BRIDGE_ENTRY(name) bridge_##name,
        NC_OPS(NC_BRIDGE_ENTRY)
#undef NC_BRIDGE_ENTRY
    };
    for (int i = 0; i < NC_OP_COUNT; i++)
        if (PMPI_Op_create(fns[i], 1, &bridge_ops[i]) != MPI_SUCCESS) bridge_ops[i] = MPI_OP_NULL;
}

/* The op the leaders use for predefined op `id` (the host's own if ours could not be made). */
static MPI_Op bridge_op(nc_op_id id, MPI_Op predefined)
{
    pthread_once(&bridge_ops_once, create_bridge_ops);
    return bridge_ops[id] != MPI_OP_NULL ? bridge_ops[id] : predefined;
}

/* User-defined ops, recorded by MPI_Op_create and MPI_Op_create_c (MPI has no query for an
 * op's function). */
typedef struct user_op {
    MPI_Op op;
    MPI_User_function *fn;    /* MPI_Op_create's, or NULL: */
    nc_user_function_c *fn_c; /* MPI_Op_create_c's (counts in MPI_Count) */
    int commutative;
    nc_mpi_op_maker *fortran;
    struct user_op *next;
} user_op;
static user_op *user_ops;
static pthread_mutex_t user_ops_lock = PTHREAD_MUTEX_INITIALIZER;
/* Moves on whenever a user op is recorded or forgotten, so that nothing cached under an
 * earlier value matches again: MPI may hand out a freed op's handle for a new op. */
static _Atomic uint64_t user_ops_generation = 1;

static uint64_t user_ops_now(void) { return atomic_load_explicit(&user_ops_generation, memory_order_acquire); }
static void user_ops_changed(void) { atomic_fetch_add_explicit(&user_ops_generation, 1, memory_order_release); }

/* The last user op this thread looked up: a program reduces with the same op again and
 * again, and the lock of the list would be taken on every call otherwise. */
typedef struct recent_user_op {
    MPI_Op op;
    user_op record;
    uint64_t generation; /* 0: none */
} recent_user_op;
static _Thread_local recent_user_op recent_user;

static int find_user_op(MPI_Op op, user_op *out)
{
    uint64_t now = user_ops_now();
    if (recent_user.generation == now && recent_user.op == op) {
        *out = recent_user.record;
        return 1;
    }
    int found = 0;
    pthread_mutex_lock(&user_ops_lock);
    for (user_op *u = user_ops; u && !found; u = u->next)
        if (u->op == op) *out = *u, found = 1;
    pthread_mutex_unlock(&user_ops_lock);
    if (found) recent_user = (recent_user_op){op, *out, now};
    return found;
}

/* Links a record of a user op (a copy of `record`). */
static void record_user_op(user_op record)
{
    user_op *u = nc_alloc_or_die(sizeof *u); /* an op unrecorded on one rank would send it to the host alone */
    *u = record;
    pthread_mutex_lock(&user_ops_lock);
    u->next = user_ops;
    user_ops = u;
    user_ops_changed();
    pthread_mutex_unlock(&user_ops_lock);
}

void nc_mpi_record_user_op(MPI_Op op, MPI_User_function *fn, int commute, nc_mpi_op_maker *fortran)
{
    record_user_op((user_op){.op = op, .fn = fn, .commutative = commute, .fortran = fortran});
}

NC_EXPORT int MPI_Op_create(MPI_User_function *fn, int commute, MPI_Op *op)
{
    int err = PMPI_Op_create(fn, commute, op);
    if (err == MPI_SUCCESS) nc_mpi_record_user_op(*op, fn, commute, NULL);
    return err;
}

#ifdef NODECOLL_HAVE_MPI_LARGE_COUNT
NC_EXPORT int MPI_Op_create_c(MPI_User_function_c *fn, int commute, MPI_Op *op)
{
    int err = PMPI_Op_create_c(fn, commute, op);
    if (err == MPI_SUCCESS) record_user_op((user_op){.op = *op, .fn_c = fn, .commutative = commute});
    return err;
}
#endif

NC_EXPORT int MPI_Op_free(MPI_Op *op)
{
    MPI_Op freed = op ? *op : MPI_OP_NULL;
    int err = PMPI_Op_free(op);
    if (err != MPI_SUCCESS) return err;
    pthread_mutex_lock(&user_ops_lock);
    for (user_op **u = &user_ops; *u; u = &(*u)->next)
        if ((*u)->op == freed) {
            user_op *gone = *u;
            *u = gone->next;
            free(gone);
            break;
        }
    user_ops_changed();
    pthread_mutex_unlock(&user_ops_lock);
    return err;
}

/* MPI_Op_create's user function takes an int count: longer runs are cut.  A Fortran one
 * takes the datatype's Fortran handle (and an INTEGER count: MPI_Fint is an int, fortran.c);
 * MPI_Op_create_c's an MPI_Count: one call. */
typedef void fortran_user_function(void *in, void *inout, MPI_Fint *len, MPI_Fint *type);

static void call_user_op(const void *in, void *inout, size_t count, void *ctx)
{
    nc_user_call *u = ctx;
    size_t extent = u->extent;
    if (u->fn_c) {
        MPI_Count n = (MPI_Count)count;
        u->fn_c((void *)(uintptr_t)in, inout, &n, &u->type);
        return;
    }
    MPI_Fint ftype = u->fortran ? PMPI_Type_c2f(u->type) : 0;
    for (size_t done = 0; done < count;) {
        int n = count - done < (size_t)INT_MAX ? (int)(count - done) : INT_MAX;
        void *a = (char *)(uintptr_t)in + done * extent, *b = (char *)inout + done * extent;
        if (u->fortran) ((fortran_user_function *)(uintptr_t)u->fn)(a, b, &n, &ftype);
        else u->fn(a, b, &n, &u->type);
        done += (size_t)n;
    }
}

/* A user op on elements of `extent` bytes: 0, or 1 when `op` is not one nodecoll recorded. */
static int describe_user(nc_mpi_reduction *rc, MPI_Datatype type, MPI_Op op, size_t extent)
{
    user_op u;
    if (op == MPI_OP_NULL || !find_user_op(op, &u)) return 1;
    rc->host = (nc_host_op){op, type};
    rc->user = (nc_user_call){.fn = u.fn, .fn_c = u.fn_c, .type = type, .extent = extent, .fortran = u.fortran};
    rc->red = (nc_reduction){call_user_op, &rc->user, extent, u.commutative, &rc->host, NULL};
    return 0;
}

/* A derived type whose data lie inside each element's extent (true lb >= 0, true ub <=
 * extent): its elements are whole extents the algorithms may copy and hand to a user op, as
 * long as no gap of a user buffer is read or written, which copies in the same layout
 * ensure (with_layout_copies).  NULL for any other type. */
static const nc_dtype *layout_within_extent(MPI_Datatype type, const nc_config *cfg)
{
    MPI_Count size;
    int dense;
    if (nc_datatype_describe(type, &size, &dense) || !cfg->dtype_engine) return NULL;
    const nc_dtype *t = nc_mpi_dtype_unprobed(type); /* (a probed description depends on a local limit) */
    if (!t || t->extent <= 0 || t->true_lb < 0 || t->true_ub > t->extent || !t->size) return NULL;
    return t;
}

/* 0 when nodecoll runs this op on this datatype, else 1 (the host MPI must).  Besides the
 * predefined types, a user op also runs on a derived type: its elements are opaque blocks
 * the algorithms copy whole, and the user's function sees them in the type's own layout.
 * A type without gaps is used in place; one with gaps inside its extents through copies.
 * (Predefined ops on derived types are the host's error.) */
static int describe_uncached(nc_mpi_reduction *rc, MPI_Datatype type, MPI_Op op, const nc_config *cfg)
{
    const known_type *t = find_type(type);
    size_t size = 0;
    rc->gaps = NULL;
    if (!t) {
        if (predefined_op(op) != NC_OP_COUNT) return 1;
        if (nc_datatype_gapless(type, &size)) return describe_user(rc, type, op, size);
        if (!(rc->gaps = layout_within_extent(type, cfg))) return 1;
        return describe_user(rc, type, op, (size_t)rc->gaps->extent);
    }
    nc_op_id id = predefined_op(op);
    if (id == NC_OP_COUNT) return describe_user(rc, type, op, t->extent); /* (the user's function sees its own handle) */
    rc->host = (nc_host_op){op, type};
    rc->red.host = &rc->host;
    rc->red.elem_size = t->extent;
    if (!(group_ops[t->group] & (1u << id))) return 1;
    rc->red.fn = nc_kernel(id, t->elem);
    rc->red.into = nc_kernel_into(id, t->elem);
    rc->red.ctx = NULL;
    rc->host.op = bridge_op(id, op);
    rc->red.commutative = 1;
    return rc->red.fn == NULL;
}

/* The last (type, op) pair this thread reduced with, for a predefined type: a small
 * reduction repeats it, and looking it up again costs about as much as the reduction itself.
 * Predefined types are never freed; a user op's entry holds only while the recorded user ops
 * stay as they were (a freed op's handle may come back for another op).  Derived types are
 * not cached (their handles too may come back). */
typedef struct recent_pair {
    MPI_Datatype type;
    MPI_Op op;
    nc_reduction red;
    nc_host_op host;
    nc_user_call user;
    uint64_t generation; /* 0: none */
} recent_pair;
static NC_HOT_TLS recent_pair recent;

int nc_mpi_describe_reduction(nc_mpi_reduction *rc, MPI_Datatype type, MPI_Op op, const nc_config *cfg)
{
    uint64_t now = user_ops_now();
    if (recent.generation == now && recent.type == type && recent.op == op) {
        rc->red = recent.red;
        rc->host = recent.host;
        rc->user = recent.user;
        rc->red.host = &rc->host;
        if (rc->red.fn == call_user_op) rc->red.ctx = &rc->user;
        rc->gaps = NULL;
        return 0;
    }
    int err = describe_uncached(rc, type, op, cfg);
    if (err || !find_type(type)) return err;
    nc_user_call user = rc->red.fn == call_user_op ? rc->user : (nc_user_call){0};
    recent = (recent_pair){type, op, rc->red, rc->host, user, now};
    return err;
}

static void host_reduce_local(const void *in, void *inout, size_t count, void *ctx)
{
    const nc_host_op *h = ctx;
    MPI_Aint lb, extent;
    PMPI_Type_get_extent(h->type, &lb, &extent);
    for (size_t at = 0; at < count; at += INT_MAX) {
        size_t n = count - at < INT_MAX ? count - at : INT_MAX;
        PMPI_Reduce_local((const char *)in + at * (size_t)extent, (char *)inout + at * (size_t)extent, (int)n,
                          h->type, h->op);
    }
}

void nc_mpi_host_reduction(nc_mpi_reduction *rc, MPI_Datatype type, MPI_Op op, size_t extent, int commutative)
{
    rc->host = (nc_host_op){op, type};
    rc->red = (nc_reduction){host_reduce_local, &rc->host, extent, commutative, &rc->host, NULL};
}

/* ---- the entry points: one adapter per collective serves every call form -------------- */

/* What enter_reduction decided. */
enum { RUN_NODECOLL = 0 }; /* (or NC_RUN_HOST, else: an error, already raised) */

/* The length a rank compares under NODECOLL_CHECK. */
static uint64_t signature_bytes(const nc_mpi_comm *s, MPI_Datatype type, size_t count, int args_ok)
{
    MPI_Count size;
    int dense;
    if (!s->coll.cfg.check) return 0; /* (the record's length is read by the check alone) */
    if (!args_ok || nc_datatype_describe(type, &size, &dense)) return NC_CALL_ANY_BYTES;
    return (uint64_t)count * (uint64_t)size;
}

static int32_t call_op(MPI_Op op)
{
    nc_op_id id = predefined_op(op);
    return id != NC_OP_COUNT ? (int32_t)id : op == MPI_OP_NULL ? NC_CALL_NONE : NC_CALL_USER_OP;
}

/* A reduction call as this rank judged its arguments. */
typedef struct reduction_call {
    nc_coll_id coll;
    int root;     /* Reduce's, else -1 */
    int args_ok;  /* every argument significant here is valid */
    MPI_Datatype type;
    MPI_Op op;
} reduction_call;

/* Decides who runs the reduction b describes and enters the call (state.h).  A request holds
 * a derived type (the user may free it while the operation is pending): a user function
 * gets the handle the call was given, valid until the request goes, as MPI says. */
NC_FORM_INLINE int enter_reduction(nc_mpi_comm *s, MPI_Comm comm, const reduction_call *judged, nc_mpi_reduce_call *b,
                                   const nc_call_form_args *f, nc_call_record *entered)
{
    nc_alg_id host = NC_ALG_COUNT;
    if (judged->args_ok && !f->blocking) b->held_type = nc_mpi_hold_type(judged->type);
    MPI_Datatype type = b->held_type != MPI_DATATYPE_NULL ? b->held_type : judged->type;
    if (!judged->args_ok) host = NC_ALG_PMPI_ARGS;
    /* An element larger than a pipeline segment cannot be cut into fragments. */
    else if (nc_mpi_describe_reduction(&b->rc, type, judged->op, &s->coll.cfg) ||
             b->rc.red.elem_size > s->coll.node.layout.seg_size)
        host = NC_ALG_PMPI_TYPE;
    nc_call_record call = {judged->coll, judged->root, call_op(judged->op), host,
                           signature_bytes(s, type, b->count, judged->args_ok), 0};
    int err = nc_mpi_enter_form(s, comm, &call, f);
    *entered = call;
    if (err) return err;
    if (host == NC_ALG_COUNT) return RUN_NODECOLL;
    nc_mpi_fallback(judged->coll, host);
    return NC_RUN_HOST;
}

/* A user op on a type with gaps (rc.gaps): the algorithms run on copies in the type's
 * layout, where they may move whole extents; only the data of the result reaches the user's
 * receive buffer, and no gap of a user buffer is read (it may lie outside its allocation).
 * A blocking call's copies live in the communicator's scratch, a request's in its own
 * memory (several may be pending on one communicator). */
static void plan_layout_copies(nc_mpi_reduce_call *b, nc_mpi_comm *s, int for_request)
{
    b->in = b->user_in;
    b->out = b->user_out;
    if (!b->rc.gaps) return;
    size_t extent = (size_t)b->rc.gaps->extent, in_bytes = b->count * extent;
    size_t bytes = in_bytes + (b->out ? b->out_count * extent : 0) + 1;
    b->copies = for_request ? nc_alloc_or_die(bytes) : nc_mpi_scratch(s, bytes);
    b->in = b->copies;
    if (b->out) b->out = b->copies + in_bytes;
}

/* Before each run: the input into its copy. */
static void copy_in(const nc_mpi_reduce_call *b)
{
    if (b->rc.gaps) nc_dt_copy(b->rc.gaps, b->user_in, b->copies, b->count);
}

/* After a successful run: the result's data out of its copy. */
static void copy_out(const nc_mpi_reduce_call *b, int err)
{
    if (b->rc.gaps && b->out && !err) nc_dt_copy(b->rc.gaps, b->out, b->user_out, b->out_count);
}

/* A request's own handle of a user op for the host's steps across nodes: MPI lets the user
 * free the op while the operation is pending, and a persistent request keeps it.  (Should
 * the host refuse one, the user's handle serves, valid as long as the user keeps it.) */
static void hold_user_op(nc_mpi_reduce_call *b)
{
    if (b->rc.red.fn != call_user_op) return;
    int commute = b->rc.red.commutative, err;
#ifdef NODECOLL_HAVE_MPI_LARGE_COUNT
    if (b->rc.user.fn_c) err = PMPI_Op_create_c((MPI_User_function_c *)b->rc.user.fn_c, commute, &b->held_op);
    else
#endif
    {
        nc_mpi_op_maker *make = b->rc.user.fortran ? b->rc.user.fortran : PMPI_Op_create;
        err = make(b->rc.user.fn, commute, &b->held_op);
    }
    if (err == MPI_SUCCESS) b->rc.host.op = b->held_op;
    else b->held_op = MPI_OP_NULL;
}

/* A request's hooks: each start copies the input, each completion delivers the result. */
static void reduce_request_begin(nc_mpi_request *r) { copy_in(&r->call.reduce); }
static int reduce_request_deliver(nc_mpi_request *r)
{
    copy_out(&r->call.reduce, r->op.err);
    return MPI_SUCCESS;
}
static void reduce_request_release(nc_mpi_request *r)
{
    nc_mpi_reduce_call *b = &r->call.reduce;
    free(b->counts);
    free(b->copies);
    nc_mpi_release_type(&b->held_type);
    if (b->held_op != MPI_OP_NULL) PMPI_Op_free(&b->held_op);
}
static const nc_mpi_call_form reduce_form = {reduce_request_begin, reduce_request_deliver, reduce_request_release,
                                               sizeof(nc_mpi_reduce_call)};

/* The request of a nonblocking or persistent call (NULL for a blocking one, or when none
 * can be made: the host then serves the call), and in *b where the call keeps what it
 * needs: in the request, else in *stack_call. */
NC_FORM_INLINE nc_mpi_request *reduction_request(nc_mpi_comm *s, MPI_Comm comm, const nc_call_form_args *f,
                                                 nc_mpi_reduce_call *stack_call, nc_mpi_reduce_call **b)
{
    nc_mpi_request *r = f->blocking ? NULL : nc_mpi_request_new(s, comm, &reduce_form, f->persistent);
    *b = r ? &r->call.reduce : stack_call;
    (*b)->counts = NULL;
    (*b)->copies = NULL;
    (*b)->held_type = MPI_DATATYPE_NULL;
    (*b)->held_op = MPI_OP_NULL;
    return r;
}

/* The user's buffers of the call, as this rank uses them. */
static void set_operands(nc_mpi_reduce_call *b, const void *in, void *out, size_t count, size_t out_count)
{
    b->user_in = in;
    b->user_out = out;
    b->count = count;
    b->out_count = out_count;
}

/* Whether a nonblocking reduction's request can serve its repetitions (nc_mpi_request_again):
 * predefined type and op, no layout copies, no counts of its own. */
static int reusable(const nc_mpi_reduce_call *b, const reduction_call *judged)
{
    return b->held_type == MPI_DATATYPE_NULL && b->held_op == MPI_OP_NULL && !b->rc.gaps && !b->counts &&
           predefined_op(judged->op) != NC_OP_COUNT;
}

/* Runs the reduction (blocking) or issues its request r: NC_RUN_HOST when the host must serve
 * the call, else an MPI error code (raised).  `key`: the call's, when its request may be
 * kept for repetitions, else NULL. */
NC_FORM_INLINE int reduction(nc_mpi_comm *s, MPI_Comm comm, nc_mpi_request *r, nc_mpi_reduce_call *b,
                             const reduction_call *judged, const nc_call_form_args *f, const nc_mpi_reuse_key *key)
{
    nc_call_record entered;
    int err = enter_reduction(s, comm, judged, b, f, &entered);
    if (err) {
        if (r) nc_mpi_request_discard(r);
        return err;
    }
    plan_layout_copies(b, s, r != NULL);
    nc_args a = {.coll = judged->coll, .root = judged->root,
                 .reduce = {b->in, b->out, b->count, b->counts, &b->rc.red}};
    size_t bytes = b->count * b->rc.red.elem_size;
    if (r) {
        hold_user_op(b);
        if (key && !f->persistent && reusable(b, judged)) nc_mpi_request_reusable(r, key, &entered);
        r->args = a;
        nc_mpi_request_issue(r, bytes, f->request);
        return MPI_SUCCESS;
    }
    copy_in(b);
    err = nc_collective(&s->coll, &a, bytes);
    copy_out(b, err);
    return nc_mpi_raise(comm, err);
}

/* A buffer that must hold data does (the host reports a missing one its own way). */
static int buffer_ok(const void *buf, MPI_Count count) { return count == 0 || (buf != NULL && buf != MPI_IN_PLACE); }

/* Every adapter below takes its count as an MPI_Count (the _c forms' type; the int forms'
 * is widened) and returns NC_RUN_HOST when the host must serve the call. */
NC_FORM_INLINE int reduce_call(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype type, MPI_Op op,
                               int root, MPI_Comm comm, const nc_call_form_args *f)
{
    nc_mpi_comm *s = nc_mpi_state_for_form(comm, NC_COLL_REDUCE, f);
    if (!s) return NC_RUN_HOST;
    nc_mpi_reuse_key key = {NC_COLL_REDUCE, root, op, {{sendbuf, count, type}, {recvbuf, 0, MPI_DATATYPE_NULL}}};
    int err;
    if (nc_mpi_restart_repeated(s, f, &key, &err)) return err;
    nc_mpi_reduce_call stack_call, *b;
    nc_mpi_request *r = reduction_request(s, comm, f, &stack_call, &b);
    if (!f->blocking && !r) return NC_RUN_HOST;
    int is_root = s->coll.rank == root;
    const void *in = is_root && sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    int ok = root >= 0 && root < s->coll.size && count >= 0 && in != MPI_IN_PLACE && buffer_ok(in, count) &&
             (!is_root || buffer_ok(recvbuf, count));
    /* (recvbuf matters at the root only) */
    set_operands(b, in, is_root ? recvbuf : NULL, (size_t)count, (size_t)count);
    reduction_call judged = {NC_COLL_REDUCE, root, ok, type, op};
    return reduction(s, comm, r, b, &judged, f, &key);
}

#define NC_REDUCE_PARAMS(N, C, D) \
    (const void *sendbuf, void *recvbuf, N count, MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm)
NC_COUNT_FORMS(Reduce, Ireduce, reduce_call, NC_REDUCE_PARAMS, (sendbuf, recvbuf, count, type, op, root, comm))

/* Allreduce, Reduce_scatter_block, Scan and Exscan take the same arguments; `count` is
 * Reduce_scatter_block's recvcount. */
#define NC_VECTOR_PARAMS(N, C, D) \
    (const void *sendbuf, void *recvbuf, N count, MPI_Datatype type, MPI_Op op, MPI_Comm comm)
#define NC_VECTOR_ARGS (sendbuf, recvbuf, count, type, op, comm)

NC_FORM_INLINE int allreduce_call(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype type, MPI_Op op,
                                  MPI_Comm comm, const nc_call_form_args *f)
{
    nc_mpi_comm *s = nc_mpi_state_for_form(comm, NC_COLL_ALLREDUCE, f);
    if (!s) return NC_RUN_HOST;
    nc_mpi_reuse_key key = {NC_COLL_ALLREDUCE, -1, op, {{sendbuf, count, type}, {recvbuf, 0, MPI_DATATYPE_NULL}}};
    int err;
    if (nc_mpi_restart_repeated(s, f, &key, &err)) return err;
    nc_mpi_reduce_call stack_call, *b;
    nc_mpi_request *r = reduction_request(s, comm, f, &stack_call, &b);
    if (!f->blocking && !r) return NC_RUN_HOST;
    const void *in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    int ok = count >= 0 && buffer_ok(in, count) && buffer_ok(recvbuf, count);
    set_operands(b, in, recvbuf, (size_t)count, (size_t)count);
    reduction_call judged = {NC_COLL_ALLREDUCE, -1, ok, type, op};
    return reduction(s, comm, r, b, &judged, f, &key);
}

NC_COUNT_FORMS(Allreduce, Iallreduce, allreduce_call, NC_VECTOR_PARAMS, NC_VECTOR_ARGS)

/* Fills n[] (elements per rank: `count` each for the block form, else `counts`: int, or
 * MPI_Count in the large-count form) and *total; 0 if a count is invalid or a buffer missing
 * (in place, recvbuf holds the whole input). */
static int reduce_scatter_counts(int block, const void *counts, int wide, MPI_Count count, int size, int rank,
                                 const void *sendbuf, const void *recvbuf, size_t *n, size_t *total)
{
    *total = 0;
    if (!block && !counts) return 0;
    for (int q = 0; q < size; q++) {
        MPI_Count c = block ? count : nc_mpi_count_at(counts, wide, q);
        if (c < 0) return 0;
        *total += n[q] = (size_t)c;
    }
    if (sendbuf == MPI_IN_PLACE) return buffer_ok(recvbuf, (MPI_Count)*total);
    return buffer_ok(sendbuf, (MPI_Count)*total) && buffer_ok(recvbuf, (MPI_Count)n[rank]);
}

/* Reduce_scatter with per-rank counts, or `count` each (the _block form: counts NULL).  The
 * counts array is the communicator's for a blocking call, the request's own otherwise. */
NC_FORM_INLINE int reduce_scatter(nc_coll_id coll, const void *sendbuf, void *recvbuf, const void *counts,
                                  MPI_Count count, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                                  const nc_call_form_args *f)
{
    nc_mpi_comm *s = nc_mpi_state_for_form(comm, coll, f);
    if (!s) return NC_RUN_HOST;
    nc_mpi_reduce_call stack_call, *b;
    nc_mpi_request *r = reduction_request(s, comm, f, &stack_call, &b);
    if (!f->blocking && !r) return NC_RUN_HOST;
    b->counts = r ? nc_alloc_or_die(sizeof(size_t) * (size_t)s->coll.size) : nc_mpi_counts(s);
    size_t total;
    int ok = reduce_scatter_counts(coll == NC_COLL_REDUCE_SCATTER_BLOCK, counts, f->large, count, s->coll.size,
                                   s->coll.rank, sendbuf, recvbuf, b->counts, &total);
    const void *in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    set_operands(b, in, recvbuf, total, ok ? b->counts[s->coll.rank] : 0);
    reduction_call judged = {coll, -1, ok, type, op};
    return reduction(s, comm, r, b, &judged, f, NULL);
}

NC_FORM_INLINE int reduce_scatter_call(const void *sendbuf, void *recvbuf, const void *recvcounts, MPI_Datatype type,
                                       MPI_Op op, MPI_Comm comm, const nc_call_form_args *f)
{
    return reduce_scatter(NC_COLL_REDUCE_SCATTER, sendbuf, recvbuf, recvcounts, 0, type, op, comm, f);
}

#define NC_REDUCE_SCATTER_PARAMS(N, C, D) \
    (const void *sendbuf, void *recvbuf, const C *recvcounts, MPI_Datatype type, MPI_Op op, MPI_Comm comm)
NC_COUNT_FORMS(Reduce_scatter, Ireduce_scatter, reduce_scatter_call, NC_REDUCE_SCATTER_PARAMS,
               (sendbuf, recvbuf, recvcounts, type, op, comm))

NC_FORM_INLINE int reduce_scatter_block_call(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype type,
                                             MPI_Op op, MPI_Comm comm, const nc_call_form_args *f)
{
    return reduce_scatter(NC_COLL_REDUCE_SCATTER_BLOCK, sendbuf, recvbuf, NULL, count, type, op, comm, f);
}

NC_COUNT_FORMS(Reduce_scatter_block, Ireduce_scatter_block, reduce_scatter_block_call, NC_VECTOR_PARAMS,
               NC_VECTOR_ARGS)

NC_FORM_INLINE int scan(nc_coll_id coll, const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype type,
                        MPI_Op op, MPI_Comm comm, const nc_call_form_args *f)
{
    nc_mpi_comm *s = nc_mpi_state_for_form(comm, coll, f);
    if (!s) return NC_RUN_HOST;
    nc_mpi_reduce_call stack_call, *b;
    nc_mpi_request *r = reduction_request(s, comm, f, &stack_call, &b);
    if (!f->blocking && !r) return NC_RUN_HOST;
    const void *in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    /* Exscan leaves rank 0's recvbuf alone: it need not be there. */
    int receives = coll != NC_COLL_EXSCAN || s->coll.rank != 0;
    int ok = count >= 0 && buffer_ok(in, count) && (!receives || buffer_ok(recvbuf, count));
    set_operands(b, in, receives ? recvbuf : NULL, (size_t)count, (size_t)count);
    reduction_call judged = {coll, -1, ok, type, op};
    return reduction(s, comm, r, b, &judged, f, NULL);
}

NC_FORM_INLINE int scan_call(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype type, MPI_Op op,
                             MPI_Comm comm, const nc_call_form_args *f)
{
    return scan(NC_COLL_SCAN, sendbuf, recvbuf, count, type, op, comm, f);
}

NC_COUNT_FORMS(Scan, Iscan, scan_call, NC_VECTOR_PARAMS, NC_VECTOR_ARGS)

NC_FORM_INLINE int exscan_call(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype type, MPI_Op op,
                               MPI_Comm comm, const nc_call_form_args *f)
{
    return scan(NC_COLL_EXSCAN, sendbuf, recvbuf, count, type, op, comm, f);
}

NC_COUNT_FORMS(Exscan, Iexscan, exscan_call, NC_VECTOR_PARAMS, NC_VECTOR_ARGS)
