# MPI-4's large-count forms (issue 17, part 2), where the host has them (MPICH 4; not Open MPI
# 4.1): every MPI_<Coll>_c, MPI_I<coll>_c and MPI_<Coll>_init_c against the host's PMPI_<Coll>_c,
# one to three emulated nodes (block and cyclic), 1 to 4 ranks.  The argument is the number of
# rounds per collective and form.  Oversubscribed MPICH takes ~8 ms per host step, so np >= 3
# runs one round.
if(NODECOLL_HAVE_MPI_LARGE_COUNT)
  nodecoll_mpi_test(NAME test_large_count SOURCES test_large_count.c NP 1 2
    ENVS "default:" "nodes2:NODECOLL_RANKS_PER_NODE=1" ARGS 3 LABELS quick)
  nodecoll_mpi_test(NAME test_large_count SOURCES test_large_count.c NP 3 4
    ENVS "nodes2:NODECOLL_RANKS_PER_NODE=2" "cyclic:NODECOLL_RANKS_PER_NODE=2,NODECOLL_NODE_MAP=cyclic"
    ARGS 1 LABELS quick)
  nodecoll_mpi_test(NAME test_large_count SOURCES test_large_count.c NP 3 ARGS 1 LABELS quick)
endif()
# Where int cannot go, at 2 ranks: a Bcast and an in-place Allreduce of 2^31 + 4099 bytes
# (~2.3 GiB per rank, skipped when MemAvailable is short), v-forms with displacements past
# INT_MAX and UINT_MAX, a datatype of 2 GiB extent.  Its own name and label (`huge`).
if(NODECOLL_HAVE_MPI_LARGE_COUNT)
  nodecoll_mpi_test(NAME test_large_count_huge SOURCES test_large_count_huge.c NP 2 LABELS huge TIMEOUT 600)
endif()
# Fortran: MPICH's mpi_f08 binding hands INTEGER(KIND=MPI_COUNT_KIND) counts to the C _c
# functions, which nodecoll serves (preloaded, as a Fortran program meets it).  Where the
# Fortran tests are built (test_fortran.cmake, included before this file).
if(NODECOLL_HAVE_MPI_LARGE_COUNT AND TARGET test_fortran_f08)
  add_executable(test_large_count_f08 test_large_count_f08.F90)
  target_link_libraries(test_large_count_f08 PRIVATE MPI::MPI_Fortran ${CMAKE_DL_LIBS})
  set_target_properties(test_large_count_f08 PROPERTIES Fortran_PREPROCESS ON
                        Fortran_MODULE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/test_large_count_f08.mod
                        COMPILE_OPTIONS "")
  nodecoll_mpi_test(NAME test_large_count_f08 NP 1 2 ENVS "default:" PRELOAD LABELS fortran TIMEOUT 120)
  nodecoll_mpi_test(NAME test_large_count_f08 NP 3
    ENVS "cyclic:NODECOLL_RANKS_PER_NODE=2,NODECOLL_NODE_MAP=cyclic" PRELOAD LABELS fortran TIMEOUT 120)
endif()
