/* Decoding committed MPI datatypes into datatype-engine descriptions.
 *
 * Each constructor is read back with MPI_Type_get_envelope / MPI_Type_get_contents (the
 * large-count forms where the MPI has them) and rebuilt with the core constructors.  The
 * host's own lb and extent then replace the ones the core computed, level by level: MPI
 * pads struct extents for alignment, and the host is the authority on them.  Constructors
 * not read directly (darray, large-count subarray and darray, padded predefined pairs like
 * MPI_DOUBLE_INT, anything unknown) are probed: one element is packed from memory holding
 * each byte's own offset, which maps every packed byte to its displacement. */
#include "dtype_decode.h"

#include "../core/fatal.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "../core/config.h"

/* Nesting of MPI constructors we follow; the normalised description is flatter. */
#define NC_DECODE_MAX_NESTING 64

/* ---------- the constructor arguments, as one list of counts ---------- */

typedef struct contents {
    int combiner;
    size_t nargs, ntypes;
    MPI_Count *arg;        /* integers, then addresses (or the large counts) */
    MPI_Datatype *types;
    int large;             /* the type was made by a large-count constructor */
} contents;

static void contents_free(contents *c)
{
    for (size_t i = 0; i < c->ntypes; i++) {
        int combiner = nc_mpi_type_combiner(c->types[i]);
        /* named types are never freed; every other type get_contents returns is ours */
        if (combiner >= 0 && !nc_mpi_combiner_predefined(combiner)) PMPI_Type_free(&c->types[i]);
    }
    free(c->arg);
    free(c->types);
}

static int get_contents_small(MPI_Datatype t, contents *c, int ni, int na, int nd)
{
    int *ints = nc_alloc_or_die(((size_t)ni + 1) * sizeof *ints);
    MPI_Aint *aints = nc_alloc_or_die(((size_t)na + 1) * sizeof *aints);
    c->arg = nc_alloc_or_die(((size_t)ni + (size_t)na + 1) * sizeof *c->arg);
    c->types = nc_alloc_or_die(((size_t)nd + 1) * sizeof *c->types);
    int ok = ints && aints && c->arg && c->types &&
             PMPI_Type_get_contents(t, ni, na, nd, ints, aints, c->types) == MPI_SUCCESS;
    if (ok) {
        for (int i = 0; i < ni; i++) c->arg[i] = ints[i];
        for (int i = 0; i < na; i++) c->arg[ni + i] = aints[i];
        c->nargs = (size_t)ni + (size_t)na;
        c->ntypes = (size_t)nd;
    }
    free(ints);
    free(aints);
    return ok;
}

#if MPI_VERSION >= 4
/* A large-count constructor puts its counts and displacements, in order, in `counts`; we
 * read those forms only when they have nothing else (the vector and indexed families). */
static int get_contents_large(MPI_Datatype t, contents *c, MPI_Count ni, MPI_Count na,
                              MPI_Count nl, MPI_Count nd)
{
    if (ni || na) return 0;
    c->arg = nc_alloc_or_die(((size_t)nl + 1) * sizeof *c->arg);
    c->types = nc_alloc_or_die(((size_t)nd + 1) * sizeof *c->types);
    if (!c->arg || !c->types ||
        PMPI_Type_get_contents_c(t, 0, 0, nl, nd, NULL, NULL, c->arg, c->types) != MPI_SUCCESS)
        return 0;
    c->nargs = (size_t)nl;
    c->ntypes = (size_t)nd;
    c->large = 1;
    return 1;
}
#endif

/* 1 and the arguments, or 0 (named types have none; unreadable ones are probed). */
static int get_contents(MPI_Datatype t, contents *c)
{
    *c = (contents){0};
#if MPI_VERSION >= 4
    MPI_Count ni, na, nl, nd;
    if (PMPI_Type_get_envelope_c(t, &ni, &na, &nl, &nd, &c->combiner) != MPI_SUCCESS) return 0;
    if (c->combiner == MPI_COMBINER_NAMED) return 0;
    if (nl) return get_contents_large(t, c, ni, na, nl, nd);
#else
    int ni, na, nd;
    if (PMPI_Type_get_envelope(t, &ni, &na, &nd, &c->combiner) != MPI_SUCCESS) return 0;
    if (c->combiner == MPI_COMBINER_NAMED) return 0;
#endif
    if (nc_mpi_combiner_predefined(c->combiner))
        return 0; /* the F90 kinds: decoded from their size and extent */
    return get_contents_small(t, c, (int)ni, (int)na, (int)nd);
}

int nc_mpi_type_combiner(MPI_Datatype type)
{
    int combiner;
#if MPI_VERSION >= 4 /* MPICH refuses the int form for types made with large counts */
    MPI_Count ni, na, nl, nd;
    if (PMPI_Type_get_envelope_c(type, &ni, &na, &nl, &nd, &combiner) != MPI_SUCCESS) return -1;
#else
    int ni, na, nd;
    if (PMPI_Type_get_envelope(type, &ni, &na, &nd, &combiner) != MPI_SUCCESS) return -1;
#endif
    return combiner;
}

int nc_mpi_combiner_predefined(int combiner)
{
    return combiner == MPI_COMBINER_NAMED || combiner == MPI_COMBINER_F90_REAL || combiner == MPI_COMBINER_F90_COMPLEX ||
           combiner == MPI_COMBINER_F90_INTEGER;
}

MPI_Datatype nc_mpi_type_undup(MPI_Datatype type)
{
    MPI_Datatype t = type;
    for (int depth = 0; depth < 64 && nc_mpi_type_combiner(t) == MPI_COMBINER_DUP; depth++) {
        int ints[1];
        MPI_Aint addrs[1];
        MPI_Datatype inner;
        if (PMPI_Type_get_contents(t, 0, 0, 1, ints, addrs, &inner) != MPI_SUCCESS) break;
        if (t != type) PMPI_Type_free(&t); /* an intermediate duplicate's handle, made for us */
        t = inner;
    }
    if (t == type || nc_mpi_combiner_predefined(nc_mpi_type_combiner(t))) return t; /* (never freed) */
    PMPI_Type_free(&t);
    return type;
}

/* ---------- the host's bounds ---------- */

typedef struct host_bounds {
    MPI_Count size, lb, extent, true_lb, true_extent;
} host_bounds;

static int host_bounds_of(MPI_Datatype t, host_bounds *h)
{
    return PMPI_Type_size_x(t, &h->size) == MPI_SUCCESS &&
           PMPI_Type_get_extent_x(t, &h->lb, &h->extent) == MPI_SUCCESS &&
           PMPI_Type_get_true_extent_x(t, &h->true_lb, &h->true_extent) == MPI_SUCCESS &&
           h->size != MPI_UNDEFINED && h->extent != MPI_UNDEFINED;
}

/* Gives `d` the host's lb and extent; NULL if the data size disagrees (a decoding bug the
 * host packing then hides). */
static nc_dtype *adopt_bounds(nc_dtype *d, const host_bounds *h)
{
    if (!d) return NULL;
    if ((MPI_Count)d->size != h->size) {
        nc_dt_free(d);
        return NULL;
    }
    MPI_Count true_ub;
    if (h->size == 0 || __builtin_add_overflow(h->true_lb, h->true_extent, &true_ub)) {
        d->true_lb = d->true_ub = 0; /* no data (Open MPI reports true_lb = LONG_MAX then) */
    } else {
        d->true_lb = (ptrdiff_t)h->true_lb;
        d->true_ub = (ptrdiff_t)true_ub;
    }
    return nc_dt_resized(d, (ptrdiff_t)h->lb, (ptrdiff_t)h->extent);
}

/* ---------- probing: the byte map of one element ---------- */

/* Whether this thread's decode in progress fell back on probing somewhere: its result then
 * depends on this process's NODECOLL_DTYPE_PROBE_MAX.  (Per thread: the uncached decode
 * for tests runs outside the cache's lock.) */
static _Thread_local int decode_probed;

static nc_dtype *probe(MPI_Datatype t, const host_bounds *h)
{
    decode_probed = 1;
    if (h->size == 0) return nc_dt_bytes(0);
    size_t span = (size_t)h->true_extent, size = (size_t)h->size;
    if (h->true_extent <= 0 || span > (size_t)nc_config_get()->dtype_probe_max ||
        h->size > INT32_MAX || span > UINT32_MAX)
        return NULL;
    unsigned char *mem = nc_alloc_or_die(span), *packed = nc_alloc_or_die(size);
    uint32_t *at = nc_calloc_or_die(size, sizeof *at);
    ptrdiff_t *disp = nc_alloc_or_die(size * sizeof *disp);
    size_t *lens = nc_alloc_or_die(size * sizeof *lens), runs = 0;
    MPI_Datatype committed = MPI_DATATYPE_NULL; /* a type get_contents returned may not be */
    int ok = mem && packed && at && disp && lens && PMPI_Type_dup(t, &committed) == MPI_SUCCESS &&
             PMPI_Type_commit(&committed) == MPI_SUCCESS;
    /* pass k: every memory byte holds byte k of its own offset */
    for (int shift = 0; ok && (shift == 0 || (span - 1) >> shift); shift += 8) {
        for (size_t i = 0; i < span; i++) mem[i] = (unsigned char)(i >> shift);
        int position = 0;
        ok = PMPI_Pack(mem - h->true_lb, 1, committed, packed, (int)size, &position, MPI_COMM_SELF) ==
             MPI_SUCCESS;
        for (size_t k = 0; ok && k < size; k++) at[k] |= (uint32_t)packed[k] << shift;
    }
    for (size_t k = 0; ok && k < size; k++) {
        ptrdiff_t d = (ptrdiff_t)at[k] + (ptrdiff_t)h->true_lb;
        if (runs && disp[runs - 1] + (ptrdiff_t)lens[runs - 1] == d) {
            lens[runs - 1]++;
        } else {
            disp[runs] = d;
            lens[runs++] = 1;
        }
    }
    nc_dtype *d = ok ? nc_dt_indexed(runs, disp, lens, nc_dt_bytes(1)) : NULL;
    if (committed != MPI_DATATYPE_NULL) PMPI_Type_free(&committed);
    free(mem);
    free(packed);
    free(at);
    free(disp);
    free(lens);
    return d;
}

/* ---------- constructor by constructor ---------- */

static nc_dtype *decode(MPI_Datatype t, int nesting);

static MPI_Count extent_of(MPI_Datatype t)
{
    MPI_Count lb, extent;
    return PMPI_Type_get_extent_x(t, &lb, &extent) == MPI_SUCCESS ? extent : 0;
}

/* Lists of blocks: `n` blocks, lengths at arg[lens] (or all arg[lens] when `same_len`),
 * displacements at arg[disps] in units of `unit` bytes, children types[0] or types[i]. */
typedef struct block_list {
    size_t n, lens, disps;
    int same_len, per_block_types;
    MPI_Count unit;
} block_list;

static nc_dtype *decode_blocks(const contents *c, const block_list *l, int nesting)
{
    size_t n = l->n;
    if (l->disps + n > c->nargs || (l->per_block_types && n > c->ntypes)) return NULL;
    ptrdiff_t *disp = nc_alloc_or_die((n + 1) * sizeof *disp);
    size_t *lens = nc_alloc_or_die((n + 1) * sizeof *lens);
    nc_dtype **kids = l->per_block_types ? nc_calloc_or_die(n + 1, sizeof *kids) : NULL;
    int ok = disp && lens && (kids || !l->per_block_types);
    for (size_t i = 0; ok && i < n; i++) {
        MPI_Count len = c->arg[l->lens + (l->same_len ? 0 : i)];
        ok = len >= 0;
        lens[i] = (size_t)len;
        disp[i] = (ptrdiff_t)(c->arg[l->disps + i] * l->unit);
        if (kids) ok = ok && (kids[i] = decode(c->types[i], nesting + 1)) != NULL;
    }
    nc_dtype *d = NULL;
    if (ok && kids) d = nc_dt_struct(n, disp, lens, kids);
    else if (ok) d = nc_dt_indexed(n, disp, lens, decode(c->types[0], nesting + 1));
    else if (kids)
        for (size_t i = 0; i < n; i++) nc_dt_free(kids[i]);
    free(disp);
    free(lens);
    free(kids);
    return d;
}

static nc_dtype *decode_subarray(const contents *c, int nesting)
{
    int nd = (int)c->arg[0];
    if (c->large || nd < 1 || (size_t)(3 * nd + 2) > c->nargs) return NULL;
    size_t *dims = nc_alloc_or_die(3 * (size_t)nd * sizeof *dims);
    if (!dims) return NULL;
    for (int i = 0; i < 3 * nd; i++) dims[i] = (size_t)c->arg[1 + i];
    nc_dtype *d = nc_dt_subarray(nd, dims, dims + nd, dims + 2 * nd,
                                 c->arg[1 + 3 * nd] == MPI_ORDER_C, decode(c->types[0], nesting + 1));
    free(dims);
    return d;
}

static nc_dtype *decode_constructor(const contents *c, int nesting)
{
    MPI_Datatype child = c->ntypes ? c->types[0] : MPI_DATATYPE_NULL;
    MPI_Count unit = child != MPI_DATATYPE_NULL ? extent_of(child) : 1;
    const MPI_Count *a = c->arg;
    size_t n = c->nargs ? (size_t)a[0] : 0;
    switch (c->combiner) {
    case MPI_COMBINER_DUP:
        return decode(child, nesting + 1);
    case MPI_COMBINER_CONTIGUOUS:
        return nc_dt_vector((size_t)a[0], 1, (ptrdiff_t)unit, decode(child, nesting + 1));
    case MPI_COMBINER_VECTOR:
    case MPI_COMBINER_HVECTOR:
        return nc_dt_vector((size_t)a[0], (size_t)a[1],
                            (ptrdiff_t)(a[2] * (c->combiner == MPI_COMBINER_VECTOR ? unit : 1)),
                            decode(child, nesting + 1));
    case MPI_COMBINER_INDEXED:
        return decode_blocks(c, &(block_list){n, 1, 1 + n, 0, 0, unit}, nesting);
    case MPI_COMBINER_HINDEXED:
        return decode_blocks(c, &(block_list){n, 1, 1 + n, 0, 0, 1}, nesting);
    case MPI_COMBINER_INDEXED_BLOCK:
        return decode_blocks(c, &(block_list){n, 1, 2, 1, 0, unit}, nesting);
    case MPI_COMBINER_HINDEXED_BLOCK:
        return decode_blocks(c, &(block_list){n, 1, 2, 1, 0, 1}, nesting);
    case MPI_COMBINER_STRUCT:
        return decode_blocks(c, &(block_list){n, 1, 1 + n, 0, 1, 1}, nesting);
    case MPI_COMBINER_SUBARRAY:
        return decode_subarray(c, nesting);
    case MPI_COMBINER_RESIZED:
        return nc_dt_resized(decode(child, nesting + 1), (ptrdiff_t)a[0], (ptrdiff_t)a[1]);
    default:
        return NULL; /* darray and the rest: probed */
    }
}

static int is_dense(const host_bounds *h)
{
    return h->lb == 0 && h->true_lb == 0 && h->extent == h->size && h->true_extent == h->size;
}

static nc_dtype *decode(MPI_Datatype t, int nesting)
{
    host_bounds h;
    if (nesting > NC_DECODE_MAX_NESTING || !host_bounds_of(t, &h)) return NULL;
    contents c;
    nc_dtype *d = NULL;
    if (get_contents(t, &c)) {
        d = decode_constructor(&c, nesting);
        contents_free(&c);
    } else if (is_dense(&h)) { /* named types and their f90 aliases */
        d = nc_dt_bytes((size_t)h.size);
    }
    if (!d) d = probe(t, &h);
    return adopt_bounds(d, &h);
}

nc_dtype *nc_mpi_dtype_decode(MPI_Datatype type)
{
    return decode(type, 0);
}

/* ---------- the cache on the type ---------- */

static int description_keyval = MPI_KEYVAL_INVALID;
static pthread_once_t keyval_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t decode_lock = PTHREAD_MUTEX_INITIALIZER;
/* What is cached on a type: its description (NULL: the host packs it) and whether decoding
 * it needed probing. */
typedef struct cached_description {
    nc_dtype *d;
    int probed;
} cached_description;

static int free_description(MPI_Datatype type, int keyval, void *value, void *extra)
{
    cached_description *c = value;
    nc_dt_free(c->d);
    free(c);
    return MPI_SUCCESS;
}

static void create_keyval(void)
{
    /* not copied by MPI_Type_dup: the duplicate decodes (and frees) its own */
    PMPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, free_description, &description_keyval, NULL);
}

static int cached(MPI_Datatype type, void **value)
{
    int found = 0;
    PMPI_Type_get_attr(type, description_keyval, value, &found);
    return found;
}

static const cached_description *describe(MPI_Datatype type)
{
    static const cached_description none = {NULL, 0};
    int combiner = nc_mpi_type_combiner(type);
    if (combiner < 0 || nc_mpi_combiner_predefined(combiner))
        return &none; /* predefined (no attributes): the host packs the few that are not dense */
    pthread_once(&keyval_once, create_keyval);
    if (description_keyval == MPI_KEYVAL_INVALID) return &none;
    void *value;
    if (!cached(type, &value)) {
        /* decoded once: a second thread finds the first one's answer under the lock */
        pthread_mutex_lock(&decode_lock);
        if (!cached(type, &value)) {
            cached_description *c = nc_alloc_or_die(sizeof *c);
            decode_probed = 0;
            c->d = decode(type, 0);
            c->probed = decode_probed;
            value = c;
            if (PMPI_Type_set_attr(type, description_keyval, value) != MPI_SUCCESS) {
                free_description(type, description_keyval, c, NULL); /* not cacheable: the host packs it */
                value = (void *)&none;
            }
        }
        pthread_mutex_unlock(&decode_lock);
    }
    return value;
}

const nc_dtype *nc_mpi_dtype(MPI_Datatype type) { return describe(type)->d; }

const nc_dtype *nc_mpi_dtype_unprobed(MPI_Datatype type)
{
    const cached_description *c = describe(type);
    return c->probed ? NULL : c->d;
}

void nc_mpi_dtype_release_keyval(void)
{
    if (description_keyval != MPI_KEYVAL_INVALID) PMPI_Type_free_keyval(&description_keyval);
}
