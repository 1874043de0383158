/* Many ranks on few cores: thousands of mixed Barrier and Bcast calls (random roots and sizes,
 * the same sequence on every rank) must all complete and deliver the root's bytes.  A wait
 * that spun instead of yielding would stall here for seconds per call. */
#include "common.h"

static void fill(unsigned char *b, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++) b[i] = (unsigned char)(seed + i * 131);
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv);
    int calls = t_scale(4000);
    size_t max = 1 << 20;
    unsigned char *buf = malloc(max), *want = malloc(max);
    uint64_t rng = 12345;
    double start = MPI_Wtime();
    for (int i = 0; i < calls; i++) {
        uint64_t r = t_rand(&rng);
        if (r % 3 == 0) {
            MPI_Barrier(MPI_COMM_WORLD);
            continue;
        }
        int root = (int)(r % (uint64_t)t_size);
        size_t n = (r >> 8) % 8 == 0 ? (size_t)((r >> 16) % max) : (size_t)((r >> 16) % 200);
        fill(want, n, r);
        if (t_rank == root) memcpy(buf, want, n);
        else memset(buf, 0, n);
        MPI_Bcast(buf, (int)n, MPI_BYTE, root, MPI_COMM_WORLD);
        if (memcmp(buf, want, n)) {
            t_fail("call %d: bcast of %zu bytes from %d delivered wrong bytes", i, n, root);
            break;
        }
    }
    double per_call = (MPI_Wtime() - start) / calls * 1e6;
    if (t_rank == 0) printf("stress: %d calls, %.1f us per call on %d ranks\n", calls, per_call, t_size);
    T_CHECK(nodecoll_stat_calls("bcast", "pmpi:*") == 0 || t_size == 1, "bcast fell back");
    free(buf);
    free(want);
    return t_finish("stress");
}
