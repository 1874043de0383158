# Neighbourhood collectives (issue 17, part 3): every call and form on random Cartesian,
# graph and distributed-graph topologies against MPI's definition (and the host where it
# agrees), 1 to 5 ranks, one to three emulated nodes (block and cyclic), the large-count _c
# forms too where the host has them (MPICH 4), nodecoll's counters checked after each call.
# The argument is the number of random topologies per kind.
nodecoll_mpi_test(NAME test_neighbor SOURCES test_neighbor.c NP 1 2 ENVS "default:" "nodes2:NODECOLL_RANKS_PER_NODE=1"
  ARGS 3 LABELS quick)
nodecoll_mpi_test(NAME test_neighbor SOURCES test_neighbor.c NP 3 4
  ENVS "default:" "cyclic:NODECOLL_RANKS_PER_NODE=2,NODECOLL_NODE_MAP=cyclic" ARGS 2 LABELS quick)
nodecoll_mpi_test(NAME test_neighbor SOURCES test_neighbor.c NP 5
  ENVS "nodes3:NODECOLL_RANKS_PER_NODE=2,NODECOLL_MOVE_SLOT=256,NODECOLL_NEIGHBOR_SMALL=64,NODECOLL_ALLTOALL_WINDOW=1" ARGS 1)
# NODECOLL_CHECK=1: no false alarm on calls whose lengths differ from rank to rank.
nodecoll_mpi_test(NAME test_neighbor SOURCES test_neighbor.c NP 3
  ENVS "check:NODECOLL_CHECK=1,NODECOLL_RANKS_PER_NODE=2,NODECOLL_NODE_MAP=cyclic" ARGS 1 LABELS quick)
