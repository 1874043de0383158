# Reductions (issue 4): every algorithm, one to three emulated nodes (block and cyclic),
# reproducible mode, 1 to 6 ranks.  The argument is the stride through the type x op x
# collective matrix (1: every case).  Beyond 2 ranks the machine is oversubscribed; the
# multi-node cases then wait on the host MPI's own steps, which take ~8 ms each under
# oversubscribed MPICH, so those run a sparser sample there.
set(NODECOLL_REDUCE_NODE_ENVS
  "default:"
  "tree:NODECOLL_REDUCE_ALG=tree,NODECOLL_REDUCE_FANIN=2,NODECOLL_SEGMENT_SIZE=4K,NODECOLL_SEGMENTS=2"
  "cma:NODECOLL_REDUCE_ALG=cma,NODECOLL_REDUCE_CHUNK=4K"
  "flat:NODECOLL_REDUCE_ALG=flat,NODECOLL_CMA=off"
  "shm:NODECOLL_CMA=off,NODECOLL_SEGMENT_SIZE=4K"
  "rd:NODECOLL_REDUCE_ALG=recursive_doubling,NODECOLL_SEGMENT_SIZE=4K,NODECOLL_SEGMENTS=2"
  "repro:NODECOLL_REPRODUCIBLE=1")
set(NODECOLL_REDUCE_MULTI_ENVS
  "nodes2:NODECOLL_RANKS_PER_NODE=2"
  "cyclic:NODECOLL_RANKS_PER_NODE=2,NODECOLL_NODE_MAP=cyclic"
  "reprocyclic:NODECOLL_REPRODUCIBLE=1,NODECOLL_RANKS_PER_NODE=2,NODECOLL_NODE_MAP=cyclic")
if(NODECOLL_MPI STREQUAL "mpich")
  set(NODECOLL_REDUCE_MULTI_STRIDE 16)
else()
  set(NODECOLL_REDUCE_MULTI_STRIDE 2)
endif()
math(EXPR NODECOLL_REDUCE_MULTI_STRIDE6 "${NODECOLL_REDUCE_MULTI_STRIDE} * 2")
nodecoll_mpi_test(NAME test_reduce SOURCES test_reduce.c NP 1 ARGS 3 LABELS quick)
nodecoll_mpi_test(NAME test_reduce SOURCES test_reduce.c NP 2
  ENVS ${NODECOLL_REDUCE_NODE_ENVS} ${NODECOLL_REDUCE_MULTI_ENVS} ARGS 1 LABELS quick)
nodecoll_mpi_test(NAME test_reduce SOURCES test_reduce.c NP 3 4 ENVS ${NODECOLL_REDUCE_NODE_ENVS} ARGS 2 LABELS quick)
nodecoll_mpi_test(NAME test_reduce SOURCES test_reduce.c NP 3 4 ENVS ${NODECOLL_REDUCE_MULTI_ENVS}
  ARGS ${NODECOLL_REDUCE_MULTI_STRIDE} LABELS quick)
nodecoll_mpi_test(NAME test_reduce SOURCES test_reduce.c NP 6
  ENVS "default:" "tree:NODECOLL_REDUCE_ALG=tree,NODECOLL_REDUCE_FANIN=2" ARGS 4 LABELS quick)
nodecoll_mpi_test(NAME test_reduce SOURCES test_reduce.c NP 6
  ENVS "nodes3:NODECOLL_RANKS_PER_NODE=2" "cyclic3:NODECOLL_RANKS_PER_NODE=2,NODECOLL_NODE_MAP=cyclic"
  ARGS ${NODECOLL_REDUCE_MULTI_STRIDE6} LABELS quick)
# Chains of inline flags up to the longest allowed (NODECOLL_REDUCE_INLINE_MAX): posted first
# flag last, under every algorithm that publishes fragments, a tree with inner ranks, a root
# that is not the tree's top, and resumable runs.
nodecoll_mpi_test(NAME test_reduce SOURCES test_reduce.c NP 2 3 4
  ENVS "chain:NODECOLL_REDUCE_INLINE_MAX=1792"
       "chaintree:NODECOLL_REDUCE_INLINE_MAX=1792,NODECOLL_REDUCE_ALG=tree,NODECOLL_REDUCE_FANIN=2"
       "chainbackground:NODECOLL_TEST_BACKGROUND=1,NODECOLL_REDUCE_INLINE_MAX=1792,NODECOLL_REDUCE_ALG=flat"
  ARGS ${NODECOLL_REDUCE_MULTI_STRIDE} LABELS quick)
# (across emulated nodes: the node steps, the forward step and Scan's node chains)
nodecoll_mpi_test(NAME test_reduce SOURCES test_reduce.c NP 3 4
  ENVS "chaincyclic:NODECOLL_REDUCE_INLINE_MAX=1792,NODECOLL_RANKS_PER_NODE=2,NODECOLL_NODE_MAP=cyclic"
       "chainnodes:NODECOLL_REDUCE_INLINE_MAX=1792,NODECOLL_RANKS_PER_NODE=2"
  ARGS ${NODECOLL_REDUCE_MULTI_STRIDE} LABELS quick)
# Rank 0 keeps a nonblocking Barrier outstanding through every reduction: its reductions run
# as resumable operations that return to the engine at every wait, on one node and across
# nodes (where its bridge steps must still meet the other leaders' blocking ones).
nodecoll_mpi_test(NAME test_reduce SOURCES test_reduce.c NP 2 3
  ENVS "background:NODECOLL_TEST_BACKGROUND=1"
       "backgroundtree:NODECOLL_TEST_BACKGROUND=1,NODECOLL_REDUCE_ALG=tree,NODECOLL_REDUCE_FANIN=2,NODECOLL_SEGMENT_SIZE=4K,NODECOLL_SEGMENTS=2"
       "backgroundshm:NODECOLL_TEST_BACKGROUND=1,NODECOLL_CMA=off,NODECOLL_SEGMENT_SIZE=4K"
       "backgroundrd:NODECOLL_TEST_BACKGROUND=1,NODECOLL_REDUCE_ALG=recursive_doubling,NODECOLL_SEGMENT_SIZE=4K,NODECOLL_SEGMENTS=2"
       "backgroundcma:NODECOLL_TEST_BACKGROUND=1,NODECOLL_REDUCE_ALG=cma,NODECOLL_REDUCE_CHUNK=4K"
  ARGS 2 LABELS quick)
nodecoll_mpi_test(NAME test_reduce SOURCES test_reduce.c NP 3
  ENVS "backgroundnodes2:NODECOLL_TEST_BACKGROUND=1,NODECOLL_RANKS_PER_NODE=2"
       "backgroundcyclic:NODECOLL_TEST_BACKGROUND=1,NODECOLL_RANKS_PER_NODE=2,NODECOLL_NODE_MAP=cyclic"
  ARGS ${NODECOLL_REDUCE_MULTI_STRIDE} LABELS quick)
# Settings a process reads for itself (the datatype engine) differ between ranks: the
# reductions still take the same path on every rank.  (Open MPI only: this sends user ops on
# types with gaps to the host, and MPICH 4.0.2's own Reduce_scatter_block frees twice there.)
if(NODECOLL_MPI STREQUAL "openmpi")
  nodecoll_mpi_test(NAME test_reduce SOURCES test_reduce.c NP 2 ENVS "mixedengine:NODECOLL_TEST_MIXED_ENGINE=1"
    ARGS 3 LABELS quick)
endif()
# The predefined Fortran datatypes (called from C): every op MPI-4.0 6.9.2 allows on each,
# served by nodecoll (a fallback fails the test), LOGICAL checked against the host's own rule.
set(NODECOLL_FTYPES "NODECOLL_TEST_FORTRAN_TYPES=1")
nodecoll_mpi_test(NAME test_reduce SOURCES test_reduce.c NP 1 2 4 ENVS "ftypes:${NODECOLL_FTYPES}" ARGS 1 LABELS quick)
nodecoll_mpi_test(NAME test_reduce SOURCES test_reduce.c NP 2 ENVS
  "ftypestree:${NODECOLL_FTYPES},NODECOLL_REDUCE_ALG=tree,NODECOLL_SEGMENT_SIZE=4K,NODECOLL_SEGMENTS=2"
  "ftypesshm:${NODECOLL_FTYPES},NODECOLL_CMA=off,NODECOLL_SEGMENT_SIZE=4K" ARGS 1 LABELS quick)
nodecoll_mpi_test(NAME test_reduce SOURCES test_reduce.c NP 3 ENVS
  "ftypescyclic:${NODECOLL_FTYPES},NODECOLL_RANKS_PER_NODE=2,NODECOLL_NODE_MAP=cyclic"
  ARGS ${NODECOLL_REDUCE_MULTI_STRIDE} LABELS quick)
