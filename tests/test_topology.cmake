# Topology levels (issue 19).  Without MPI: the groups, the trees shaped from them and the
# cost model's bounds for 64-256 modelled ranks.
add_executable(test_model test_model.c $<TARGET_OBJECTS:nodecoll_core>)
target_include_directories(test_model PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include)
target_compile_definitions(test_model PRIVATE NODECOLL_WITHOUT_MPI)
target_link_libraries(test_model PRIVATE Threads::Threads rt PkgConfig::HWLOC)
add_test(NAME test_model COMMAND test_model)
set_tests_properties(test_model PROPERTIES LABELS "${NODECOLL_MPI};quick" TIMEOUT 300)
