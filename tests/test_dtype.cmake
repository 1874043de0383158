# Datatype engine (issue 6).  test_dtype_core: the core engine alone (no MPI) on random
# datatype trees against a reference layout, plus fixed cases; test_dtype_core.fuzz runs its
# fuzz target (LLVMFuzzerTestOneInput, which scripts/fuzz.sh builds for libFuzzer) on random
# inputs.
add_executable(test_dtype_core test_dtype_core.c ${PROJECT_SOURCE_DIR}/src/core/dtype.c)
target_include_directories(test_dtype_core PRIVATE ${PROJECT_SOURCE_DIR}/src ${CMAKE_CURRENT_SOURCE_DIR})
add_test(NAME test_dtype_core COMMAND test_dtype_core 3000 6)
add_test(NAME test_dtype_core.fuzz COMMAND test_dtype_core 5000 20261123 fuzz)
set_tests_properties(test_dtype_core test_dtype_core.fuzz PROPERTIES
  LABELS "${NODECOLL_MPI};quick" TIMEOUT 120 ENVIRONMENT "ASAN_OPTIONS=detect_leaks=1")

# test_dtype: the engine against the host's MPI_Pack / MPI_Unpack on random datatype trees
# (one rank), and MPI_Bcast of derived datatypes against PMPI_Bcast (2 and 3 ranks).  Linked
# statically: it calls the decoder directly.
add_executable(test_dtype test_dtype.c)
target_link_libraries(test_dtype PRIVATE nodecoll_static MPI::MPI_C)
target_include_directories(test_dtype PRIVATE ${PROJECT_SOURCE_DIR}/src ${CMAKE_CURRENT_SOURCE_DIR})
nodecoll_mpi_test(NAME test_dtype NP 1 ARGS 3000 1 LABELS quick)
# "iov": every single-copy read goes straight into the runs; "chain": the middle rank
# forwards from a staging copy of its derived datatype; "nodes2": leaders stage for the bridge.
nodecoll_mpi_test(NAME test_dtype NP 2 ENVS "default:" "cma:NODECOLL_BCAST_ALG=cma"
  "iov:NODECOLL_BCAST_ALG=cma,NODECOLL_DTYPE_IOV_MIN_RUN=1,NODECOLL_CMA_CHUNK=4K"
  "host:NODECOLL_DTYPE_ENGINE=0" ARGS 60 2 LABELS quick)
nodecoll_mpi_test(NAME test_dtype NP 3 ENVS "shm:NODECOLL_BCAST_ALG=shm,NODECOLL_SEGMENT_SIZE=4K"
  "chain:NODECOLL_BCAST_ALG=cma,NODECOLL_BCAST_RADIX=1,NODECOLL_CMA_CHUNK=4K"
  "nodes2:NODECOLL_RANKS_PER_NODE=2" ARGS 20 3 LABELS quick)
