# The shared heap (libnodecoll-heap.so, docs/design.md "The shared heap").
#
# A sanitizer's runtime owns malloc and must come first in the process, so the interposer
# cannot be preloaded in the ASan and TSan builds: there the heap is tested through
# MPI_Alloc_mem alone (NODECOLL_HEAP=alloc_mem), which needs no preload.
if(NODECOLL_SANITIZE OR NODECOLL_TSAN)
  set(heap_preloadable OFF)
else()
  set(heap_preloadable ON)
endif()

# The allocator alone, preloaded into a plain program: on (a small threshold, so that the
# threads' random sizes cross it; 1 MiB kept for reuse) and off (everything the C library's).
add_executable(test_heap_alloc test_heap_alloc.c)
target_link_libraries(test_heap_alloc PRIVATE Threads::Threads ${CMAKE_DL_LIBS})
set(heap_retain "NODECOLL_HEAP_RETAIN=1048576")
foreach(mode on off)
  if(NOT heap_preloadable)
    break()
  endif()
  add_test(NAME test_heap_alloc.${mode} COMMAND test_heap_alloc ${mode} 1.5)
  set_tests_properties(test_heap_alloc.${mode} PROPERTIES
    ENVIRONMENT "LD_PRELOAD=$<TARGET_FILE:nodecoll_heap>;NODECOLL_HEAP=${mode};NODECOLL_HEAP_MIN=65536;${heap_retain}"
    LABELS "${NODECOLL_MPI};heap;quick" TIMEOUT 60)
endforeach()

# Collectives on heap buffers against the host (test_heap.c): malloc'ed buffers in the
# heap, with CMA and without (single copy through the heaps alone), some ranks' buffers
# outside the heap now and then (mixed), and MPI_Alloc_mem's blocks without the preload.
# Oversubscribed MPICH is slow: 3 ranks there for the mixed case only.
if(NODECOLL_MPI STREQUAL "mpich")
  set(heap_np 2)
  set(heap_nps 2)
else()
  set(heap_np 3)
  set(heap_nps 2 3)
endif()
set(heap_on "NODECOLL_HEAP=on,NODECOLL_HEAP_MIN=65536,T_EXPECT_HEAP=1")
if(heap_preloadable)
  nodecoll_mpi_test(NAME test_heap SOURCES test_heap.c NP ${heap_nps} ARGS 1 LABELS heap quick HEAP
    ENVS "cma:${heap_on}" "heaponly:${heap_on},NODECOLL_CMA=off,NODECOLL_HEAP_RETAIN=1048576,T_STAGING_BOUND=1")
  nodecoll_mpi_test(NAME test_heap SOURCES test_heap.c NP 2 3 ARGS 1 LABELS heap quick HEAP
    ENVS "mixed:${heap_on},NODECOLL_CMA=off,T_BUFFERS=mixed")
endif()
nodecoll_mpi_test(NAME test_heap SOURCES test_heap.c NP ${heap_nps} ARGS 1 LABELS heap quick
  ENVS "allocmem:NODECOLL_HEAP=alloc_mem,NODECOLL_HEAP_MIN=65536,NODECOLL_CMA=off,T_EXPECT_HEAP=1")

# The collectives' own differential tests with every block of 4 KiB and more in the heap:
# without CMA (single copy through the heaps where every buffer is in one, votes, staging
# copies of the others) and with it (each transfer through the heap or CMA by its buffer).
if(heap_preloadable)
  set(heap_small "NODECOLL_HEAP=on,NODECOLL_HEAP_MIN=4096")
  foreach(test test_move test_neighbor test_nonblocking_move test_nonblocking_reduce)
    nodecoll_mpi_test(NAME ${test} SOURCES ${test}.c NP ${heap_np} ARGS 1 LABELS heap quick HEAP
      ENVS "heaponly:${heap_small},NODECOLL_CMA=off,NODECOLL_TEAM_PART_MIN=4K")
  endforeach()
  foreach(test test_bcast test_reduce)
    nodecoll_mpi_test(NAME ${test} SOURCES ${test}.c NP 2 ARGS 1 LABELS heap quick HEAP
      ENVS "heaponly:${heap_small},NODECOLL_CMA=off" "heapcma:${heap_small}")
  endforeach()
  # thread teams: a copy through a peer's heap is shared among the team like any copy
  nodecoll_mpi_test(NAME test_team SOURCES test_team.c NP 2 LABELS heap quick threads HEAP
    ENVS "heaponly:${heap_small},NODECOLL_CMA=off,NODECOLL_TEAM_PART_MIN=4K")
endif()

# A rank SIGKILLed in the middle of collectives on heap buffers (test_kill.sh): nothing of
# the job stays in /dev/shm, and no heap socket outlives it.  The launcher runs with the heap
# too, so its fork + exec of every rank goes through the heap's fork handlers.
set(NODECOLL_SCRIPT_EXTRA_ENV "LD_PRELOAD=$<TARGET_FILE:nodecoll_heap>;NODECOLL_HEAP=on;NODECOLL_HEAP_MIN=65536")
foreach(scenario kill-last kill-first)
  if(NOT heap_preloadable)
    break()
  endif()
  nodecoll_script_test(test_kill.heap.${scenario}.np3 3 ${CMAKE_CURRENT_SOURCE_DIR}/test_kill.sh
    ${MPIEXEC_EXECUTABLE} $<TARGET_FILE:test_kill> 3 ${scenario})
  set_property(TEST test_kill.heap.${scenario}.np3 APPEND PROPERTY LABELS heap)
endforeach()
set(NODECOLL_SCRIPT_EXTRA_ENV "")
