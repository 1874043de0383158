# Conformance case generator (tests/test_conform.c, docs/design.md (section "Conformance")): every collective
# through PMPI (the oracle) and through nodecoll on the same inputs.  It covers garbage in
# insignificant arguments, MPI_IN_PLACE, zero counts with NULL buffers, MPI_BOTTOM, derived
# and duplicated datatypes, odd communicators, and error classes.  A hang or crash fails with
# the case named.
# ARGS: number of generated cases, seed (each rank count gets its own seed).  The first
# 17 x 8 cases are the systematic (call x IN_PLACE x garbage x zero) matrix.  Every case is
# small, and a run of 300-400 cases takes 1-3 s even at 5 oversubscribed ranks under MPICH.
# Oversubscribed MPICH (np >= 3) still runs fewer cases.  A developer runs more with e.g.
#   mpiexec -np 4 build/openmpi/tests/test_conform 20000 7
# and reruns a failure alone with --only=K (same np, seed and NODECOLL_* settings).
if(NODECOLL_MPI STREQUAL "mpich")
  set(NODECOLL_CONFORM_WIDE 200)
else()
  set(NODECOLL_CONFORM_WIDE 300)
endif()
set(NODECOLL_CONFORM_LABELS quick conformance)
nodecoll_mpi_test(NAME test_conform SOURCES test_conform.c NP 1 ARGS 300 11
  LABELS ${NODECOLL_CONFORM_LABELS} TIMEOUT 120)
nodecoll_mpi_test(NAME test_conform SOURCES test_conform.c NP 2
  ENVS "default:"
       "nodes2:NODECOLL_RANKS_PER_NODE=1"
       "bcastshm:NODECOLL_BCAST_ALG=shm,NODECOLL_SEGMENT_SIZE=4K,NODECOLL_SEGMENTS=2"
       "reducetree:NODECOLL_REDUCE_ALG=tree,NODECOLL_REDUCE_FANIN=2,NODECOLL_SEGMENT_SIZE=4K"
       "nocma:NODECOLL_CMA=off"
       "slot:NODECOLL_MOVE_SLOT=256"
       "nodtype:NODECOLL_DTYPE_ENGINE=0,NODECOLL_REPRODUCIBLE=1"
  ARGS 400 12 LABELS ${NODECOLL_CONFORM_LABELS} TIMEOUT 120)
nodecoll_mpi_test(NAME test_conform SOURCES test_conform.c NP 3
  ENVS "default:"
       "nodes3:NODECOLL_RANKS_PER_NODE=1"
       "nodes2:NODECOLL_RANKS_PER_NODE=2"
  ARGS ${NODECOLL_CONFORM_WIDE} 13 LABELS ${NODECOLL_CONFORM_LABELS} TIMEOUT 120)
nodecoll_mpi_test(NAME test_conform SOURCES test_conform.c NP 4
  ENVS "nodes2:NODECOLL_RANKS_PER_NODE=2"
       "cyclic:NODECOLL_RANKS_PER_NODE=2,NODECOLL_NODE_MAP=cyclic"
       "forced:NODECOLL_BCAST_ALG=shm,NODECOLL_SEGMENT_SIZE=4K,NODECOLL_REDUCE_ALG=tree,NODECOLL_MOVE_SLOT=256"
  ARGS ${NODECOLL_CONFORM_WIDE} 14 LABELS ${NODECOLL_CONFORM_LABELS} TIMEOUT 120)
nodecoll_mpi_test(NAME test_conform SOURCES test_conform.c NP 5
  ENVS "cyclic:NODECOLL_RANKS_PER_NODE=2,NODECOLL_NODE_MAP=cyclic"
  ARGS ${NODECOLL_CONFORM_WIDE} 15 LABELS ${NODECOLL_CONFORM_LABELS} TIMEOUT 120)
