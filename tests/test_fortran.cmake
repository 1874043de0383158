# Fortran callers (src/mpi/fortran_table.h): test_fortran.F90 built once per binding (mpif.h,
# use mpi, use mpi_f08) against the host MPI's own Fortran library, not linked with nodecoll,
# and run with nodecoll preloaded, as a Fortran program meets it.  Optional: left out without
# a Fortran compiler or the host's Fortran support, with NODECOLL_FORTRAN off, and in
# sanitizer builds (a sanitized library cannot be preloaded into an unsanitized program).
include(CheckLanguage)
check_language(Fortran)
if(NOT CMAKE_Fortran_COMPILER OR NOT NODECOLL_FORTRAN OR NODECOLL_SANITIZE OR NODECOLL_TSAN)
  message(STATUS "nodecoll: no Fortran tests (compiler '${CMAKE_Fortran_COMPILER}', NODECOLL_FORTRAN ${NODECOLL_FORTRAN})")
  return()
endif()
enable_language(Fortran)
if(NOT MPI_Fortran_COMPILER)
  find_program(NODECOLL_MPIFORT NAMES mpifort.${NODECOLL_MPI} mpif90.${NODECOLL_MPI})
  if(NODECOLL_MPIFORT)
    set(MPI_Fortran_COMPILER "${NODECOLL_MPIFORT}" CACHE FILEPATH "MPI Fortran compiler wrapper" FORCE)
  endif()
endif()
find_package(MPI COMPONENTS Fortran)
if(NOT MPI_Fortran_FOUND OR NOT MPI_Fortran_HAVE_F77_HEADER OR NOT MPI_Fortran_HAVE_F90_MODULE
   OR NOT MPI_Fortran_HAVE_F08_MODULE)
  message(STATUS "nodecoll: no Fortran tests (the host MPI's Fortran bindings were not found)")
  return()
endif()

# binding number (test_fortran.F90's NC_BINDING) and name
foreach(binding "1;mpif" "2;mpi" "3;f08")
  list(GET binding 0 number)
  list(GET binding 1 name)
  set(t test_fortran_${name})
  add_executable(${t} test_fortran.F90)
  target_link_libraries(${t} PRIVATE MPI::MPI_Fortran ${CMAKE_DL_LIBS})
  target_compile_definitions(${t} PRIVATE NC_BINDING=${number}
                             $<$<STREQUAL:${NODECOLL_MPI},openmpi>:NC_OPEN_MPI>)
  set_target_properties(${t} PROPERTIES Fortran_PREPROCESS ON
                        Fortran_MODULE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/${t}.mod
                        COMPILE_OPTIONS "") # (not the C warnings the project sets)
  if(CMAKE_Fortran_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${t} PRIVATE -ffree-line-length-none)
    if(number LESS 3) # (mpif.h and MPICH's mpi module declare no choice buffers: mixed types)
      target_compile_options(${t} PRIVATE -fallow-argument-mismatch -w)
    endif()
  endif()
endforeach()

# One rank (every call handed to the host, but through nodecoll), one node, two emulated nodes
# (block and cyclic), up to four ranks; derived types packed by the host's MPI_Pack at every
# start (where a type freed under a pending request would show: test_fortran.F90).
set(nodes2 "nodes2:NODECOLL_RANKS_PER_NODE=2")
set(cyclic "cyclic:NODECOLL_RANKS_PER_NODE=2,NODECOLL_NODE_MAP=cyclic")
set(packed "packed:NODECOLL_DTYPE_ENGINE=0")
foreach(case "mpif;1;default:" "mpif;2;default:" "mpif;2;${packed}" "mpif;4;${nodes2}"
             "mpi;2;default:" "mpi;3;${cyclic}"
             "f08;1;default:" "f08;2;default:" "f08;2;${packed}" "f08;3;${nodes2}" "f08;4;${cyclic}")
  list(GET case 0 name)
  list(GET case 1 np)
  list(GET case 2 env)
  nodecoll_mpi_test(NAME test_fortran_${name} NP ${np} ENVS "${env}" PRELOAD LABELS fortran TIMEOUT 120)
endforeach()

# MPI_FINALIZE from Fortran reaches nodecoll: NODECOLL_STATS's report, on every rank.
foreach(name mpif mpi f08)
  nodecoll_script_test(test_preload.fortran-${name}.np2 2
    ${CMAKE_CURRENT_SOURCE_DIR}/test_preload.sh fortran ${MPIEXEC_EXECUTABLE} $<TARGET_FILE:test_fortran_${name}>
    $<TARGET_FILE:nodecoll> ${CMAKE_BINARY_DIR} ${CMAKE_COMMAND} 2)
  set_property(TEST test_preload.fortran-${name}.np2 APPEND PROPERTY LABELS fortran)
endforeach()
