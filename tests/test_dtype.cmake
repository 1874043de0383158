# Datatype engine (issue 6).  test_dtype_core: the core engine alone (no MPI) on random
# datatype trees against a reference layout, plus fixed cases; a second seed as a fuzz run.
add_executable(test_dtype_core test_dtype_core.c ${PROJECT_SOURCE_DIR}/src/core/dtype.c)
target_include_directories(test_dtype_core PRIVATE ${PROJECT_SOURCE_DIR}/src ${CMAKE_CURRENT_SOURCE_DIR})
add_test(NAME test_dtype_core COMMAND test_dtype_core 3000 6)
add_test(NAME test_dtype_core.fuzz COMMAND test_dtype_core 3000 20261123)
set_tests_properties(test_dtype_core test_dtype_core.fuzz PROPERTIES
  LABELS "${NODECOLL_MPI};quick" TIMEOUT 120 ENVIRONMENT "ASAN_OPTIONS=detect_leaks=1")
