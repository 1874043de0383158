/* The large-count forms where int cannot go, at 2 ranks, against the host's PMPI_<Coll>_c:
 *
 * - MPI_Bcast_c of 2^31 + 4099 MPI_BYTEs (count and bytes above INT_MAX);
 * - MPI_Allreduce_c in place of 2^31 + 4099 MPI_UNSIGNED_CHARs with MPI_SUM;
 * - v-forms whose displacements pass INT_MAX and UINT_MAX (blocks of MPI_BYTEs placed 3 GiB
 *   and 4 GiB into a buffer): MPI_Gatherv_c, MPI_Iallgatherv_c, MPI_Scatterv_init_c,
 *   MPI_Alltoallv_c, MPI_Ialltoallw_c (byte displacements);
 * - a derived type of large extent (an int resized to 2 GiB + 8 bytes): MPI_Bcast_c of 2
 *   elements and MPI_Allgatherv_c receiving one element per rank.
 *
 * The two huge messages are checked in 256 MiB pieces against the host's own call on the same
 * data (PMPI_Bcast_c from the root's buffer; PMPI_Allreduce_c of the regenerated input), so a
 * rank holds one message and one piece (~2.3 GiB, ~4.6 GiB for the job).  The v-forms' large
 * buffers are calloc'ed and only their blocks are touched (the rest stays unbacked zero
 * pages); nodecoll's and the host's buffers are compared whole, so a byte written anywhere
 * else is found.  The counters must show that nodecoll served every call.  Where MemAvailable
 * is below what the huge messages need, they are skipped (said on stdout).  Prints each
 * step's time. */
#include "common.h"

#include <time.h>

#if MPI_VERSION < 4
#error "built only where the host has MPI-4's large-count forms (tests/test_large_count.cmake)"
#endif

#define PIECE ((size_t)256 << 20)

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void say(const char *what, double seconds)
{
    if (t_rank == 0) printf("  %-52s %6.2f s\n", what, seconds);
}

/* Rank r's data at bytes [first, first + n): byte i is byte i % 8 of a word drawn from i / 8
 * and r, cheap to regenerate anywhere. */
static void generate(unsigned char *buf, size_t first, size_t n, int r)
{
    uint64_t word = 0;
    for (size_t i = first; i < first + n; i++) {
        if (i == first || i % 8 == 0) word = (i / 8) * 0x9e3779b97f4a7c15ULL + (uint64_t)r * 0x632be59bd9b4e019ULL;
        buf[i - first] = (unsigned char)(word >> (8 * (i % 8)));
    }
}

static size_t mem_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    size_t kb = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %zu kB", &kb) == 1) break;
    if (f) fclose(f);
    return kb << 10;
}

/* ---- the two huge messages ------------------------------------------------------------------ */

/* Compares nodecoll's result `got` (n bytes) with the host's, which host_piece(piece, at, len,
 * arg) computes a piece at a time; reports the time of each. */
static void check_in_pieces(const char *what, const unsigned char *got, size_t n, double nodecoll_seconds,
                            void (*host_piece)(unsigned char *piece, size_t at, size_t len, int arg), int arg)
{
    char line[96];
    snprintf(line, sizeof line, "%s, 2^31 + 4099 bytes (nodecoll)", what);
    say(line, nodecoll_seconds);
    unsigned char *piece = malloc(PIECE);
    T_CHECK(piece != NULL, "no memory for a piece");
    double t = now();
    for (size_t at = 0; piece && at < n; at += PIECE) {
        size_t len = n - at < PIECE ? n - at : PIECE;
        host_piece(piece, at, len, arg);
        if (memcmp(piece, got + at, len)) {
            size_t i = 0;
            while (piece[i] == got[at + i]) i++;
            t_fail("%s: byte %zu is %d, the host's is %d", what, at + i, got[at + i], piece[i]);
            break;
        }
    }
    say("  the host's PMPI_ call on the same data, in 256 MiB pieces", now() - t);
    free(piece);
}

/* The root's buffer, during the Bcast check. */
static const unsigned char *bcast_source;

static void host_bcast_piece(unsigned char *piece, size_t at, size_t len, int root)
{
    if (t_rank == root) memcpy(piece, bcast_source + at, len);
    PMPI_Bcast_c(piece, (MPI_Count)len, MPI_BYTE, root, MPI_COMM_WORLD);
}

static void host_allreduce_piece(unsigned char *piece, size_t at, size_t len, int unused)
{
    generate(piece, at, len, t_rank);
    PMPI_Allreduce_c(MPI_IN_PLACE, piece, (MPI_Count)len, MPI_UNSIGNED_CHAR, MPI_SUM, MPI_COMM_WORLD);
}

/* MPI_Bcast_c from `root` and, once the buffer is back to each rank's own data, MPI_Allreduce_c
 * in place: each rank holds one message at a time. */
static void huge_messages(MPI_Count n, int root)
{
    unsigned char *buf = malloc((size_t)n);
    T_CHECK(buf != NULL, "no memory for %lld bytes", (long long)n);
    if (!buf) return;
    if (t_rank == root) generate(buf, 0, (size_t)n, root);
    else memset(buf, 0x5a, (size_t)n);
    MPI_Barrier(MPI_COMM_WORLD);
    double t = now();
    int err = MPI_Bcast_c(buf, n, MPI_BYTE, root, MPI_COMM_WORLD);
    t = now() - t;
    T_CHECK(err == MPI_SUCCESS, "MPI_Bcast_c returned %d", err);
    bcast_source = buf;
    check_in_pieces("MPI_Bcast_c", buf, (size_t)n, t, host_bcast_piece, root);

    generate(buf, 0, (size_t)n, t_rank);
    MPI_Barrier(MPI_COMM_WORLD);
    t = now();
    err = MPI_Allreduce_c(MPI_IN_PLACE, buf, n, MPI_UNSIGNED_CHAR, MPI_SUM, MPI_COMM_WORLD);
    t = now() - t;
    T_CHECK(err == MPI_SUCCESS, "MPI_Allreduce_c returned %d", err);
    check_in_pieces("MPI_Allreduce_c in place, uint8 sum", buf, (size_t)n, t, host_allreduce_piece, 0);
    free(buf);
}

/* ---- displacements beyond INT_MAX ----------------------------------------------------------- */

/* Bytes [from, to) of nodecoll's buffer against the host's. */
static void compare(const char *what, const unsigned char *got, const unsigned char *want, size_t from, size_t to)
{
    if (!got || !want || !memcmp(got + from, want + from, to - from)) return;
    size_t i = from;
    while (got[i] == want[i]) i++;
    t_fail("%s: byte %zu is %d, the host's is %d", what, i, got[i], want[i]);
}

/* Block b of a far vector: rank 0's 3 GiB in, rank 1's 4 GiB + 777 bytes in (past UINT_MAX);
 * BLOCK bytes each (past the move slot: read single-copy). */
#define BLOCK ((MPI_Count)65536 + 3)
static const MPI_Aint far[2] = {((MPI_Aint)3 << 30) + 12345, ((MPI_Aint)4 << 30) + 777};
#define FAR_BYTES ((size_t)far[1] + (size_t)BLOCK + 64)

/* A far buffer: zero pages but for the blocks, filled with rank r's data when `fill`.  Compared
 * (compare_far) around each block and where a displacement cut to 32 bits would land (the
 * start): reading all 4 GiB of zero pages took seconds per buffer. */
static unsigned char *far_buffer(int fill, int r)
{
    unsigned char *b = calloc(1, FAR_BYTES);
    T_CHECK(b != NULL, "no address space for a %zu-byte buffer", FAR_BYTES);
    for (int i = 0; b && fill && i < 2; i++) generate(b + far[i], (size_t)far[i], (size_t)BLOCK, r);
    return b;
}

#define MARGIN ((size_t)1 << 20)
static void compare_far(const char *what, const unsigned char *got, const unsigned char *want)
{
    compare(what, got, want, 0, MARGIN);
    for (int i = 0; i < 2; i++) {
        size_t from = (size_t)far[i] - MARGIN, to = (size_t)far[i] + MARGIN;
        compare(what, got, want, from, to < FAR_BYTES ? to : FAR_BYTES);
    }
}

/* Waits for a nonblocking call's request, or starts a persistent one and waits, then frees it. */
static int finish(int err, MPI_Request *req, int persistent)
{
    if (err == MPI_SUCCESS && persistent) err = MPI_Start(req);
    if (err == MPI_SUCCESS) err = MPI_Wait(req, MPI_STATUS_IGNORE);
    if (persistent) MPI_Request_free(req);
    return err;
}

static void far_displacements(void)
{
    const MPI_Count counts[2] = {BLOCK, BLOCK};
    const MPI_Datatype bytes[2] = {MPI_BYTE, MPI_BYTE};
    unsigned char near[BLOCK], *got, *want, *send;
    MPI_Request req;
    int err;
    generate(near, 0, (size_t)BLOCK, t_rank);
    double t = now();

    /* Gatherv_c to root 1 (the receive vector matters there only) */
    got = far_buffer(0, 0), want = far_buffer(0, 0);
    err = MPI_Gatherv_c(near, BLOCK, MPI_BYTE, got, counts, far, MPI_BYTE, 1, MPI_COMM_WORLD);
    PMPI_Gatherv_c(near, BLOCK, MPI_BYTE, want, counts, far, MPI_BYTE, 1, MPI_COMM_WORLD);
    T_CHECK(err == MPI_SUCCESS, "MPI_Gatherv_c returned %d", err);
    if (t_rank == 1) compare_far("MPI_Gatherv_c", got, want);
    free(got), free(want);

    /* Iallgatherv_c */
    got = far_buffer(0, 0), want = far_buffer(0, 0);
    err = finish(MPI_Iallgatherv_c(near, BLOCK, MPI_BYTE, got, counts, far, MPI_BYTE, MPI_COMM_WORLD, &req), &req, 0);
    PMPI_Allgatherv_c(near, BLOCK, MPI_BYTE, want, counts, far, MPI_BYTE, MPI_COMM_WORLD);
    T_CHECK(err == MPI_SUCCESS, "MPI_Iallgatherv_c returned %d", err);
    compare_far("MPI_Iallgatherv_c", got, want);
    free(got), free(want);

    /* Scatterv_init_c from root 0, started once */
    unsigned char mine[BLOCK], expect[BLOCK];
    memset(mine, 1, sizeof mine), memset(expect, 2, sizeof expect);
    send = far_buffer(t_rank == 0, 0);
    err = finish(MPI_Scatterv_init_c(send, counts, far, MPI_BYTE, mine, BLOCK, MPI_BYTE, 0, MPI_COMM_WORLD,
                                     MPI_INFO_NULL, &req),
                 &req, 1);
    PMPI_Scatterv_c(send, counts, far, MPI_BYTE, expect, BLOCK, MPI_BYTE, 0, MPI_COMM_WORLD);
    T_CHECK(err == MPI_SUCCESS, "MPI_Scatterv_init_c returned %d", err);
    compare("MPI_Scatterv_init_c", mine, expect, 0, sizeof mine);
    free(send);

    /* Alltoallv_c and Ialltoallw_c: both vectors far */
    send = far_buffer(1, t_rank), got = far_buffer(0, 0), want = far_buffer(0, 0);
    err = MPI_Alltoallv_c(send, counts, far, MPI_BYTE, got, counts, far, MPI_BYTE, MPI_COMM_WORLD);
    PMPI_Alltoallv_c(send, counts, far, MPI_BYTE, want, counts, far, MPI_BYTE, MPI_COMM_WORLD);
    T_CHECK(err == MPI_SUCCESS, "MPI_Alltoallv_c returned %d", err);
    compare_far("MPI_Alltoallv_c", got, want);
    memset(got + far[0], 0, (size_t)BLOCK), memset(got + far[1], 0, (size_t)BLOCK);
    memset(want + far[0], 0, (size_t)BLOCK), memset(want + far[1], 0, (size_t)BLOCK);
    err = finish(MPI_Ialltoallw_c(send, counts, far, bytes, got, counts, far, bytes, MPI_COMM_WORLD, &req), &req, 0);
    PMPI_Alltoallw_c(send, counts, far, bytes, want, counts, far, bytes, MPI_COMM_WORLD);
    T_CHECK(err == MPI_SUCCESS, "MPI_Ialltoallw_c returned %d", err);
    compare_far("MPI_Ialltoallw_c", got, want);
    free(send), free(got), free(want);
    say("v-forms with displacements of 3 and 4 GiB (both)", now() - t);
}

/* An int every 2 GiB + 8 bytes: elements far apart through the datatype, not the displacements. */
static void large_extent(void)
{
    const MPI_Aint extent = ((MPI_Aint)2 << 30) + 8;
    const size_t bytes = (size_t)extent + 64;
    MPI_Datatype wide;
    MPI_Type_create_resized(MPI_INT, 0, extent, &wide);
    MPI_Type_commit(&wide);
    double t = now();
    unsigned char *got = calloc(1, bytes), *want = calloc(1, bytes);
    T_CHECK(got && want, "no address space for a %zu-byte buffer", bytes);
    if (!got || !want) return;
    int values[2] = {1234567, -7654321};
    if (t_rank == 0) {
        memcpy(got, &values[0], sizeof(int)), memcpy(got + extent, &values[1], sizeof(int));
        memcpy(want, got, sizeof(int)), memcpy(want + extent, got + extent, sizeof(int));
    }
    int err = MPI_Bcast_c(got, 2, wide, 0, MPI_COMM_WORLD);
    PMPI_Bcast_c(want, 2, wide, 0, MPI_COMM_WORLD);
    T_CHECK(err == MPI_SUCCESS, "MPI_Bcast_c of a 2 GiB-extent type returned %d", err);
    compare("MPI_Bcast_c of a 2 GiB-extent type", got, want, 0, MARGIN);
    compare("MPI_Bcast_c of a 2 GiB-extent type", got, want, (size_t)extent - MARGIN, bytes);
    memset(got, 0, sizeof(int)), memset(got + extent, 0, sizeof(int));
    memset(want, 0, sizeof(int)), memset(want + extent, 0, sizeof(int));
    const MPI_Count ones[2] = {1, 1};
    const MPI_Aint displs[2] = {0, 1};
    err = MPI_Allgatherv_c(&values[t_rank], 1, MPI_INT, got, ones, displs, wide, MPI_COMM_WORLD);
    PMPI_Allgatherv_c(&values[t_rank], 1, MPI_INT, want, ones, displs, wide, MPI_COMM_WORLD);
    T_CHECK(err == MPI_SUCCESS, "MPI_Allgatherv_c into a 2 GiB-extent type returned %d", err);
    compare("MPI_Allgatherv_c into a 2 GiB-extent type", got, want, 0, MARGIN);
    compare("MPI_Allgatherv_c into a 2 GiB-extent type", got, want, (size_t)extent - MARGIN, bytes);
    free(got), free(want);
    MPI_Type_free(&wide);
    say("a type of 2 GiB extent: Bcast_c, Allgatherv_c", now() - t);
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv);
    if (t_size != 2) {
        if (t_rank == 0) printf("test_large_count_huge: runs at 2 ranks only\n");
        MPI_Finalize();
        return 0;
    }
    const MPI_Count n = ((MPI_Count)1 << 31) + 4099;
    static const char *colls[] = {"bcast", "allreduce", "gatherv", "allgatherv", "scatterv", "alltoallv", "alltoallw"};
    enum { NCOLLS = sizeof colls / sizeof colls[0] };
    MPI_Barrier(MPI_COMM_WORLD); /* (sets the communicator up) */
    /* The job's two ranks hold a message and a piece each; the host's own steps a little more. */
    size_t need = 2 * ((size_t)n + PIECE) + ((size_t)1 << 30), have = mem_available();
    int huge = have >= need, all = 0;
    PMPI_Allreduce(&huge, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (all) {
        huge_messages(n, 1);
    } else if (t_rank == 0) {
        printf("  SKIPPED the 2 GiB Bcast and Allreduce: MemAvailable %zu MiB, need %zu MiB\n", have >> 20,
               need >> 20);
    }
    far_displacements();
    large_extent();
    for (int i = 0; i < NCOLLS; i++) {
        T_CHECK(nodecoll_stat_calls(colls[i], "pmpi:*") == 0, "%s: %llu calls went to the host", colls[i],
                (unsigned long long)nodecoll_stat_calls(colls[i], "pmpi:*"));
        T_CHECK(nodecoll_stat_calls(colls[i], "*") > 0 || (!all && i < 2), "%s: nodecoll served none", colls[i]);
    }
    return t_finish("test_large_count_huge");
}
