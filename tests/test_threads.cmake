# MPI_THREAD_MULTIPLE: 4 threads per rank, each on its own communicator.  MPICH serialises
# threads on one global lock and takes ~8 ms per synchronising step when oversubscribed, so
# its 3-rank cases (2-4 minutes) are left to Open MPI.
set(NODECOLL_THREAD_NP 1 2 3)
if(NODECOLL_MPI STREQUAL "mpich")
  set(NODECOLL_THREAD_NP 1 2)
endif()
nodecoll_mpi_test(NAME test_threads SOURCES test_threads.c NP ${NODECOLL_THREAD_NP}
                  ENVS "default:" "nodes2:NODECOLL_RANKS_PER_NODE=2,NODECOLL_NODE_MAP=cyclic" LABELS quick threads)
# Thread teams (nodecoll_team_*), with small shares so every large copy is split.
nodecoll_mpi_test(NAME test_team SOURCES test_team.c NP 1 2 3
                  ENVS "default:" "split:NODECOLL_TEAM_PART_MIN=4K,NODECOLL_CMA_CHUNK=64K"
                       "nodes2:NODECOLL_RANKS_PER_NODE=2,NODECOLL_TEAM_PART_MIN=16K" LABELS quick threads)
