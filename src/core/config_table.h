/*
 * The one table of every NODECOLL_* setting.  The environment parser, nodecoll-info and
 * docs/tuning.md are all generated from it, so a setting cannot exist without its doc.
 *
 * X(field, kind, default, min, max, choices, doc)
 *   kind: INT (integer in [min,max]), SIZE (bytes in [min,max], accepts K/M/G suffixes),
 *         BOOL (0/1, yes/no, on/off), ENUM (one of the '|'-separated choices; stored as index),
 *         SET (auto = -1, flat = 0, or a comma-separated list of the choices: a bit each).
 *   Defaults were chosen from measurements recorded in docs/results.md.
 */
/* clang-format off */
#define NC_CONFIG_TABLE(X) \
  X(enable,              BOOL, 1,        0, 1,        NULL, \
    "Master switch. 0 sends every call to the host MPI unchanged.") \
  X(stats,               BOOL, 0,        0, 1,        NULL, \
    "Print the per-collective, per-algorithm call counters of each rank at MPI_Finalize.") \
  X(check,               BOOL, 0,        0, 1,        NULL, \
    "Debugging: before every collective, verify that all ranks of the communicator entered the same call " \
    "(collective, root, op, total type-signature length, in the same order); on a mismatch each rank that " \
    "differs from rank 0 prints one line naming both calls, and every rank gets MPI_ERR_ARG through the " \
    "communicator's error handler instead of a hang or corrupt data.  Costs a node synchronisation per call " \
    "(about 0.15-0.3 us at 2 ranks).") \
  X(verbose,             INT,  0,        0, 2,        NULL, \
    "1: report why a communicator falls back to the host MPI; 2: also report setup details.") \
  X(ranks_per_node,      INT,  0,        0, 1048576,  NULL, \
    "Split each shared-memory node into emulated nodes of this many ranks (0: real nodes). " \
    "Emulated nodes talk through the host MPI like real ones, so one machine exercises the multi-node path.") \
  X(node_map,            ENUM, 0,        0, 1,        "block|cyclic", \
    "How ranks of a real node are dealt to emulated nodes: consecutive runs (block) or round-robin (cyclic).") \
  X(barrier_alg,         ENUM, 0,        0, 3,        "auto|flat|tree|dissemination", \
    "Barrier algorithm on a node: flat check-in/check-out, fan-in/fan-out tree, n-ary dissemination " \
    "(auto: dissemination on one node, the tree when the node has topology groups (NODECOLL_TOPO_LEVELS); " \
    "across nodes the node steps are a fan-in/fan-out tree).") \
  X(barrier_fanin,       INT,  8,        1, 1024,     NULL, \
    "Fan-in radix of the tree barrier.") \
  X(barrier_fanout,      INT,  8,        1, 1024,     NULL, \
    "Fan-out radix of the tree barrier.") \
  X(barrier_radix,       INT,  0,        0, 1024,     NULL, \
    "Radix n of the dissemination barrier (ceil(log_n P) steps, n-1 flags read per step); " \
    "0: P itself up to 16 ranks per node (one step), 6 above.") \
  X(topo_levels,         SET,  -1,       -1, 15,      "package|numa|l3|core", \
    "Topology levels the on-node trees of Barrier, Bcast, Reduce and Allreduce follow (hwloc): the ranks of " \
    "a node are grouped by each level, each group's leader talks to the level above, and the root of a " \
    "rooted call leads its groups, so data crosses each domain boundary once (each level's tree has the " \
    "collective's radix).  flat: one group (the trees over rotated ranks).  auto: package,numa,l3.  A level " \
    "with one domain among the node's ranks, or one rank per domain, drops out, so a machine with one NUMA " \
    "node and one L3 runs flat.  Lists are separated by commas: numa,l3.") \
  X(topo_place,          ENUM, 0,        0, 4,        "auto|cpu|block|cyclic|scatter", \
    "Where each rank sits on the topology: cpu = the CPU it runs on when the communicator is set up (within " \
    "its binding); block, cyclic (round-robin over NUMA nodes), scatter (a fixed shuffle of the cores) " \
    "deal the node's ranks onto the topology's cores by node rank, to emulate a placement; auto = cpu on " \
    "the real machine, block on a synthetic or XML topology (HWLOC_SYNTHETIC, HWLOC_XMLFILE).") \
  X(bcast_alg,           ENUM, 0,        0, 2,        "auto|shm|cma", \
    "Bcast algorithm on a node: fan-out tree through shared-memory segments, or single-copy reads (CMA).") \
  X(bcast_radix,         INT,  8,        1, 1024,     NULL, \
    "Fan-out radix of the Bcast tree (a rank forwards to at most this many children).") \
  X(bcast_cma_min,       SIZE, 16384,    0, 1099511627776, NULL, \
    "auto uses single-copy (CMA) Bcast from this message size up, when CMA works on the machine.") \
  X(bcast_inline_max,    SIZE, 896,      0, 1792,     NULL, \
    "Bcast messages up to this many bytes travel in a chain of the sender's inline flags (112 bytes each, " \
    "fetched together by the reader; a message of up to 112 bytes always does), larger ones through its ring " \
    "segments.") \
  X(bcast_check,         BOOL, 1,        0, 1,        NULL, \
    "Every rank of a node plans a Bcast from its node root's byte count, so a receiver sent more than its " \
    "count holds gets MPI_ERR_TRUNCATE and every rank stays in step.  0 saves one cache-line transfer on " \
    "messages of 113 B and more (0.02-0.08 us at np 2, 20% at 1-4 KiB, 2% at 16 KiB), but such an erroneous call may then hang.") \
  X(reduce_alg,          ENUM, 0,        0, 5,        "auto|flat|tree|cma|shm|recursive_doubling", \
    "Reduce/Allreduce/Reduce_scatter algorithm on a node: flat (every rank folds every rank's data; " \
    "for Reduce the root does), fan-in tree (+ Bcast fan-out for Allreduce), cma (each rank reduces a " \
    "slice reading the others' buffers single-copy, then delivers it), shm (the same slices staged " \
    "through the shared rings; needs NODECOLL_SEGMENTS >= 2 x ranks per node, else tree), or " \
    "recursive_doubling (Allreduce by pairwise exchange through the rings, for comparison; a power-of-two " \
    "node only, else and for Reduce: tree).") \
  X(reduce_fanin,        INT,  4,        1, 64,       NULL, \
    "Fan-in radix of the reduction tree (fan-out of Allreduce is the Bcast tree, NODECOLL_BCAST_RADIX).") \
  X(reduce_flat_max,     SIZE, 16384,     0, 1099511627776, NULL, \
    "auto uses flat Allreduce (no fan-out step; also for Reduce_scatter below NODECOLL_REDUCE_CMA_MIN) up to this many bytes when the node has at most " \
    "NODECOLL_REDUCE_FLAT_RANKS ranks and no topology groups (with groups: the tree, which follows them).") \
  X(reduce_flat_ranks,   INT,  8,        0, 1048576,  NULL, \
    "Most ranks per node for which auto picks the flat Allreduce.") \
  X(reduce_cma_min,      SIZE, 32768,    0, 1099511627776, NULL, \
    "auto uses the single-copy slice algorithm for Allreduce and Reduce_scatter from this many bytes up, when CMA works.") \
  X(reduce_shm_min,      SIZE, 32768,    0, 1099511627776, NULL, \
    "Without single-copy (or below NODECOLL_REDUCE_CMA_MIN), auto stages Allreduce and Reduce_scatter through " \
    "the rings by slices (shm) from this many bytes up; below, and for Reduce, flat or tree.") \
  X(reduce_root_cma_min, SIZE, 1099511627776, 0, 1099511627776, NULL, \
    "auto uses the single-copy slice algorithm for Reduce (to a root) from this many bytes up, when CMA works " \
    "(default: never; at 2 ranks the fan-in tree was faster at every size).") \
  X(reduce_root_heap_min, SIZE, 131072,  0, 1099511627776, NULL, \
    "auto uses the single-copy slice algorithm for Reduce (to a root) from this many bytes up when every rank's " \
    "buffers lie in its shared heap (NODECOLL_HEAP; the node's ranks agree on that first, in one flag each).") \
  X(reduce_inline_max,   SIZE, 224,      0, 1792,     NULL, \
    "Node reductions (Reduce, Allreduce, Reduce_scatter, Scan, Exscan, and their steps across nodes) of up to this " \
    "many bytes travel in a chain of inline flags (up to 112 bytes of whole elements each: data and signal in one " \
    "line transfer, the chain's lines fetched together); larger ones, and elements over 112 bytes, in the " \
    "shared-memory ring.  At most 112: only what fits one flag.") \
  X(reduce_chunk,        SIZE, 262144,    64, 1073741824, NULL, \
    "Bytes a rank reduces at a time in the slice algorithm (two buffers of this size should stay in cache), " \
    "and per rank per step in the ordered multi-node algorithm.") \
  X(reproducible,        BOOL, 0,        0, 1,        NULL, \
    "1: floating-point reductions are bitwise reproducible and independent of algorithm, radix and node count: " \
    "every element is combined in rank order, x0 op (x1 op (... op x(P-1))) (Scan: ((x0 op x1) op x2) ...).") \
  X(segment_size,        SIZE, 32768,    4096, 67108864, NULL, \
    "Bytes per pipeline segment in a rank's shared-memory ring (rounded up to a page).") \
  X(segments,            INT,  8,        2, 1024,     NULL, \
    "Segments in each rank's ring; at least 2 so one can be refilled while another is read.") \
  X(cma_chunk,           SIZE, 1048576,  4096, 1099511627776, NULL, \
    "Bytes per single-copy read step (children of a tree start reading before the parent finished).") \
  X(cma_push_min,        SIZE, 65536,    0, 1099511627776, NULL, \
    "From this size up a single-copy Bcast whose root feeds every other rank directly also has the " \
    "root write a share into the receivers' buffers while they read the rest (0: never).") \
  X(move_slot,           SIZE, 16384,    0, 67108864, NULL, \
    "Gather/Scatter/Allgather/Alltoall families and the neighbourhood collectives: a rank's publication of a " \
    "call up to this many bytes is copied into its shared slots (its inline flag up to 112 bytes, else a ring " \
    "segment: at most NODECOLL_SEGMENT_SIZE); readers copy it out and the publisher returns at once, waiting for " \
    "its readers only when its ring of slots wraps.  Larger data is read straight from the publisher's buffer with " \
    "single copy.") \
  X(alltoall_small,      SIZE, 65536,    0, 1099511627776, NULL, \
    "Alltoallv/Alltoallw read blocks up to this size from all peers before the larger ones (Balaji et al.'s bins; " \
    "zero-size peers are always skipped).") \
  X(alltoall_window,     INT, 32,        0, 1000000,  NULL, \
    "Alltoall/Alltoallv/Alltoallw and the neighbourhood collectives across nodes: sends in flight at once to " \
    "remote ranks (0: all; every receive is posted first, so any window is deadlock-free).") \
  X(neighbor_small,      SIZE, 65536,    0, 1099511627776, NULL, \
    "Neighbourhood collectives: a rank reads its in-neighbours' blocks of up to this size before the larger " \
    "ones, and sends its small blocks to other nodes first (Balaji et al.'s bins; zero-size neighbours are never " \
    "contacted).") \
  X(neighbor_copy_max,   SIZE, 4096,     0, 67108864, NULL, \
    "Neighbour_alltoall(v,w): in a publication too large for the sender's slot, blocks of up to this size " \
    "travel through its move area (a copy each way, no system call); larger ones are read from its buffer " \
    "by single copy.") \
  X(allgatherv_alg,      ENUM, 0,        0, 3,        "auto|ring|recursive-doubling|dissemination", \
    "How node leaders allgather the node regions across nodes (auto: ring for large uniform volumes, recursive " \
    "doubling or dissemination for small or skewed ones; recursive doubling needs a power-of-two node count).") \
  X(allgather_push_min,  SIZE, 65536,     0, 1099511627776, NULL, \
    "Allgather on one node: from this many bytes per block, when every rank's receive buffer can be written into " \
    "(contiguous; with CMA, or in the shared heaps), each rank writes its block into every result instead of each " \
    "reading every block (one read of a block feeds every result; the ranks agree first, in one flag each).") \
  X(allgather_push_chunk, SIZE, 262144,  4096, 1099511627776, NULL, \
    "Bytes of its block a rank reads at a time and writes into every result in Allgather's push (NODECOLL_ALLGATHER_PUSH_MIN): " \
    "a piece should stay in cache between its writes.") \
  X(allgatherv_ring_min, SIZE, 262144,   0, 1099511627776, NULL, \
    "auto uses the ring across nodes from this total size up, unless the node volumes are skewed.") \
  X(allgatherv_outlier_ratio, INT, 8,    1, 1000000000, NULL, \
    "Node volumes are skewed when the largest is at least this many times the volume at the outlier fraction " \
    "(Balaji et al.'s k-select outlier ratio).") \
  X(allgatherv_outlier_fraction, INT, 50, 1, 100,     NULL, \
    "Percentile (of node volumes, smallest first) the largest volume is compared with by the outlier ratio.") \
  X(cma,                 ENUM, 0,        0, 1,        "auto|off", \
    "Single-copy reads between ranks with process_vm_readv: auto probes at setup, off never uses them.") \
  X(heap,                ENUM, 0,        0, 2,        "off|alloc_mem|on", \
    "The shared heap: large blocks of memory the node's other ranks map, so that collectives on them copy " \
    "between the ranks' buffers with plain loads and stores (no CMA, no system call per transfer; also where " \
    "CMA is forbidden).  alloc_mem: blocks from MPI_Alloc_mem of NODECOLL_HEAP_MIN bytes or more; on: also " \
    "malloc and its kin, with libnodecoll-heap.so preloaded (README, \"The shared heap\").") \
  X(heap_min,            SIZE, 131072,   4096, 1099511627776, NULL, \
    "Allocations of this many bytes or more come from the shared heap; smaller ones stay with the C library.") \
  X(heap_size,           SIZE, 68719476736, 1048576, 70368744177664, NULL, \
    "Address space of each process's shared heap (pages are used only as blocks need them); an allocation " \
    "that no longer fits goes to the C library.  Every other rank of the node maps it too.") \
  X(heap_retain,         SIZE, 67108864, 0, 1099511627776, NULL, \
    "Bytes of freed shared-heap blocks kept backed for reuse (no page faults when a buffer of the same size " \
    "comes back); beyond this the pages go back to the system at once.") \
  X(shm_cap,             SIZE, 536870912, 0, 1099511627776, NULL, \
    "Most shared memory this process maps for nodecoll segments; a communicator that would exceed it uses the host MPI.") \
  X(team_part_min,       SIZE, 262144,   4096, 1099511627776, NULL, \
    "Thread teams (nodecoll_team_*): a copy, single-copy read or reduction of n bytes is split over " \
    "min(team threads, n / this) threads; smaller pieces stay with the calling thread.") \
  X(shared_debug,        BOOL, 0,        0, 1,        NULL, \
    "Node-shared results (nodecoll_shared_*): protect the result pages in each process, read-only while " \
    "held and inaccessible once released, so reading a released result or writing into one stops the " \
    "process with a message naming the misuse (two mprotect calls per call).") \
  X(shared_chunk,        SIZE, 65536,    64, 1099511627776, NULL, \
    "Bytes one step of a node-shared Allreduce folds: the ranks of a node pass the result along in a " \
    "pipeline of pieces this size.") \
  X(dtype_engine,        BOOL, 1,        0, 1,        NULL, \
    "Pack and unpack derived datatypes with nodecoll's datatype engine (0: with the host MPI's " \
    "MPI_Pack / MPI_Unpack).  Local to each process: the choice never changes which algorithm runs.") \
  X(dtype_probe_max,     SIZE, 16777216, 0, 1099511627776, NULL, \
    "Datatypes the decoder cannot read constructor by constructor (darray, large-count subarray, padded " \
    "predefined pairs) are mapped byte by byte through MPI_Pack once, if one element spans at most this " \
    "many bytes of memory; larger ones are packed by the host MPI.") \
  X(dtype_iov_min_run,   SIZE, 512,      1, 1099511627776, NULL, \
    "Single-copy reads into a derived datatype used in place hand its runs straight to the kernel when the " \
    "next runs average at least this many bytes; shorter runs are read into a buffer and unpacked.") \
  X(wait_spin,           INT,  -1,       -1, 100000000, NULL, \
    "Polls of a flag before yielding the core (-1: auto, 4000 when the machine's ranks fit the cores their CPU masks allow together, 0 when they outnumber them).") \
  X(wait_reuse_gap,      INT,  128,      1, 100000,   NULL, \
    "A rank waiting for its peers to release an inline slot (it runs ahead of them, as a Bcast root or " \
    "Gather sender in a loop does) polls their progress once per this many pause instructions while it " \
    "spins (1: after every pause): each poll takes the line a peer posts to, which the peer must fetch back " \
    "before its next post. A pause took 23 ns on the development machine and differs between processors; a gap " \
    "of NODECOLL_WAIT_SPIN or more polls once and then yields.") \
  X(wait_yields,         INT,  1000,     0, 100000000, NULL, \
    "sched_yield calls after spinning before sleeping between polls (0: never sleep).") \
  X(wait_sleep_us,       INT,  50,       1, 1000000,  NULL, \
    "Sleep between polls once spinning and yielding found nothing, in microseconds.") \
  X(wait_report,         INT,  0,        0, 86400,    NULL, \
    "Debugging hangs: a rank that has waited this many seconds for one flag of a collective prints one line " \
    "per call saying what it waits for (its call and call number, the rank, node rank and pid that owns the " \
    "flag, the flag's name, value and the value it needs, and the call that rank entered last), then goes on " \
    "waiting (0: never).") \
  X(peer_check,          BOOL, 1,        0, 1,        NULL, \
    "Every 200 ms of a wait that has lasted 200 ms, check that the rank it waits for still lives (its pid, " \
    "start time and pid namespace, read from /proc); when it has died (killed, crashed: not MPI_Abort), " \
    "print one line naming it and the call, and abort the job with MPI_Abort on MPI_COMM_WORLD instead " \
    "of waiting forever.  Ranks whose /proc shows no such process at setup are never judged.") \
  X(pending_max,         INT,  1024,     1, 1048576,  NULL, \
    "Nonblocking and persistent operations in flight per communicator beyond which a start first " \
    "progresses the pending ones to bring the count down; it goes on anyway once the oldest stops moving " \
    "(1 ms without a completion: its peers may not have started it yet, and waiting could hang a valid " \
    "program; a count of 1000 yields instead made one `MPI_Ibarrier` take 3 s at 3 ranks on 2 cores, where " \
    "a yield can last a time slice), so the bound is soft.  Each operation costs its request (about 1.3 KiB).") \
  X(setup_world,         BOOL, 0,        0, 1,        NULL, \
    "1: set MPI_COMM_WORLD up inside the C MPI_Init / MPI_Init_thread, so that its nonblocking and " \
    "persistent collectives are served before any blocking one (setting a communicator up is collective, " \
    "which a nonblocking call must not be); the settings are then read there.  Every rank must start " \
    "through that C call with nodecoll loaded and the same value (not a Fortran rank: its binding calls " \
    "PMPI_Init), else the others wait in MPI_Init.  0: at its first blocking collective, as every other " \
    "communicator.") \
  X(progress_thread,     BOOL, 0,        0, 1,        NULL, \
    "A thread per process that progresses nonblocking and persistent operations while the application " \
    "computes without calling MPI (it sleeps while none is outstanding).  Steps through the host MPI are " \
    "taken by it only under MPI_THREAD_MULTIPLE, else at the application's next MPI call.  Off: on a node " \
    "with as many ranks as cores it competes with the ranks for the cores.")
/* clang-format on */
