#!/usr/bin/env bash
# Usage: scripts/bench.sh [--no-install] [--mpi openmpi,mpich] [-- nodecoll-bench options...]
#
# Installs what is missing, builds nodecoll for both MPIs, runs the default sweep of
# nodecoll-bench (each MPI at 2 ranks, and oversubscribed at 4), and writes the report:
#   docs/results.md        summary tables and plots, readable at a glance
#   docs/results/*.png     latency and speedup against message size, one per collective
#   docs/results/*.json    everything each run measured (input of tools/bench/plot.py)
#   docs/results/results.csv   one line per measured point, all runs
# Raw text tables and logs go to bench-out/.  Re-running replaces the report; if a run
# fails, the previous report stays untouched.  Options after -- go to every run.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
install=1
mpis=openmpi,mpich
extra=()
command_line="scripts/bench.sh${*:+ $*}"
while (($#)); do
  case $1 in
    --no-install) install=0 ;;
    --mpi) mpis=${2:?--mpi needs a list}; shift ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,12s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) echo "bench.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

start=$SECONDS
cores=$(nproc)
out=$root/bench-out
stage=$out/stage
mkdir -p "$out"
rm -rf "$stage"
mkdir -p "$stage/results"

say() { printf '[bench %d:%02d] %s\n' $(((SECONDS - start) / 60)) $(((SECONDS - start) % 60)) "$*" >&2; }

# Sweeps, per kind of run.  Sized so that the whole script stays under 10 minutes on a
# 2-core machine: oversubscribed host MPIs need milliseconds per synchronising step
# (MPICH 4.0 about 8 ms), so those runs get fewer sizes and rounds.
SWEEP_FIT=(--sizes 8:16M --time-budget 0.5 --iters 200)
SWEEP_OVER_OPENMPI=(--sizes 8:16M:8 --time-budget 0.5 --warmup 2)
SWEEP_OVER_MPICH=(--sizes 8:2M:8 --time-budget 0.3 --warmup 1 --iters 30)

# One run: MPI, rank count.
jsons=()
run() {
  local mpi=$1 np=$2 name="$1-np$2" launcher=() sweep=()
  local bin=$root/build/$mpi/tools/bench/nodecoll-bench
  if [ "$mpi" = openmpi ]; then
    launcher=(mpirun.openmpi -np "$np")
    # --oversubscribe only when needed: it makes Open MPI yield while waiting, which
    # would slow the host MPI in runs where every rank has a core.
    ((np > cores)) && launcher+=(--oversubscribe)
    [ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  else
    launcher=(mpirun.mpich -np "$np")
  fi
  if ((np <= cores)); then sweep=("${SWEEP_FIT[@]}")
  elif [ "$mpi" = openmpi ]; then sweep=("${SWEEP_OVER_OPENMPI[@]}")
  else sweep=("${SWEEP_OVER_MPICH[@]}"); fi
  say "run $name: ${launcher[*]} nodecoll-bench ${sweep[*]} ${extra[*]}"
  "${launcher[@]}" "$bin" "${sweep[@]}" --json "$stage/results/$name.json" \
      --csv "$stage/$name.csv" "${extra[@]}" >"$out/$name.txt"
  jsons+=("$stage/results/$name.json")
}

if ((install)); then
  say "installing dependencies"
  "$root/scripts/install-deps.sh"
fi

IFS=, read -ra mpi_list <<<"$mpis"
for mpi in "${mpi_list[@]}"; do
  say "building $mpi"
  "$root/scripts/build.sh" "$mpi" >"$out/build-$mpi.log" 2>&1 ||
    { tail -20 "$out/build-$mpi.log" >&2; exit 1; }
done

for mpi in "${mpi_list[@]}"; do
  run "$mpi" 2
  run "$mpi" 4
done

# The plots need matplotlib; Debian's python3 has it (python3-matplotlib), a python3 from
# pyenv or a venv earlier on PATH usually does not.
python=/usr/bin/python3
[ -x "$python" ] || python=python3
say "plotting"
head -1 "$(ls "$stage"/*.csv | head -1)" >"$stage/results/results.csv"
for f in "$stage"/*.csv; do tail -n +2 "$f" >>"$stage/results/results.csv"; done
"$python" "$root/tools/bench/plot.py" "${jsons[@]}" --out "$stage/results.md" --focused-dir "$root/docs" \
    --img-dir "$stage/results" --command "$command_line" --seconds $((SECONDS - start))

# Replace the previous report only now that the new one is complete.
rm -rf "$root/docs/results"
mkdir -p "$root/docs"
mv "$stage/results" "$root/docs/results"
mv "$stage/results.md" "$root/docs/results.md"
say "done: docs/results.md ($((SECONDS - start)) s)"
