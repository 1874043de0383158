# Oversubscription: 8 ranks on the 2-core machine, one node and four emulated nodes.
nodecoll_mpi_test(NAME test_stress SOURCES test_stress.c NP 8
                  ENVS "default:" "nodes4:NODECOLL_RANKS_PER_NODE=2,NODECOLL_NODE_MAP=cyclic" LABELS quick)
