# Topology levels (issue 19).  Without MPI: the groups, the trees shaped from them and the
# cost model's bounds for 64-256 modelled ranks.
function(nodecoll_core_test name)
  add_executable(${name} ${name}.c $<TARGET_OBJECTS:nodecoll_core>)
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include)
  target_compile_definitions(${name} PRIVATE NODECOLL_WITHOUT_MPI)
  target_link_libraries(${name} PRIVATE Threads::Threads rt PkgConfig::HWLOC)
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES LABELS "${NODECOLL_MPI};quick" TIMEOUT 300)
endfunction()
nodecoll_core_test(test_model)

# With MPI, on synthetic topologies (nodecoll completes "... core:N" with the PU level hwloc
# 2.9 requires), ranks dealt onto them by NODECOLL_TOPO_PLACE (auto: block on a synthetic
# topology): every byte against the host's PMPI calls, and the registry's choices.  The
# topology and levels are arguments (the environment lists cannot carry their spaces, colons
# and commas).  8-16 ranks oversubscribed: Open MPI mostly (MPICH 4.0's own collectives take
# ~8 ms per step there).
function(nodecoll_topology_test tag np cases)
  nodecoll_mpi_test(NAME test_topology SOURCES test_topology.c NP ${np} ENVS "${tag}:" ARGS ${cases} ${ARGN}
                    LABELS quick)
endfunction()
nodecoll_topology_test(block 8 60 "HWLOC_SYNTHETIC=package:2 numa:2 l3:2 core:2" NODECOLL_TEST_GROUPED=1)
if(NODECOLL_MPI STREQUAL "openmpi")
  nodecoll_topology_test(flat 8 20 "HWLOC_SYNTHETIC=package:1 numa:1 l3:1 core:8" NODECOLL_TEST_GROUPED=0)
  nodecoll_topology_test(cyclic 12 60 "HWLOC_SYNTHETIC=package:2 numa:4 l3:2 core:8" NODECOLL_TOPO_PLACE=cyclic
                         NODECOLL_TEST_GROUPED=1)
  nodecoll_topology_test(nodes2 12 40 "HWLOC_SYNTHETIC=package:2 numa:2 core:4" NODECOLL_RANKS_PER_NODE=6
                         NODECOLL_TOPO_PLACE=scatter NODECOLL_TEST_GROUPED=1)
  nodecoll_topology_test(scatter 16 60 "HWLOC_SYNTHETIC=package:2 numa:2 l3:2 core:4" NODECOLL_TOPO_PLACE=scatter
                         NODECOLL_TOPO_LEVELS=package,numa,l3,core NODECOLL_BCAST_ALG=shm NODECOLL_SEGMENT_SIZE=4K
                         NODECOLL_SEGMENTS=2 NODECOLL_TEST_GROUPED=1)
  nodecoll_topology_test(oversub 9 60 "HWLOC_SYNTHETIC=package:2 numa:2 core:2" NODECOLL_TOPO_LEVELS=numa,core
                         NODECOLL_REDUCE_ALG=tree NODECOLL_BARRIER_FANIN=2 NODECOLL_BCAST_RADIX=2
                         NODECOLL_TEST_GROUPED=1)
  # An XML export (HWLOC_XMLFILE), written by hwloc's lstopo when it is installed.
  find_program(NODECOLL_LSTOPO NAMES lstopo-no-graphics lstopo)
  if(NODECOLL_LSTOPO)
    set(xml ${CMAKE_CURRENT_BINARY_DIR}/topology-2x2x2x2.xml)
    add_test(NAME topology_xml_export
             COMMAND ${CMAKE_COMMAND} -E env "HWLOC_SYNTHETIC=package:2 numa:2 l3:2 core:2 pu:1"
                     ${NODECOLL_LSTOPO} -f --of xml ${xml})
    set_tests_properties(topology_xml_export PROPERTIES FIXTURES_SETUP topology_xml LABELS "${NODECOLL_MPI};quick")
    nodecoll_topology_test(xml 8 30 HWLOC_XMLFILE=${xml} NODECOLL_TOPO_PLACE=cyclic NODECOLL_TEST_GROUPED=1)
    set_tests_properties(test_topology.np8.xml PROPERTIES FIXTURES_REQUIRED topology_xml)
  endif()
endif()

# Tuning rules (issue 19 part 3).  Without MPI: the file format and every way a file can be
# wrong.
nodecoll_core_test(test_tune_rules)
# With MPI: the tuner's round trip (tune at 2 ranks, then every rule's algorithm must serve
# calls in its range, with the host's bytes, and its parameters, layout and levels must be in
# force), and crafted files: ones the job must follow (format 1; format 2 with a layout and
# chunks; the same under settings from the environment, which win; levels on a synthetic
# topology), and malformed, another version, another MPI, another rank count, a layout out of
# range, which must leave the built-in choices and say why, naming the line.
add_executable(test_tune test_tune.c)
target_link_libraries(test_tune PRIVATE nodecoll_static MPI::MPI_C)
target_include_directories(test_tune PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/src)
if(TARGET nodecoll-tune)
  add_test(NAME nodecoll_tune.np2.quick
           COMMAND ${MPIEXEC_EXECUTABLE} -np 2 $<TARGET_FILE:nodecoll-tune> --quick
                   --out ${CMAKE_CURRENT_BINARY_DIR}/tuned.rules)
  set_tests_properties(nodecoll_tune.np2.quick PROPERTIES FIXTURES_SETUP tuned_rules TIMEOUT 300
    LABELS "${NODECOLL_MPI};quick" RESOURCE_LOCK cores
    ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;ASAN_OPTIONS=detect_leaks=0")
  nodecoll_mpi_test(NAME test_tune SOURCES test_tune.c NP 2 ENVS "roundtrip:"
                    ARGS ${CMAKE_CURRENT_BINARY_DIR}/tuned.rules LABELS quick)
  set_tests_properties(test_tune.np2.roundtrip PROPERTIES FIXTURES_REQUIRED tuned_rules)
endif()
foreach(kind good malformed version mpi ranks params given badlayout)
  nodecoll_mpi_test(NAME test_tune SOURCES test_tune.c NP 2 ENVS "${kind}:" ARGS --crafted ${kind} LABELS quick)
endforeach()
set_tests_properties(test_tune.np2.malformed PROPERTIES
  PASS_REGULAR_EXPRESSION "rules:8: \"radix=2\" is no number of ranks per node; using the built-in defaults"
  FAIL_REGULAR_EXPRESSION "FAIL")
set_tests_properties(test_tune.np2.version PROPERTIES
  PASS_REGULAR_EXPRESSION "rules:2: written for nodecoll 0.0.0, this is nodecoll" FAIL_REGULAR_EXPRESSION "FAIL")
set_tests_properties(test_tune.np2.mpi PROPERTIES
  PASS_REGULAR_EXPRESSION "rules:3: measured with No MPI 0" FAIL_REGULAR_EXPRESSION "FAIL")
set_tests_properties(test_tune.np2.ranks PROPERTIES
  PASS_REGULAR_EXPRESSION "has no rules for 2 ranks per node" FAIL_REGULAR_EXPRESSION "FAIL")
set_tests_properties(test_tune.np2.badlayout PROPERTIES
  PASS_REGULAR_EXPRESSION "rules:5: \"segment=1K\" is out of range \\(NODECOLL_SEGMENT_SIZE: 4K \\.\\. 64M\\); using"
  FAIL_REGULAR_EXPRESSION "FAIL")
if(NODECOLL_MPI STREQUAL "openmpi")
  # 8 ranks in one package: auto groups them by NUMA node and L3 (numa:2 l3:4), the file's
  # `levels 8 numa` by NUMA node only.
  set(synthetic "HWLOC_SYNTHETIC=package:2 numa:2 l3:2 core:2")
  nodecoll_mpi_test(NAME test_tune SOURCES test_tune.c NP 8 ENVS "levels:" LABELS quick
                    ARGS --crafted levels "${synthetic}" NODECOLL_TEST_GROUPS=numa:2)
  # The tuner's candidates there: only the levels that group the ranks differently.
  if(TARGET nodecoll-tune)
    add_test(NAME nodecoll_tune.np8.levels
             COMMAND ${MPIEXEC_EXECUTABLE} ${NODECOLL_OVERSUB_FLAG} -np 8 $<TARGET_FILE:nodecoll-tune> --quick
                     --dry-run --out ${CMAKE_CURRENT_BINARY_DIR}/unused.rules)
    set_tests_properties(nodecoll_tune.np8.levels PROPERTIES TIMEOUT 120 LABELS "${NODECOLL_MPI};quick"
      ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;ASAN_OPTIONS=detect_leaks=0;${synthetic}"
      PASS_REGULAR_EXPRESSION "levels: auto, flat, numa, l3\n")
  endif()
endif()
