# Barrier and Bcast under every algorithm and placement, 1 to 6 ranks.
set(NODECOLL_COLL_ENVS
  "default:"
  "nodes2:NODECOLL_RANKS_PER_NODE=2"
  "cyclic:NODECOLL_RANKS_PER_NODE=2,NODECOLL_NODE_MAP=cyclic"
  "single:NODECOLL_RANKS_PER_NODE=1"
  "shmring:NODECOLL_BCAST_ALG=shm,NODECOLL_SEGMENT_SIZE=4K,NODECOLL_SEGMENTS=2,NODECOLL_BARRIER_ALG=flat,NODECOLL_WAIT_REUSE_GAP=1"
  "cma:NODECOLL_BCAST_ALG=cma,NODECOLL_CMA_CHUNK=8K,NODECOLL_BCAST_RADIX=2,NODECOLL_BARRIER_ALG=tree,NODECOLL_BARRIER_FANIN=2,NODECOLL_BARRIER_FANOUT=3"
  "tree:NODECOLL_BCAST_ALG=shm,NODECOLL_BCAST_RADIX=2,NODECOLL_BARRIER_ALG=dissemination,NODECOLL_BARRIER_RADIX=3,NODECOLL_WAIT_REUSE_GAP=100000"
  "nocma:NODECOLL_CMA=off,NODECOLL_BARRIER_ALG=dissemination,OMPI_MCA_btl_vader_single_copy_mechanism=none"
  "push:NODECOLL_BCAST_ALG=cma,NODECOLL_CMA_PUSH_MIN=4K,NODECOLL_CMA_CHUNK=16K,NODECOLL_ALLGATHER_PUSH_MIN=4K")
# (shmring polls for a slot's release after every pause, tree at most once per spin phase.)
# The full matrix up to 4 ranks; beyond that (3x oversubscribed, slow host MPI) a cross-section.
# Under MPICH, whose own calls collapse once oversubscribed (the PMPI oracle then dominates a
# test's time), the cross-section starts at 4 ranks: the variants exercise nodecoll's shared
# algorithms, which the Open MPI suite runs in full at 4 ranks.
set(NODECOLL_WIDE_ENVS "default:" "cyclic:NODECOLL_RANKS_PER_NODE=2,NODECOLL_NODE_MAP=cyclic"
  "tree:NODECOLL_BCAST_ALG=shm,NODECOLL_BCAST_RADIX=2,NODECOLL_BARRIER_ALG=dissemination,NODECOLL_BARRIER_RADIX=3")
if(NODECOLL_MPI STREQUAL "mpich")
  set(NODECOLL_FULL_NPS 2 3)
  set(NODECOLL_WIDE_NPS 4 5 6)
  set(NODECOLL_WIDE_NPS_TO5 4 5)
else()
  set(NODECOLL_FULL_NPS 2 3 4)
  set(NODECOLL_WIDE_NPS 5 6)
  set(NODECOLL_WIDE_NPS_TO5 5)
endif()
foreach(test bcast barrier)
  nodecoll_mpi_test(NAME test_${test} SOURCES test_${test}.c NP 1 LABELS quick)
  nodecoll_mpi_test(NAME test_${test} SOURCES test_${test}.c NP ${NODECOLL_FULL_NPS} ENVS ${NODECOLL_COLL_ENVS} LABELS quick)
  nodecoll_mpi_test(NAME test_${test} SOURCES test_${test}.c NP ${NODECOLL_WIDE_NPS} ENVS ${NODECOLL_WIDE_ENVS} LABELS quick)
endforeach()

# Nonblocking and persistent forms (Barrier, Bcast), completed by every completion call.
nodecoll_mpi_test(NAME test_nonblocking SOURCES test_nonblocking.c NP 1 LABELS quick)
nodecoll_mpi_test(NAME test_nonblocking SOURCES test_nonblocking.c NP ${NODECOLL_FULL_NPS} ENVS ${NODECOLL_COLL_ENVS}
  "pending1:NODECOLL_PENDING_MAX=1,NODECOLL_RANKS_PER_NODE=2"
  "progress:NODECOLL_PROGRESS_THREAD=1,NODECOLL_BCAST_ALG=shm,NODECOLL_SEGMENT_SIZE=4K,NODECOLL_SEGMENTS=2" LABELS quick)
nodecoll_mpi_test(NAME test_nonblocking SOURCES test_nonblocking.c NP ${NODECOLL_WIDE_NPS_TO5} ENVS ${NODECOLL_WIDE_ENVS} LABELS quick)
# Nonblocking and persistent reductions against the host's blocking calls.
nodecoll_mpi_test(NAME test_nonblocking_reduce SOURCES test_nonblocking_reduce.c NP 1 LABELS quick)
# Nonblocking calls repeating the one before them restart its request (plan kept), against the
# host's blocking calls: alone, interleaved, outstanding on several communicators, freed while
# active, on communicators freed while a request is kept; the check mode, the progress
# thread, emulated nodes.
# (oversubscribed MPICH: one rank count beyond the cores, its own PMPI oracle being slow there)
set(NODECOLL_REPEATED_ENVS "default:" "nodes2:NODECOLL_RANKS_PER_NODE=2"
  "cyclic:NODECOLL_RANKS_PER_NODE=2,NODECOLL_NODE_MAP=cyclic" "check:NODECOLL_CHECK=1"
  "progress:NODECOLL_PROGRESS_THREAD=1")
if(NODECOLL_MPI STREQUAL "mpich")
  set(NODECOLL_REPEATED_NPS 2)
else()
  set(NODECOLL_REPEATED_NPS 2 3 4)
endif()
nodecoll_mpi_test(NAME test_repeated SOURCES test_repeated.c NP 1 LABELS quick)
nodecoll_mpi_test(NAME test_repeated SOURCES test_repeated.c NP ${NODECOLL_REPEATED_NPS}
  ENVS ${NODECOLL_REPEATED_ENVS} LABELS quick)
if(NODECOLL_MPI STREQUAL "mpich")
  nodecoll_mpi_test(NAME test_repeated SOURCES test_repeated.c NP 3 ENVS "cyclic:NODECOLL_RANKS_PER_NODE=2,NODECOLL_NODE_MAP=cyclic"
    LABELS quick)
endif()
# (the progress thread completes kept requests' operations: under TSan too)
set_property(TEST test_repeated.np2.progress APPEND PROPERTY LABELS threads)
# A request freed while active, then MPI_Finalize at once: the result is there afterwards.
nodecoll_mpi_test(NAME test_free_finalize SOURCES test_free_finalize.c NP 2 3
  ENVS "gapped:T_GAPPED=1" "plain:T_GAPPED=0" "nodes2:T_GAPPED=1,NODECOLL_RANKS_PER_NODE=2" LABELS quick)
nodecoll_mpi_test(NAME test_nonblocking_reduce SOURCES test_nonblocking_reduce.c NP ${NODECOLL_FULL_NPS} ENVS ${NODECOLL_COLL_ENVS}
  LABELS quick)
nodecoll_mpi_test(NAME test_nonblocking_reduce SOURCES test_nonblocking_reduce.c NP ${NODECOLL_WIDE_NPS_TO5} ENVS ${NODECOLL_WIDE_ENVS}
  LABELS quick)
if(NODECOLL_MPI STREQUAL "mpich")
  set(NODECOLL_REDUCE_VARIANT_NPS 3)
else()
  set(NODECOLL_REDUCE_VARIANT_NPS 3 4)
endif()
# The reduction algorithms the settings above leave to the registry, the progress thread and
# a soft limit of one pending operation.
nodecoll_mpi_test(NAME test_nonblocking_reduce SOURCES test_nonblocking_reduce.c NP ${NODECOLL_REDUCE_VARIANT_NPS} ENVS
  "reducetree:NODECOLL_REDUCE_ALG=tree,NODECOLL_REDUCE_FANIN=2,NODECOLL_SEGMENT_SIZE=4K,NODECOLL_SEGMENTS=2"
  "reduceshm:NODECOLL_CMA=off,NODECOLL_SEGMENT_SIZE=4K"
  "rd:NODECOLL_REDUCE_ALG=recursive_doubling,NODECOLL_SEGMENT_SIZE=4K,NODECOLL_SEGMENTS=2"
  "repro:NODECOLL_REPRODUCIBLE=1"
  "progress:NODECOLL_PROGRESS_THREAD=1,NODECOLL_RANKS_PER_NODE=2"
  "pending1:NODECOLL_PENDING_MAX=1,NODECOLL_RANKS_PER_NODE=2"
  "setupworld:NODECOLL_SETUP_WORLD=1,NODECOLL_RANKS_PER_NODE=2"
  "chain:NODECOLL_REDUCE_INLINE_MAX=1792,NODECOLL_REDUCE_ALG=tree,NODECOLL_REDUCE_FANIN=2" LABELS quick)
# MPICH's MPI_STATUSES_IGNORE is the address 1, which GCC takes for an empty array of
# statuses: its stringop-overflow warning is wrong there.
if(NODECOLL_MPI STREQUAL "mpich")
  set_source_files_properties(test_nonblocking.c PROPERTIES COMPILE_OPTIONS -Wno-stringop-overflow)
endif()

# The progress thread's runs are threaded runs too: the TSan build runs them (label threads).
foreach(t test_nonblocking.np2.progress test_nonblocking.np3.progress test_nonblocking.np4.progress
          test_nonblocking_reduce.np3.progress test_nonblocking_reduce.np4.progress)
  if(TEST ${t}) # (the 4-rank variants: not under MPICH)
    set_property(TEST ${t} APPEND PROPERTY LABELS threads)
  endif()
endforeach()

# Nonblocking and persistent data movement (Gather(v) ... Alltoallw) against the host's
# blocking calls.
nodecoll_mpi_test(NAME test_nonblocking_move SOURCES test_nonblocking_move.c NP 1 ${NODECOLL_FULL_NPS} ENVS ${NODECOLL_COLL_ENVS}
  LABELS quick)
nodecoll_mpi_test(NAME test_nonblocking_move SOURCES test_nonblocking_move.c NP ${NODECOLL_WIDE_NPS_TO5} ENVS ${NODECOLL_WIDE_ENVS} LABELS quick)
# The progress thread, a soft limit of one pending operation, a small move slot with one
# remote send in flight.
nodecoll_mpi_test(NAME test_nonblocking_move SOURCES test_nonblocking_move.c NP 3 ENVS
  "progress:NODECOLL_PROGRESS_THREAD=1,NODECOLL_RANKS_PER_NODE=2"
  "pending1:NODECOLL_PENDING_MAX=1,NODECOLL_RANKS_PER_NODE=2,NODECOLL_NODE_MAP=cyclic"
  "slot:NODECOLL_MOVE_SLOT=256,NODECOLL_ALLTOALL_SMALL=64,NODECOLL_ALLTOALL_WINDOW=1,NODECOLL_RANKS_PER_NODE=2"
  LABELS quick)
set_property(TEST test_nonblocking_move.np3.progress APPEND PROPERTY LABELS threads)
