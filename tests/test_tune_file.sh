#!/usr/bin/env bash
# What nodecoll-tune does to the rules file it writes, and how nodecoll-info reads one.
#
# usage: test_tune_file.sh MPIEXEC NODECOLL-TUNE NODECOLL-INFO MPI SCENARIO
#   limit       a file already full (128 rules for 4 ranks per node): the run's rules for 2
#               make room by dropping the older size, said so, and nodecoll reads the result
#   unusable    a file with a bad line: left as it is, the run stops at once naming the line;
#               with --replace the file is written anew, said so
#   subset      --coll barrier replaces only the Barrier rules of its node size: the other
#               collectives' rules, its layout and levels lines and other sizes' rules stay
#   duplicates  a collective named six times in --coll is planned once
#   emulated    under NODECOLL_RANKS_PER_NODE=2 (4 ranks) the rules are for nodes of 2 ranks
#   fifo        --out naming a FIFO: refused at once, not waited on
#   default     without --out and NODECOLL_TUNE_FILE the rules go to ~/.config/nodecoll/rules-MPI
#               (MPI: openmpi or mpich), where nodecoll-info finds them
#   info        nodecoll-info on a FIFO and a directory says they are no regular files
# MPIEXEC_PREFLAGS (environment) goes before -np, e.g. --oversubscribe.
set -u
mpiexec=$1 tuner=$2 info=$3 mpi=$4 scenario=$5
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
file=$work/rules
unset NODECOLL_TUNE_FILE

fail() {
  echo "FAIL ($scenario): $*"
  exit 1
}

# Runs the tuner on NP ranks (bounded: a tuner waiting on a FIFO must fail, not hang); its
# output in $work/out.
tune() {
  local np=$1
  shift
  timeout 100 "$mpiexec" ${MPIEXEC_PREFLAGS:-} -np "$np" "$tuner" "$@" >"$work/out" 2>&1
  local rc=$?
  cat "$work/out"
  return $rc
}

said() { grep -qF -- "$1" "$work/out" || fail "the tuner did not say: $1"; }

header() {
  local version library
  version=$("$info" | sed -n 's/^nodecoll //p')
  library=$("$info" | sed -n 's/^built for: *//p')
  printf 'nodecoll-rules 2\nnodecoll %s\nmpi %s\n' "$version" "$library"
}

case $scenario in
limit)
  { header; for i in $(seq 0 127); do echo "bcast 4 $((i * 10)) $((i * 10 + 9)) shm"; done; } >"$file"
  tune 2 --quick --coll barrier --out "$file" || fail "the tuner failed"
  said "the rules for 4 ranks per node (tuned longest ago) are dropped"
  NODECOLL_TUNE_FILE=$file "$info" | grep -q '^tuning rules: 1 per call' ||
    fail "nodecoll does not read what the tuner wrote: $(NODECOLL_TUNE_FILE=$file "$info" | grep -A1 '^tuning')"
  ;;
unusable)
  { header; echo "bcast 64 0 inf cma"; echo "bcast 16 0 inf xma"; } >"$file"
  cp "$file" "$work/before"
  tune 2 --quick --coll barrier --out "$file" && fail "the tuner wrote over a file nodecoll cannot use"
  said "$file:5: \"xma\" is no algorithm of bcast"
  said "--replace"
  cmp -s "$file" "$work/before" || fail "the file was changed"
  tune 2 --quick --coll barrier --out "$file" --replace || fail "the tuner failed with --replace"
  said "--replace: the rules in $file are dropped"
  grep -q '^barrier 2 0 0 ' "$file" && ! grep -q '^bcast' "$file" || fail "not a new file: $(cat "$file")"
  ;;
subset)
  kept=("layout 2 segment=64K segments=4" "levels 2 numa" "allreduce 2 0 inf tree" "bcast 2 0 inf shm"
    "bcast 4 0 inf cma")
  { header; printf '%s\n' "${kept[@]}" "barrier 2 0 0 flat"; } >"$file"
  tune 2 --quick --coll barrier --out "$file" || fail "the tuner failed"
  for line in "${kept[@]}"; do grep -qxF "$line" "$file" || fail "\"$line\" is gone: $(cat "$file")"; done
  [[ $(grep -c '^barrier 2 0 0 ' "$file") == 1 ]] || fail "not one Barrier rule: $(cat "$file")"
  ;;
duplicates)
  tune 2 --dry-run --coll bcast,bcast,bcast,bcast,bcast,bcast --out "$file" || fail "the tuner failed"
  [[ $(grep -c '^  bcast:' "$work/out") == 1 ]] || fail "Bcast is not planned once"
  ;;
emulated)
  NODECOLL_RANKS_PER_NODE=2 tune 4 --quick --coll barrier --out "$file" || fail "the tuner failed"
  said "for 2 ranks per node"
  grep -q '^barrier 2 0 0 ' "$file" || fail "no rule for 2 ranks per node: $(cat "$file")"
  ;;
fifo)
  mkfifo "$file"
  tune 2 --quick --coll barrier --out "$file" && fail "the tuner wrote over a FIFO"
  said "$file: is not a regular file"
  [[ -p $file ]] || fail "the FIFO is gone"
  ;;
default)
  mkdir "$work/home"
  HOME=$work/home XDG_CONFIG_HOME= tune 2 --quick --coll barrier || fail "the tuner failed"
  [[ -f $work/home/.config/nodecoll/rules-$mpi ]] || fail "no rules-$mpi: $(ls "$work/home/.config/nodecoll")"
  HOME=$work/home XDG_CONFIG_HOME= "$info" | grep -qF "rules-$mpi (default location)" ||
    fail "nodecoll-info does not find them"
  ;;
info)
  mkfifo "$work/fifo"
  for f in "$work/fifo" "$work"; do
    NODECOLL_TUNE_FILE=$f timeout 20 "$info" >"$work/out" 2>&1
    said "$f: is not a regular file; using the built-in defaults"
  done
  ;;
*) fail "no such scenario" ;;
esac
echo "test_tune_file $scenario: passed"
