#!/usr/bin/env bash
# The whole test suite: installs what it needs, builds nodecoll for Open MPI and for MPICH,
# runs every test under each, then an ASan+UBSan build on a subset.  Idempotent; exits
# non-zero if anything failed.  Usage: scripts/test.sh [ctest arguments, e.g. -R bcast]
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh" || exit 1

passed=0 failed=0 status=0
run_suite() { # label build-dir [ctest args...]
  local label=$1 dir=$2; shift 2
  echo "=== $label: $(date +%T)"
  (cd "$dir" && ctest --output-on-failure --timeout 600 "$@") | tee "$dir/ctest.log"
  local rc=${PIPESTATUS[0]}
  local line; line=$(grep -E "tests passed, [0-9]+ tests failed out of" "$dir/ctest.log" | tail -1)
  local total; total=$(sed -E 's/.* out of ([0-9]+).*/\1/' <<<"$line")
  local bad; bad=$(sed -E 's/.*passed, ([0-9]+) tests failed.*/\1/' <<<"$line")
  if [[ -z "$line" ]]; then total=0; bad=1; fi
  passed=$((passed + total - bad)); failed=$((failed + bad))
  ((rc == 0)) || status=1
}

for mpi in openmpi mpich; do
  "$root/scripts/build.sh" "$mpi" "$root/build/$mpi" || { status=1; failed=$((failed + 1)); continue; }
  run_suite "$mpi" "$root/build/$mpi" "$@"
done

# Sanitizers: the library and the tests built with ASan+UBSan, fewer and smaller cases.
if "$root/scripts/build.sh" openmpi "$root/build/asan-openmpi" -DNODECOLL_SANITIZE=ON \
     -DNODECOLL_TEST_SCALE=0.2 -DCMAKE_BUILD_TYPE=Debug; then
  run_suite "asan+ubsan (openmpi)" "$root/build/asan-openmpi" -L quick -R "np(1|2|3)(\.|$)" "$@"
else
  status=1; failed=$((failed + 1))
fi

# ThreadSanitizer: the library and the threaded tests (MPI_THREAD_MULTIPLE).
if "$root/scripts/build.sh" openmpi "$root/build/tsan-openmpi" -DNODECOLL_TSAN=ON \
     -DNODECOLL_TEST_SCALE=0.3 -DCMAKE_BUILD_TYPE=Debug; then
  run_suite "tsan (openmpi)" "$root/build/tsan-openmpi" -L threads "$@"
else
  status=1; failed=$((failed + 1))
fi

echo "nodecoll: $passed passed, $failed failed"
exit $status
