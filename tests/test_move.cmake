# Data movement (issue 5): Gather(v), Scatter(v), Allgather(v), Alltoall(v,w) against the
# host MPI, one to three emulated nodes (block and cyclic), 1 to 5 ranks.  The argument is
# the number of random cases per count pattern.  Oversubscribed MPICH takes ~8 ms per host
# step, so np >= 3 runs fewer cases there.
if(NODECOLL_MPI STREQUAL "mpich")
  set(NODECOLL_MOVE_CASES 1)
else()
  set(NODECOLL_MOVE_CASES 2)
endif()
set(NODECOLL_MOVE_SMALL_SLOT "slot:NODECOLL_MOVE_SLOT=256")
# push: Allgather's ranks write their blocks into every result from 1 KiB blocks on (in place
# too, every rank count), instead of from NODECOLL_ALLGATHER_PUSH_MIN's 64 KiB.
set(NODECOLL_MOVE_PUSH "push:NODECOLL_ALLGATHER_PUSH_MIN=1K,NODECOLL_MOVE_SLOT=256")
nodecoll_mpi_test(NAME test_move SOURCES test_move.c NP 1 2 ENVS "default:" ${NODECOLL_MOVE_SMALL_SLOT}
  "nodes2:NODECOLL_RANKS_PER_NODE=1" ${NODECOLL_MOVE_PUSH} ARGS 2 LABELS quick)
nodecoll_mpi_test(NAME test_move SOURCES test_move.c NP 3 ENVS ${NODECOLL_MOVE_PUSH} ARGS ${NODECOLL_MOVE_CASES} LABELS quick)
nodecoll_mpi_test(NAME test_move SOURCES test_move.c NP 3 4
  ENVS "default:" "nodes2:NODECOLL_RANKS_PER_NODE=2" "cyclic:NODECOLL_RANKS_PER_NODE=2,NODECOLL_NODE_MAP=cyclic"
  ARGS ${NODECOLL_MOVE_CASES} LABELS quick)
nodecoll_mpi_test(NAME test_move SOURCES test_move.c NP 5
  ENVS "nodes3:NODECOLL_RANKS_PER_NODE=2,NODECOLL_NODE_MAP=cyclic,NODECOLL_MOVE_SLOT=1K,NODECOLL_ALLTOALL_WINDOW=1,NODECOLL_ALLTOALL_SMALL=64" ARGS 1)
# NODECOLL_CHECK=1 on the whole differential matrix: no false alarm on any shape, root or
# placement (v-forms whose lengths only the root knows, in place, zero counts).
nodecoll_mpi_test(NAME test_move SOURCES test_move.c NP 3
  ENVS "check:NODECOLL_CHECK=1,NODECOLL_RANKS_PER_NODE=2,NODECOLL_NODE_MAP=cyclic" ARGS 1 LABELS quick)
