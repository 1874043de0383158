# The engine without MPI (issue 18): threads as the ranks of one node run Barrier and Bcast
# through the registry as blocking calls and as nonblocking operations in flight, on a ring
# that wraps many times; also the registry's choices.  Labelled `threads` so that the TSan
# build runs it too.
add_executable(test_engine test_engine.c $<TARGET_OBJECTS:nodecoll_core> $<TARGET_OBJECTS:nodecoll_coll>)
target_include_directories(test_engine PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include)
target_compile_definitions(test_engine PRIVATE NODECOLL_WITHOUT_MPI)
target_link_libraries(test_engine PRIVATE Threads::Threads rt PkgConfig::HWLOC)
add_test(NAME test_engine COMMAND test_engine 4 3000)
add_test(NAME test_engine.oversubscribed COMMAND test_engine 7 1500 7)
add_test(NAME test_engine.grouped COMMAND test_engine 11 1500 5 grouped)
set_tests_properties(test_engine test_engine.oversubscribed test_engine.grouped PROPERTIES
  LABELS "${NODECOLL_MPI};quick;threads" TIMEOUT 300)
