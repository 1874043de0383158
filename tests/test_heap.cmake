# The shared heap (libnodecoll-heap.so, docs/design.md "The shared heap").
# The allocator alone, preloaded into a plain program: on (a small threshold, so that the
# threads' random sizes cross it; 1 MiB kept for reuse) and off (everything the C library's).
add_executable(test_heap_alloc test_heap_alloc.c)
target_link_libraries(test_heap_alloc PRIVATE Threads::Threads ${CMAKE_DL_LIBS})
foreach(mode on off)
  add_test(NAME test_heap_alloc.${mode} COMMAND test_heap_alloc ${mode} 1.5)
  set_tests_properties(test_heap_alloc.${mode} PROPERTIES
    ENVIRONMENT "LD_PRELOAD=$<TARGET_FILE:nodecoll_heap>;NODECOLL_HEAP=${mode};NODECOLL_HEAP_MIN=65536;NODECOLL_HEAP_RETAIN=1048576"
    LABELS "${NODECOLL_MPI};heap;quick" TIMEOUT 60)
endforeach()

# Collectives on heap buffers against the host (test_heap.c): malloc'ed buffers in the
# heap, with CMA and without (single copy through the heaps alone), some ranks' buffers
# outside the heap now and then (mixed), and MPI_Alloc_mem's blocks without the preload.
set(heap_on "NODECOLL_HEAP=on,NODECOLL_HEAP_MIN=65536,T_EXPECT_HEAP=1")
nodecoll_mpi_test(NAME test_heap SOURCES test_heap.c NP 2 3 ARGS 1 LABELS heap quick HEAP
  ENVS "cma:${heap_on}" "heaponly:${heap_on},NODECOLL_CMA=off" "mixed:${heap_on},NODECOLL_CMA=off,T_BUFFERS=mixed")
nodecoll_mpi_test(NAME test_heap SOURCES test_heap.c NP 2 3 ARGS 1 LABELS heap quick
  ENVS "allocmem:NODECOLL_HEAP=alloc_mem,NODECOLL_HEAP_MIN=65536,NODECOLL_CMA=off,T_EXPECT_HEAP=1")
