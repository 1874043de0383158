# Robustness: communicator lifecycle, error classes, killed jobs, preloading and installing.
# lifecycle and errors are also "quick": scripts/test.sh runs them under ASan+UBSan too.
nodecoll_mpi_test(NAME test_lifecycle SOURCES test_lifecycle.c NP 1 2 3 4
  ENVS "default:" "nodes2:NODECOLL_RANKS_PER_NODE=2" "shmcap:NODECOLL_SHM_CAP=512K,NODECOLL_SEGMENT_SIZE=4K,NODECOLL_SEGMENTS=2"
  LABELS robustness quick TIMEOUT 120)
# Bad arguments give the host MPI's error class and handler calls; the state stays usable.
nodecoll_mpi_test(NAME test_errors SOURCES test_errors.c NP 1 2 3 LABELS robustness quick TIMEOUT 60)

# The liveness judgement behind NODECOLL_PEER_CHECK on real processes (no MPI).
add_executable(test_alive test_alive.c ${PROJECT_SOURCE_DIR}/src/core/alive.c)
target_include_directories(test_alive PRIVATE ${PROJECT_SOURCE_DIR}/src)
target_link_libraries(test_alive PRIVATE Threads::Threads)
add_test(NAME test_alive COMMAND test_alive)
set_tests_properties(test_alive PROPERTIES LABELS "${NODECOLL_MPI};robustness;quick" TIMEOUT 60)

# A rank SIGKILLed or calling MPI_Abort mid-collective leaves nothing in /dev/shm; a name
# left by a dead creator is swept by the next job.
add_executable(test_kill test_kill.c)
target_link_libraries(test_kill PRIVATE nodecoll MPI::MPI_C)
target_include_directories(test_kill PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
set(kill_script ${CMAKE_CURRENT_SOURCE_DIR}/test_kill.sh)
foreach(case "kill-first;4" "kill-last;3" "abort;4" "abort;3" "sweep;2")
  list(GET case 0 scenario)
  list(GET case 1 np)
  nodecoll_script_test(test_kill.${scenario}.np${np} ${np}
    ${kill_script} ${MPIEXEC_EXECUTABLE} $<TARGET_FILE:test_kill> ${np} ${scenario})
endforeach()
set(NODECOLL_SCRIPT_EXTRA_ENV "NODECOLL_RANKS_PER_NODE=2")
nodecoll_script_test(test_kill.kill-last.np4.nodes2 4
  ${kill_script} ${MPIEXEC_EXECUTABLE} $<TARGET_FILE:test_kill> 4 kill-last)
# Hangs: NODECOLL_WAIT_REPORT's reports of late ranks; ranks SIGKILLed while the launcher
# keeps the job going, found dead by NODECOLL_PEER_CHECK.  Open MPI's --enable-recovery keeps
# the others running; MPICH 4.0's hydra stops them anyway now and then despite
# -disable-auto-cleanup, so there each rank also runs detached from it (test_kill.sh).
if(NODECOLL_MPI STREQUAL "openmpi")
  set(NODECOLL_SCRIPT_EXTRA_ENV "MPIEXEC_KEEP_GOING=--enable-recovery;KILL_TEST_DETACH=0")
else()
  set(NODECOLL_SCRIPT_EXTRA_ENV "MPIEXEC_KEEP_GOING=-disable-auto-cleanup;KILL_TEST_DETACH=1")
endif()
foreach(scenario report dead-waiting dead-loop)
  nodecoll_script_test(test_kill.${scenario}.np3 3
    ${kill_script} ${MPIEXEC_EXECUTABLE} $<TARGET_FILE:test_kill> 3 ${scenario})
  set_property(TEST test_kill.${scenario}.np3 APPEND PROPERTY LABELS quick)
endforeach()
set(NODECOLL_SCRIPT_EXTRA_ENV "")

# An unmodified MPI program with the library preloaded (and with NODECOLL_ENABLE=0); the
# installed package consumed through find_package, pkg-config and -lnodecoll.
set(preload_script ${CMAKE_CURRENT_SOURCE_DIR}/test_preload.sh)
foreach(case "preload;2" "preload;3" "disabled;2" "install;2")
  list(GET case 0 scenario)
  list(GET case 1 np)
  nodecoll_script_test(test_preload.${scenario}.np${np} ${np}
    ${preload_script} ${scenario} ${MPIEXEC_EXECUTABLE} ${MPI_C_COMPILER} $<TARGET_FILE:nodecoll>
    ${CMAKE_BINARY_DIR} ${CMAKE_COMMAND} ${np})
endforeach()
# Ranks confined to one core (a cpuset, a launcher's binding) wait by yielding at once.
if(NODECOLL_MPI STREQUAL "openmpi")
  set(NODECOLL_SCRIPT_EXTRA_ENV "MPIEXEC_PREFLAGS=--bind-to none")
endif()
nodecoll_script_test(test_preload.onecore.np2 2
  ${preload_script} onecore ${MPIEXEC_EXECUTABLE} ${MPI_C_COMPILER} $<TARGET_FILE:nodecoll>
  ${CMAKE_BINARY_DIR} ${CMAKE_COMMAND} 2)
set(NODECOLL_SCRIPT_EXTRA_ENV "")

# Type signatures that disagree (receivers holding half or twice what is sent): the hosts'
# error class, nothing written past a buffer, every rank still in step.
nodecoll_mpi_test(NAME test_mismatch SOURCES test_mismatch.c NP 2 3 LABELS robustness quick TIMEOUT 120)
