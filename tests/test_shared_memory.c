/* The node's memory for a node-shared result is the result's size plus a constant, whatever
 * the number of ranks on the node: creating a handle maps exactly one region of
 * round_up(max_bytes, page) + one page in every process (nodecoll_shm_mapped_bytes, the
 * counter behind NODECOLL_SHM_CAP), the same region for every rank of the node (a block one
 * rank writes in place is read by the others), the communicator's own segment does not grow,
 * and freeing the handle gives it all back.  Rank 0 prints the figures next to what plain
 * MPI would hold (one copy per rank).  A one-rank communicator keeps a private copy (nothing
 * to share, nothing mapped). */
#include <unistd.h>

#include "common.h"

int main(int argc, char **argv)
{
    t_init(&argc, &argv);
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    MPI_Barrier(MPI_COMM_WORLD); /* the communicator's own state and segment exist from here */
    static const size_t sizes[] = {1, 1000, 4096, 100000, 1 << 20, 16 << 20};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t max = sizes[i], before = nodecoll_shm_mapped_bytes();
        nodecoll_shared h;
        T_CHECK(nodecoll_shared_create(MPI_COMM_WORLD, (MPI_Aint)max, &h) == MPI_SUCCESS, "create failed");
        size_t delta = nodecoll_shm_mapped_bytes() - before;
        size_t want = t_size > 1 ? (max + page - 1) / page * page + page : 0;
        int node_ranks = 0;
        MPI_Aint node_bytes = 0;
        nodecoll_shared_info(h, &node_ranks, &node_bytes);
        T_CHECK(delta == want, "%zu-byte handle mapped %zu bytes, want %zu (result + one page)", max, delta, want);
        T_CHECK((size_t)node_bytes == want, "nodecoll_shared_info: %ld node bytes, want %zu", (long)node_bytes, want);

        /* One copy: each rank writes one byte of its own in place and reads all the others. */
        size_t stride = max / (size_t)t_size;
        if (stride) {
            char *buf;
            nodecoll_shared_get_buffer(h, (void **)&buf);
            memset(buf + (size_t)t_rank * stride, 'a' + t_rank % 26, stride);
            const char *all = NULL;
            nodecoll_shared_allgather(MPI_IN_PLACE, (int)stride, MPI_CHAR, h, (const void **)&all);
            for (int r = 0; r < t_size; r++)
                T_CHECK(all[(size_t)r * stride] == 'a' + r % 26 && all[(size_t)r * stride + stride - 1] == 'a' + r % 26,
                        "%zu bytes: block of rank %d not seen", max, r);
        }
        size_t deltas[2] = {delta, (size_t)node_ranks}, most[2];
        PMPI_Allreduce(deltas, most, 2, MPI_UNSIGNED_LONG, MPI_MAX, MPI_COMM_WORLD);
        if (t_rank == 0)
            printf("result %9zu B: node-shared %9zu B per node (%d ranks share it); plain MPI %10zu B per node\n", max,
                   most[0], (int)most[1], max * most[1]);
        nodecoll_shared_free(&h);
        T_CHECK(nodecoll_shm_mapped_bytes() == before, "free left %zu bytes mapped",
                nodecoll_shm_mapped_bytes() - before);
    }
    return t_finish("shared_memory");
}
