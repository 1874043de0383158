#!/usr/bin/env bash
# Usage: scripts/build.sh MPI [BUILD_DIR] [extra cmake arguments...]
# Configures and builds nodecoll for one MPI (openmpi or mpich); re-running only rebuilds.
set -euo pipefail
mpi=${1:?usage: build.sh openmpi|mpich [build-dir] [cmake args]}
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${2:-$root/build/$mpi}
shift $(( $# >= 2 ? 2 : 1 ))
cmake -S "$root" -B "$dir" -DNODECOLL_MPI="$mpi" "$@" >/dev/null
cmake --build "$dir" -j "$(nproc)"
