# The benchmark itself: every collective (seed 001's patterns included) at three sizes, two
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
