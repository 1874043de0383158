# The benchmark itself: every collective (Balaji et al.'s patterns included) at three sizes, two
# roots, with --check comparing each nodecoll result with the host's (a mismatch fails the
# run).  Tiny time budget: this tests the tool and the results, it measures nothing.
if(TARGET nodecoll-bench)
  set(NODECOLL_BENCH_NP 2)
  if(NODECOLL_MPI STREQUAL "openmpi")
    set(NODECOLL_BENCH_NP 2 3) # (oversubscribed MPICH needs ~8 ms per host step)
  endif()
  nodecoll_mpi_test(NAME nodecoll-bench NP ${NODECOLL_BENCH_NP}
    ENVS "default:" "nodes2:NODECOLL_RANKS_PER_NODE=1"
    ARGS --coll all --sizes 8,4K,64K --root 0,last --check --time-budget 0.02 --iters 3 --quiet
    LABELS quick bench TIMEOUT 120)
endif()
# The other call forms and --overlap, briefly, one test each so that a failure names its
# form: nonblocking and persistent calls of a few collectives (--root rotate: one persistent
# request per root), results checked in every mode.  Exit status 77 (skipped): the MPI has
# no persistent collectives.
if(TARGET nodecoll-bench)
  set(NODECOLL_BENCH_QUICK --coll barrier,bcast,allreduce,gather --sizes 8,64K --root 0,rotate
      --check --time-budget 0.02 --iters 3 --quiet)
  foreach(form "nonblocking:--mode;nonblocking" "persistent:--mode;persistent"
               "overlap:--mode;nonblocking;--overlap")
    string(REPLACE ":" ";" parts "${form}")
    list(POP_FRONT parts tag)
    nodecoll_mpi_test(NAME nodecoll-bench NP 2 ENVS "${tag}:" ARGS ${NODECOLL_BENCH_QUICK} ${parts}
      LABELS quick bench TIMEOUT 60)
    set_tests_properties(nodecoll-bench.np2.${tag} PROPERTIES SKIP_RETURN_CODE 77)
  endforeach()
endif()
