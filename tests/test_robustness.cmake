# Robustness: communicator lifecycle, error classes, killed jobs, preloading and installing.
nodecoll_mpi_test(NAME test_lifecycle SOURCES test_lifecycle.c NP 1 2 3 4
  ENVS "default:" "nodes2:NODECOLL_RANKS_PER_NODE=2" "shmcap:NODECOLL_SHM_CAP=256K,NODECOLL_SEGMENT_SIZE=4K,NODECOLL_SEGMENTS=2"
  LABELS robustness TIMEOUT 120)
# Bad arguments give the host MPI's error class and handler calls; the state stays usable.
nodecoll_mpi_test(NAME test_errors SOURCES test_errors.c NP 1 2 3 LABELS robustness TIMEOUT 60)
