# NODECOLL_CHECK=1: mismatched calls (collective, root, op, length, order, one rank's bad
# arguments) are reported with the right lines and MPI_ERR_ARG, every rank stays in step, and
# correct calls raise no alarm; one node and emulated nodes (block and cyclic).
nodecoll_mpi_test(NAME test_check SOURCES test_check.c NP 1 2 3
  ENVS "default:NODECOLL_CHECK=1" "nodes2:NODECOLL_CHECK=1,NODECOLL_RANKS_PER_NODE=2"
       "cyclic:NODECOLL_CHECK=1,NODECOLL_RANKS_PER_NODE=2,NODECOLL_NODE_MAP=cyclic"
       "single:NODECOLL_CHECK=1,NODECOLL_RANKS_PER_NODE=1"
  LABELS robustness quick TIMEOUT 60)
