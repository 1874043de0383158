#!/usr/bin/env bash
# nodecoll as users meet it: preloaded into an unmodified MPI program, or installed and
# consumed through CMake's find_package, pkg-config and plain -lnodecoll.
#
# usage: test_preload.sh SCENARIO MPIEXEC MPICC LIBRARY BUILD_DIR CMAKE NP  (fortran: MPICC = the program)
#   preload   test_preload.c built with the plain MPI wrapper (no nodecoll), run as
#             LD_PRELOAD=LIBRARY NODECOLL_STATS=1 MPIEXEC -np NP ./app: correct results, and
#             every rank's counters show accelerated bcast (shm|cma) and barrier
#             (flat|tree|dissemination)
#   disabled  the same with NODECOLL_ENABLE=0: every call counted as pmpi:disabled
#   onecore   the preloaded app with every rank on CPU 0 (taskset; MPIEXEC_PREFLAGS must
#             stop the launcher's own binding): each rank sees the node's ranks outnumber
#             the cores they may use, so its waits yield at once (NODECOLL_VERBOSE=2 says so)
#   fortran   MPICC is a Fortran test program (test_fortran.F90, built without nodecoll) run
#             preloaded with NODECOLL_STATS=1: it passes, and every rank's counters, which
#             nodecoll prints in MPI_Finalize, show Allreduce, Bcast and Barrier served (so
#             the program's MPI_FINALIZE reached nodecoll)
#   install   cmake --install BUILD_DIR into a temporary prefix; test_preload.c with
#             NODECOLL_CONSUMER (it includes nodecoll.h and checks the counters itself) built
#             by a CMake project using find_package(nodecoll), by pkg-config, and with
#             -lnodecoll; each run at NP ranks must show the fast path
# MPIEXEC_PREFLAGS (environment) goes before -np, e.g. --oversubscribe.
set -u
scenario=$1 mpiexec=$2 mpicc=$3 library=$4 build_dir=$5 cmake=$6 np=$7
src_dir=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0
fail() { echo "FAIL: $*"; failed=1; }
ok_line="preload-app: ok ($np ranks)" # (what a run prints when every check passed)

# run LABEL EXE [VAR=value...]: runs EXE at NP ranks with the extra environment; output in
# $work/LABEL.out and .err.  Bounded: a hang is a failure, not a stuck test.
run() {
  local label=$1 exe=$2
  shift 2
  env "$@" timeout -k 5 60 ${launcher_prefix:-} "$mpiexec" ${MPIEXEC_PREFLAGS:-} -np "$np" "$exe" >"$work/$label.out" 2>"$work/$label.err"
  local status=$?
  if ((status != 0)) || ! grep -qF "$ok_line" "$work/$label.out"; then
    fail "$label: exit status $status"
    echo "--- stdout"; cat "$work/$label.out"; echo "--- stderr"; head -c 4000 "$work/$label.err"
    return 1
  fi
}

# expect_counters LABEL COLL ALG-REGEX: every rank printed a non-zero counter for it.
expect_counters() {
  local label=$1 coll=$2 alg=$3 r
  for ((r = 0; r < np; r++)); do
    grep -Eq "^nodecoll\[$r\]: $coll +($alg) +calls +[1-9]" "$work/$label.err" ||
      fail "$label: rank $r shows no $coll counter for $alg"
  done
}

reject_counters() { # LABEL COLL ALG-REGEX: no rank counted a call there
  local label=$1 coll=$2 alg=$3
  if grep -Eq "^nodecoll\[[0-9]+\]: ($coll) +($alg) +calls" "$work/$label.err"; then
    fail "$label: unexpected $coll counters:"
    grep -E "^nodecoll\[[0-9]+\]: ($coll) +($alg) " "$work/$label.err"
  fi
}

fast_path() { # LABEL: what a run of the app must show when nodecoll is active
  expect_counters "$1" bcast "shm|cma"
  expect_counters "$1" barrier "flat|tree|dissemination"
}

case $scenario in
preload | disabled | onecore)
  "$mpicc" -O1 -o "$work/app" "$src_dir/test_preload.c" || { echo "FAIL: $mpicc cannot build the app"; exit 1; }
  if readelf -d "$work/app" | grep NEEDED | grep -q nodecoll; then
    fail "the application links nodecoll: the test would prove nothing"
  fi
  if [[ $scenario == onecore ]]; then
    launcher_prefix="taskset -c 0"
    run onecore "$work/app" LD_PRELOAD="$library" NODECOLL_STATS=1 NODECOLL_VERBOSE=2 && {
      fast_path onecore
      for ((r = 0; r < np; r++)); do
        grep -Eq "^nodecoll\[$r\]: accelerated .*$np ranks on 1 usable cores: waits yield at once" "$work/onecore.err" ||
          fail "onecore: rank $r does not say its $np ranks share 1 core: $(grep -E "^nodecoll\[$r\]: accel" "$work/onecore.err")"
      done
    }
  elif [[ $scenario == preload ]]; then
    # Exactly as the README shows it: the launcher itself runs with the library preloaded.
    run preload "$work/app" LD_PRELOAD="$library" NODECOLL_STATS=1 && fast_path preload
    # Unpreloaded, the same program must not print nodecoll counters.
    run plain "$work/app" NODECOLL_STATS=1 && reject_counters plain "[a-z]+" ".*"
  else
    run disabled "$work/app" LD_PRELOAD="$library" NODECOLL_STATS=1 NODECOLL_ENABLE=0 && {
      expect_counters disabled bcast "pmpi:disabled"
      expect_counters disabled barrier "pmpi:disabled"
      reject_counters disabled "bcast|barrier" "flat|tree|dissemination|shm|cma|bridge|packed"
    }
  fi
  ;;
fortran)
  ok_line="test_fortran: ok ($np ranks)"
  run fortran "$mpicc" LD_PRELOAD="$library" NODECOLL_STATS=1 && {
    expect_counters fortran allreduce "flat|tree|recursive-doubling|ring|cma|shm|ordered"
    fast_path fortran
  }
  ;;
install)
  prefix=$work/prefix
  "$cmake" --install "$build_dir" --prefix "$prefix" >"$work/install.log" 2>&1 ||
    { cat "$work/install.log"; echo "FAIL: cmake --install"; exit 1; }
  libdir=$(dirname "$(find "$prefix" -name 'libnodecoll.so' | head -1)")
  [[ -d $libdir/pkgconfig ]] || fail "no pkgconfig directory next to the installed library ($libdir)"
  [[ -f $prefix/include/nodecoll.h ]] || fail "nodecoll.h not installed"

  # 1. CMake: find_package(nodecoll) and the exported target.
  mkdir -p "$work/cmake-consumer"
  cat >"$work/cmake-consumer/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.18)
project(consumer C)
find_package(nodecoll 0.1 REQUIRED)
add_executable(consumer "$src_dir/test_preload.c")
target_compile_definitions(consumer PRIVATE NODECOLL_CONSUMER)
target_link_libraries(consumer PRIVATE nodecoll::nodecoll)
EOF
  if "$cmake" -S "$work/cmake-consumer" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" \
       >"$work/cmake.log" 2>&1 && "$cmake" --build "$work/cmake-build" >>"$work/cmake.log" 2>&1; then
    ldd "$work/cmake-build/consumer" | grep -q "$prefix/.*libnodecoll" ||
      fail "find_package consumer does not load the installed library: $(ldd "$work/cmake-build/consumer" | grep nodecoll)"
    run cmake "$work/cmake-build/consumer" NODECOLL_STATS=1 && fast_path cmake
  else
    cat "$work/cmake.log"
    fail "find_package(nodecoll) consumer did not build"
  fi

  # 2. pkg-config.
  flags=$(PKG_CONFIG_PATH=$libdir/pkgconfig pkg-config --cflags --libs nodecoll) ||
    fail "pkg-config does not know nodecoll"
  echo "pkg-config --cflags --libs nodecoll: $flags"
  # shellcheck disable=SC2086
  if "$mpicc" -DNODECOLL_CONSUMER -o "$work/pc-consumer" "$src_dir/test_preload.c" $flags -Wl,-rpath,"$libdir"; then
    run pkg-config "$work/pc-consumer" NODECOLL_STATS=1 && fast_path pkg-config
  else
    fail "pkg-config consumer did not build"
  fi

  # 3. Plain -lnodecoll (the unsuffixed name of the flavour installed last).
  if "$mpicc" -DNODECOLL_CONSUMER -I"$prefix/include" -o "$work/l-consumer" "$src_dir/test_preload.c" \
       -L"$libdir" -lnodecoll -Wl,-rpath,"$libdir"; then
    run lnodecoll "$work/l-consumer" NODECOLL_STATS=1 && fast_path lnodecoll
  else
    fail "-lnodecoll consumer did not build"
  fi
  ;;
*)
  echo "unknown scenario $scenario"
  exit 2
  ;;
esac

((failed)) && exit 1
echo "test_preload $scenario: passed ($np ranks)"
