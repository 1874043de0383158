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
#   report       (3 ranks) ranks enter calls late with NODECOLL_WAIT_REPORT=1: each waiting
#                rank reports each late call exactly once, naming the call and the late
#                rank, and the job ends normally
#   dead-waiting the last rank is SIGKILLed while the others wait for it in a Bcast, and the
#                launcher does not stop them: they must find it dead, name it and the call,
#                and abort the job within a bounded time
#   dead-loop    the same for rank 0 killed at any point of the loop of collectives
# MPIEXEC_PREFLAGS (environment) goes before -np, e.g. --oversubscribe.  For the dead-*
# scenarios MPIEXEC_KEEP_GOING holds the launcher's flags that keep a job running after a
# rank dies, and KILL_TEST_DETACH=1 starts every rank in a session of its own (its stderr in
# a file), out of reach of a launcher that stops the job anyway (MPICH 4.0's hydra does,
# within 0.1-0.4 s, now and then, even with -disable-auto-cleanup).
#
# Only names carrying the pid of one of this job's ranks count (the segment name is
# /nodecoll.<creator pid>.<counter>.<hex>), so other jobs on the machine cannot disturb it.
set -u
if [[ $1 == --detached ]]; then # a rank of KILL_TEST_DETACH=1: --detached DIR WORKER ARGS...
  exec setsid -f -w bash -c 'exec "$1" "${@:2}" 2>>"$0/err.$$"' "${@:2}"
fi
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
start_job() { # mode [launcher flags...]
  : >"$work/out"
  : >"$work/err"
  local mode=$1 rank=("$worker")
  shift
  [[ ${KILL_TEST_DETACH:-0} == 1 && $scenario == dead-* ]] && rank=(bash "$0" --detached "$work" "$worker")
  setsid "$mpiexec" ${MPIEXEC_PREFLAGS:-} "$@" -np "$np" "${rank[@]}" "$mode" >>"$work/out" 2>>"$work/err" &
  job=$!
}

# What the job wrote to stderr, the launcher's and detached ranks' files together.
job_stderr() { cat "$work/err" "$work"/err.* 2>/dev/null; }

# A process that has not exited (a zombie nobody reaps has).
running() { [[ $(sed -E 's/.*\) (.).*/\1/' "/proc/$1/stat" 2>/dev/null) =~ ^[^ZX]$ ]]; }

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

# Waits (bounded: 30 s, or $1) for the launcher to end; returns its exit status in $status.
wait_job() {
  local limit=${1:-30}
  local deadline=$((SECONDS + limit))
  while kill -0 "$job" 2>/dev/null; do
    if ((SECONDS > deadline)); then
      fail "$mpiexec still running $limit s after the failure: killing it"
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
    for _ in $(seq 50); do running "$pid" || break; sleep 0.1; done
    if running "$pid"; then fail "rank pid $pid outlived the job"; kill -9 "$pid"; fi
  done
}

# Sockets of shared heaps (abstract namespace, core/heap.h): they go with their processes.
heap_sockets() { grep -c '@nodecoll-heap-' /proc/net/unix || true; }

leftovers() { # names in /dev/shm of segments created by this job's ranks
  local pid
  for pid in "${pids[@]}"; do
    ls /dev/shm 2>/dev/null | grep -E "^nodecoll\.$pid\." || true
  done
}

show_output() {
  echo "--- stdout"; cat "$work/out"; echo "--- stderr"; job_stderr | head -c 4000
}

# report: rank $1's reports of call $2 (an MPI name and a call number) must be exactly one,
# waiting for rank $3 ("" for none at all); rank $3 last entered $4.
expect_report() { # rank "MPI_X (call N)" peer "MPI_Y (call M)"
  local lines
  lines=$(grep -F "nodecoll: rank $1 (pid ${pids[$1]}) has waited" "$work/err" | grep -F " in $2 for ")
  if [[ -z $3 ]]; then
    [[ -z $lines ]] || fail "rank $1 reported a wait in $2 although it waited for nobody: $lines"
    return
  fi
  local want="in $2 for rank $3 (node rank $3, pid ${pids[$3]}): its "
  local n
  n=$(grep -c . <<<"$lines")
  [[ -n $lines ]] || n=0
  ((n == 1)) || fail "rank $1 reported its wait in $2 $n times, not once"
  grep -qF "$want" <<<"$lines" || fail "rank $1's report of $2 does not say \"$want\""
  grep -qF "; rank $3 last entered $4" <<<"$lines" || fail "rank $1's report of $2 does not say rank $3 last entered $4"
}

# dead-*: the victim is named by its pid with the call, and every process named dead is
# dead: the victim, or a rank that aborted itself on finding a dead rank (a wait on it may
# see that before the launcher has stopped the job).  Ranks are told apart by pid: a
# message numbers them on the communicator of its call (test_kill reverses one).
expect_death_found() { # victim "MPI_X (call N)" or ""
  local victim=${pids[$1]} call=$2 line named aborted=" "
  local said="pid $victim) has died ("
  job_stderr | grep -qF "$said" || fail "no rank said: ... (..., $said..."
  [[ -z $call ]] || job_stderr | grep -F "$said" | grep -qF " for it in $call: " ||
    fail "no rank found pid $victim dead in $call"
  while read -r line; do
    aborted+="$(sed -E 's/.* while rank [0-9]+ \(pid ([0-9]+)\) .*/\1/' <<<"$line") "
  done < <(job_stderr | grep -F "; aborting the job")
  while read -r named; do
    [[ $named == "$victim" || $aborted == *" $named "* ]] || fail "pid $named was named dead, but lived"
  done < <(job_stderr | grep -F " has died (" | sed -E 's/^nodecoll: rank .* pid ([0-9]+)\) has died .*/\1/')
}

case $scenario in
kill-first | kill-last | abort)
  sockets_before=$(heap_sockets)
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
  (($(heap_sockets) == sockets_before)) || fail "heap sockets: $sockets_before before the job, $(heap_sockets) after"
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
report)
  export NODECOLL_WAIT_REPORT=1 NODECOLL_BARRIER_ALG=dissemination # (test_kill.c: who waits for whom)
  start_job late
  pids=()
  wait_job
  while read -r _ rank pid; do pids[rank]=$pid; done < <(grep '^ready ' "$work/out")
  ((status == 0)) || fail "the job failed (status $status)"
  (($(grep -c '^done ' "$work/out") == np)) || fail "not every rank finished its calls"
  # Call 3, Bcast from rank 2, which is late: ranks 0 and 1 wait for it.
  expect_report 0 "MPI_Bcast (call 3)" 2 "MPI_Allreduce (call 2)"
  expect_report 1 "MPI_Bcast (call 3)" 2 "MPI_Allreduce (call 2)"
  expect_report 2 "MPI_Bcast (call 3)" ""
  # Call 5, a one-step dissemination Barrier; rank 2 comes 1.5 s late, rank 1 3 s: rank 0
  # waits for rank 2, then 1.5 s more for rank 1 (same call: no second report), rank 2
  # waits for rank 1, rank 1 for nobody.
  expect_report 0 "MPI_Barrier (call 5)" 2 "MPI_Barrier (call 4)"
  expect_report 2 "MPI_Barrier (call 5)" 1 "MPI_Barrier (call 4)"
  expect_report 1 "MPI_Barrier (call 5)" ""
  reports=$(grep -c "has waited" "$work/err")
  ((reports == 4)) || fail "$reports reports, not 4"
  ;;
dead-waiting | dead-loop)
  victim=$((np - 1)) mode=hang
  [[ $scenario == dead-loop ]] && victim=0 mode=loop
  # shellcheck disable=SC2086
  start_job $mode ${MPIEXEC_KEEP_GOING:-}
  wait_ready || { show_output; exit 1; }
  sleep 0.6 # the others wait (hang: past the first liveness checks, which must not fire)
  echo "killing rank $victim (pid ${pids[victim]}) of pids ${pids[*]}"
  kill -9 "${pids[victim]}"
  killed_at=$SECONDS
  wait_job 10
  echo "$mpiexec ended with status $status, $((SECONDS - killed_at)) s after the kill"
  job_stderr | grep -q "never stopped" && fail "a rank ran out its 30 s: the failure did not stop the job"
  call=""
  [[ $scenario == dead-waiting ]] && call="MPI_Bcast (call 3)"
  expect_death_found "$victim" "$call"
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
