#!/usr/bin/env bash
# A job that dies in the middle of accelerated collectives leaves nothing in /dev/shm, and a
# name a dead job did leave behind is removed by the next job.
#
# usage: test_kill.sh MPIEXEC WORKER NP SCENARIO
#   kill-first   SIGKILL rank 0 (the node leader, creator of every segment) mid-loop
#   kill-last    SIGKILL the last rank mid-loop
#   abort        the last rank calls MPI_Abort mid-loop
#   sweep        /dev/shm/nodecoll.<dead pid>.0.0 must be removed by the next job, while
#                /dev/shm/nodecoll.<live pid>.0.0 must stay
# MPIEXEC_PREFLAGS (environment) goes before -np, e.g. --oversubscribe.
#
# Only names carrying the pid of one of this job's ranks count (the segment name is
# /nodecoll.<creator pid>.<counter>.<hex>), so other jobs on the machine cannot disturb it.
set -u
mpiexec=$1 worker=$2 np=$3 scenario=$4
work=$(mktemp -d)
job=0 fake_dead="" fake_live=""
# Stops the whole job: the launcher first (so it can clean up after the host MPI), then
# anything of its process group that is left.
stop_job() {
  kill -0 "$job" 2>/dev/null || return 0
  kill -TERM "$job" 2>/dev/null
  for _ in $(seq 30); do kill -0 "$job" 2>/dev/null || break; sleep 0.1; done
  kill -9 -- "-$job" 2>/dev/null
}
cleanup() {
  ((job)) && stop_job
  rm -rf "$work"
  [[ -n $fake_dead ]] && rm -f "$fake_dead"
  [[ -n $fake_live ]] && rm -f "$fake_live"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; failed=1; }
failed=0

# Starts the worker as its own process group (so it can be killed as a whole).
start_job() { # mode
  : >"$work/out"
  : >"$work/err"
  setsid "$mpiexec" ${MPIEXEC_PREFLAGS:-} -np "$np" "$worker" "$1" >>"$work/out" 2>>"$work/err" &
  job=$!
}

# Waits until every rank has printed "ready <rank> <pid>"; fills pids[].
wait_ready() {
  local deadline=$((SECONDS + 30))
  while (($(grep -c '^ready ' "$work/out") < np)); do
    if ! kill -0 "$job" 2>/dev/null; then fail "job ended before all ranks were ready"; return 1; fi
    if ((SECONDS > deadline)); then fail "ranks not ready after 30 s"; return 1; fi
    sleep 0.05
  done
  pids=()
  while read -r _ rank pid; do pids[rank]=$pid; done < <(grep '^ready ' "$work/out")
}

# Waits (bounded) for the launcher to end; returns its exit status in $status.
wait_job() {
  local deadline=$((SECONDS + 30))
  while kill -0 "$job" 2>/dev/null; do
    if ((SECONDS > deadline)); then
      fail "$mpiexec still running 30 s after the failure: killing it"
      stop_job
      break
    fi
    sleep 0.1
  done
  wait "$job"
  status=$?
  # No rank may outlive its launcher.
  local pid
  for pid in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then fail "rank pid $pid outlived the job"; kill -9 "$pid"; fi
  done
}

leftovers() { # names in /dev/shm of segments created by this job's ranks
  local pid
  for pid in "${pids[@]}"; do
    ls /dev/shm 2>/dev/null | grep -E "^nodecoll\.$pid\." || true
  done
}

show_output() {
  echo "--- stdout"; cat "$work/out"; echo "--- stderr"; head -c 4000 "$work/err"
}

case $scenario in
kill-first | kill-last | abort)
  if [[ $scenario == abort ]]; then start_job abort; else start_job loop; fi
  wait_ready || { show_output; exit 1; }
  if [[ $scenario != abort ]]; then
    victim=0
    [[ $scenario == kill-last ]] && victim=$((np - 1))
    sleep 0.3 # well inside the loop of collectives
    grep -q "never stopped" "$work/err" && fail "the loop ended before the kill"
    echo "killing rank $victim (pid ${pids[victim]}) of pids ${pids[*]}"
    kill -9 "${pids[victim]}"
  fi
  wait_job
  echo "$mpiexec ended with status $status"
  ((status != 0)) || fail "the job reported success although a rank died"
  grep -q "never stopped" "$work/err" && fail "a rank ran out its 30 s: the failure did not stop the job"
  # The abort code (7) is the evidence; MPICH's launcher may tear the job down before the
  # aborting rank's message reaches it.
  [[ $scenario == abort ]] && ((status != 7)) && ! grep -q "aborts after" "$work/err" &&
    fail "the last rank never called MPI_Abort"
  left=$(leftovers)
  [[ -z $left ]] || fail "left in /dev/shm by the job:" $left
  ;;
sweep)
  # A pid that certainly belongs to no process: one that just exited (and was not reused).
  sleep 0 &
  dead=$!
  wait "$dead"
  kill -0 "$dead" 2>/dev/null && { echo "pid $dead reused at once; cannot test"; exit 1; }
  fake_dead=/dev/shm/nodecoll.$dead.0.0
  fake_live=/dev/shm/nodecoll.$$.0.0
  : >"$fake_dead"
  : >"$fake_live"
  start_job once
  pids=()
  wait_job
  echo "$mpiexec ended with status $status"
  ((status == 0)) || fail "the job failed"
  [[ -e $fake_dead ]] && fail "$fake_dead (dead creator) was not swept"
  [[ -e $fake_live ]] || fail "$fake_live (live creator) was removed"
  while read -r _ rank pid; do pids[rank]=$pid; done < <(grep '^ready ' "$work/out")
  left=$(leftovers)
  [[ -z $left ]] || fail "left in /dev/shm by the job:" $left
  ;;
*)
  echo "unknown scenario $scenario"
  exit 2
  ;;
esac

if ((failed)); then
  show_output
  exit 1
fi
echo "test_kill $scenario: passed ($np ranks)"
