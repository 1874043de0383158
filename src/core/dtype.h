/*
 * The datatype engine: a compact description of a noncontiguous memory layout (what an MPI
 * derived datatype describes), and a resumable cursor that packs or unpacks any byte range
 * of `count` such elements in time proportional to the bytes moved plus the nesting depth.
 *
 * No MPI here: src/mpi/dtype_decode.c builds descriptions from MPI datatypes; anything else
 * (tests, a runtime without MPI) can build them with the constructors below.
 *
 * Description.  A tree of nodes, normalised as it is built:
 *   LEAF    one contiguous run of `bytes` bytes at displacement `offset`;
 *   VECTOR  `count` blocks at offset + i*stride, each `blocklen` copies of `child` placed
 *           `child->extent` apart (contiguous, vector, hvector and subarray levels);
 *   BLOCKS  `count` blocks at disp[i], each lens[i] copies of children[i] (or of `child`);
 *   RUNS    `count` contiguous runs: lens[i] bytes at disp[i] (indexed lists of dense types).
 * Normalisation drops empty blocks, folds copies of a dense child into one run, merges
 * adjacent runs, and turns regular lists into vectors, so a type costs what its layout
 * costs, not what its construction history cost.
 *
 * Position.  Element e of a buffer starts at buf + e*extent; the data of an element lie at
 * its start plus the displacements (lb and extent only place the copies, as in MPI).
 *
 * Dual context (Balaji et al., section 4.1).  An nc_dt_cursor is a saved position in the packed
 * stream: nc_dt_pack / nc_dt_unpack continue from it without searching from the start.  The
 * look-ahead (nc_dt_lookahead) walks a private copy of the cursor over the next chunk and
 * reports whether that chunk is dense (few long runs: copy run by run or hand the runs to
 * single-copy reads as iovecs) or sparse (many short runs: pack through a segment), without
 * moving the copying cursor.
 */
#ifndef NC_CORE_DTYPE_H
#define NC_CORE_DTYPE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

typedef enum { NC_DT_LEAF, NC_DT_VECTOR, NC_DT_BLOCKS, NC_DT_RUNS } nc_dt_kind;

typedef struct nc_dtype nc_dtype;
struct nc_dtype {
    nc_dt_kind kind;
    int depth;             /* cursor frames one element needs (LEAF 0) */
    ptrdiff_t lb, extent;  /* placement of consecutive elements (resizable) */
    ptrdiff_t true_lb, true_ub; /* where data bytes really lie (true_lb == true_ub: none) */
    size_t size;           /* data bytes in one element */
    size_t runs;           /* contiguous runs in one element (saturates at SIZE_MAX) */
    size_t count;          /* VECTOR: blocks; BLOCKS, RUNS: entries */
    ptrdiff_t offset;      /* LEAF: run start; VECTOR: displacement of block 0 */
    size_t bytes;          /* LEAF: run length */
    size_t blocklen;       /* VECTOR: copies of child per block */
    ptrdiff_t stride;      /* VECTOR: bytes between blocks */
    nc_dtype *child;       /* VECTOR; BLOCKS when every entry has the same child */
    ptrdiff_t *disp;       /* BLOCKS, RUNS: entry displacements */
    size_t *lens;          /* BLOCKS: copies of the child per entry; RUNS: run bytes */
    size_t *packed_before; /* BLOCKS, RUNS: packed bytes of the entries before i (seeking) */
    nc_dtype **children;   /* BLOCKS: child of each entry, or NULL (all use `child`) */
};

/* Deepest description the cursor follows (after normalisation); deeper ones are refused. */
#define NC_DT_MAX_DEPTH 24

/* Constructors.  Each takes ownership of the children it is given (also on failure) and
 * returns NULL when the description would be too deep, too large or out of memory. */
nc_dtype *nc_dt_bytes(size_t bytes);
/* `count` blocks `stride` bytes apart, each `blocklen` consecutive copies of `child`
 * (hvector; contiguous is nc_dt_vector(n, 1, child->extent, child)). */
nc_dtype *nc_dt_vector(size_t count, size_t blocklen, ptrdiff_t stride, nc_dtype *child);
/* hindexed: n blocks of blocklens[i] copies of `child` at disp[i] bytes. */
nc_dtype *nc_dt_indexed(size_t n, const ptrdiff_t *disp, const size_t *blocklens, nc_dtype *child);
/* struct: n blocks of blocklens[i] copies of children[i] at disp[i] bytes. */
nc_dtype *nc_dt_struct(size_t n, const ptrdiff_t *disp, const size_t *blocklens, nc_dtype **children);
/* An ndims-dimensional box of `child` elements (subsizes at starts, in an array of sizes;
 * C order: the last index is fastest, else Fortran order), with lb 0 and the whole array's
 * extent, as MPI_Type_create_subarray. */
nc_dtype *nc_dt_subarray(int ndims, const size_t *sizes, const size_t *subsizes,
                         const size_t *starts, int order_c, nc_dtype *child);
/* The same data with a new lower bound and extent. */
nc_dtype *nc_dt_resized(nc_dtype *t, ptrdiff_t lb, ptrdiff_t extent);
void nc_dt_free(nc_dtype *t);

/* One dense run per element, back to back: `count` elements are `count*size` plain bytes. */
int nc_dt_is_contiguous(const nc_dtype *t);
/* Mean bytes per contiguous run (the dense / sparse measure). */
double nc_dt_mean_run(const nc_dtype *t);

/* A saved position in the packed stream of `count` elements starting at `base`. */
typedef struct nc_dt_frame {
    const nc_dtype *node;
    uintptr_t origin;      /* address of the node's displacement 0 */
    size_t entry, copy;    /* next (block, copy within block) to visit */
} nc_dt_frame;

typedef struct nc_dt_cursor {
    nc_dtype root;         /* the `count` elements seen as one vector */
    int depth;             /* frames in use */
    uintptr_t run;         /* rest of the current run */
    size_t run_left;
    size_t offset, total;  /* packed bytes before the position; in the whole stream */
    nc_dt_frame stack[NC_DT_MAX_DEPTH + 1];
} nc_dt_cursor;

/* Positions `c` at packed byte `offset` (<= count*size) in O(depth * log entries). */
void nc_dt_cursor_init(nc_dt_cursor *c, const nc_dtype *t, const void *base, size_t count,
                       size_t offset);
/* Copy up to `len` bytes from the layout into `dst` (pack) or from `src` into the layout
 * (unpack), continuing from the cursor and leaving it after them; return the bytes moved
 * (less than len only at the end of the stream). */
size_t nc_dt_pack(nc_dt_cursor *c, void *dst, size_t len);
size_t nc_dt_unpack(nc_dt_cursor *c, const void *src, size_t len);
/* Describe up to `len` bytes as at most `max_iov` runs (for single-copy transfers), advancing
 * the cursor past them; returns the bytes described and sets *niov. */
size_t nc_dt_iov(nc_dt_cursor *c, struct iovec *iov, size_t max_iov, size_t len, size_t *niov);

/* Copies the data (not the gaps) of `count` elements from the layout at `src` to the same
 * layout at `dst`. */
void nc_dt_copy(const nc_dtype *t, const void *src, void *dst, size_t count);

typedef struct nc_dt_shape {
    size_t bytes;          /* bytes looked at (<= len) */
    size_t runs;           /* contiguous runs they form */
    int dense;             /* mean run >= the threshold given */
} nc_dt_shape;
/* Look-ahead: the shape of the next `len` bytes from `c`, looking at no more than
 * `max_runs` runs (the answer then covers fewer bytes); `c` does not move. */
nc_dt_shape nc_dt_lookahead(const nc_dt_cursor *c, size_t len, size_t max_runs,
                            size_t dense_min_run);

#endif
