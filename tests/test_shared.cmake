# Node-shared results (nodecoll_shared_*): differential against PMPI with random sizes and
# delays, on one node and on 1-3 emulated nodes (blocked, cyclic, uneven), with the debug
# page protection on, and with nodecoll disabled (one private copy per rank).
set(NODECOLL_SHARED_ENVS
  "default:"
  "nodes2:NODECOLL_RANKS_PER_NODE=2"
  "cyclic:NODECOLL_RANKS_PER_NODE=2,NODECOLL_NODE_MAP=cyclic"
  "single:NODECOLL_RANKS_PER_NODE=1"
  "debug:NODECOLL_SHARED_DEBUG=1,NODECOLL_SHARED_CHUNK=256"
  "disabled:NODECOLL_ENABLE=0")
nodecoll_mpi_test(NAME test_shared SOURCES test_shared.c NP 1 LABELS quick shared)
nodecoll_mpi_test(NAME test_shared SOURCES test_shared.c NP 2 3 4 ENVS ${NODECOLL_SHARED_ENVS} LABELS quick shared)
# 5 ranks in nodes of 2 are three uneven nodes; 6 ranks in nodes of 2, three even ones.
# (MPICH, 3x oversubscribed, takes seconds per case: there only the multi-node placements.)
if(NODECOLL_MPI STREQUAL "mpich")
  nodecoll_mpi_test(NAME test_shared SOURCES test_shared.c NP 5 ENVS "nodes2:NODECOLL_RANKS_PER_NODE=2" LABELS quick shared)
  nodecoll_mpi_test(NAME test_shared SOURCES test_shared.c NP 6
    ENVS "cyclic:NODECOLL_RANKS_PER_NODE=2,NODECOLL_NODE_MAP=cyclic" LABELS quick shared)
else()
  nodecoll_mpi_test(NAME test_shared SOURCES test_shared.c NP 5 6
    ENVS "default:" "nodes2:NODECOLL_RANKS_PER_NODE=2" "cyclic:NODECOLL_RANKS_PER_NODE=2,NODECOLL_NODE_MAP=cyclic"
    LABELS quick shared)
endif()
# Misuse: error classes, handler calls and messages; with the debug setting, page protection.
nodecoll_mpi_test(NAME test_shared_errors SOURCES test_shared_errors.c NP 1 2 3
  ENVS "default:" "debug:NODECOLL_SHARED_DEBUG=1" LABELS robustness quick shared TIMEOUT 60)
# Memory per result: its size plus a page, independent of ranks per node.
nodecoll_mpi_test(NAME test_shared_memory SOURCES test_shared_memory.c NP 1 2 4 6
  ENVS "default:" "nodes2:NODECOLL_RANKS_PER_NODE=2" LABELS quick shared TIMEOUT 60)
