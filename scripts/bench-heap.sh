#!/usr/bin/env bash
# The shared heap's measurements (docs/results-heap.md): nodecoll-bench at 2 ranks under
# both MPIs, with the heap off and on, CMA on and off, the four configurations of a
# repetition run one after another (so each repetition sees the machine alike), REPS times;
# one JSON file per run in DIR, then the tables (tools/bench/heap_table.py).
#   usage: scripts/bench-heap.sh [DIR] [REPS] [extra nodecoll-bench arguments...]
# Needs scripts/build.sh openmpi and mpich first.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$root/build/heap-bench}
reps=${2:-3}
shift $(($# > 2 ? 2 : $#))
extra=("$@")
colls=bcast,reduce,allreduce,reduce_scatter_block,allgather
mkdir -p "$dir"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
run() { # mpi heap cma rep
  local mpi=$1 heap=$2 cma=$3 rep=$4 build=$root/build/$1
  local out=$dir/$mpi.heap-$heap.cma-$cma.$rep.json
  local bench=(tools/bench/nodecoll-bench --coll "$colls" --sizes 256K:16M:2 --quiet --json "$out" "${extra[@]}")
  local heap_lib=$build/src/libnodecoll-heap.so
  if [[ $mpi == openmpi ]]; then
    (cd "$build" &&
      mpiexec.openmpi -np 2 -x LD_PRELOAD="$heap_lib" -x NODECOLL_HEAP="$heap" -x NODECOLL_CMA="$cma" "${bench[@]}")
  else
    (cd "$build" && env LD_PRELOAD="$heap_lib" NODECOLL_HEAP="$heap" NODECOLL_CMA="$cma" mpiexec.mpich -n 2 "${bench[@]}")
  fi
  echo "$out"
}
for rep in $(seq "$reps"); do
  for mpi in openmpi mpich; do
    for config in "off auto" "on auto" "off off" "on off"; do
      # shellcheck disable=SC2086
      run "$mpi" $config "$rep"
    done
  done
done
/usr/bin/python3 "$root/tools/bench/heap_table.py" "$dir"/*.json
