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
