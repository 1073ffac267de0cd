#!/bin/sh
# lr-schedule-test.sh MPIEXEC NP PROGRAM TOKENS
# The learning-rate flags reach the optimizer: a run with --lr 2e-3
# --lr-schedule cosine --warmup-steps 2 --min-lr 2e-4 --steps 8 logs, step by
# step, the rate the schedule defines (LRSchedule.h; recomputed here), and
# its losses differ from a run at the compiled constant rate after the
# first update (step 1's loss is before any update, so it is the same).
set -eu
if [ $# -ne 4 ]; then
  echo "error: lr-schedule-test.sh: expected MPIEXEC NP PROGRAM TOKENS" >&2
  exit 2
fi
mpiexec=$1 np=$2 program=$3 tokens=$4
. "$(dirname "$0")/e2e-common.sh"
run() { # NAME ARGS...
  name=$1
  shift
  timeout 300 "$mpiexec" -np "$np" --oversubscribe "$program" --data "$tokens" \
    --steps 8 --log "$dir/$name.jsonl" "$@" >"$dir/$name.txt" 2>&1 ||
    { cat "$dir/$name.txt"; fail "$name did not run"; }
}
run scheduled --lr 2e-3 --lr-schedule cosine --warmup-steps 2 --min-lr 2e-4
run constant
sed -n 's/.*"lr":\([^,}]*\).*"step":\([0-9]*\).*/\2 \1/p' "$dir/scheduled.jsonl" >"$dir/lr.txt"
awk 'BEGIN { pi = atan2(0, -1) }
  {
    t = $1; lr = $2
    if (t <= 2) want = 2e-3 * t / 2
    else { p = (t - 2) / 6; want = 2e-4 + 1.8e-3 * 0.5 * (1 + cos(pi * p)) }
    d = lr - want; if (d < 0) d = -d
    printf "step %d lr %.9g (schedule %.9g)\n", t, lr, want
    if (d > 1e-12 + 1e-9 * want) bad = 1
    n++
  }
  END { exit (bad || n != 8) }' "$dir/lr.txt" || fail "the logged rates do not follow the schedule"
loss() { sed -n "s/.*\"loss\":\([^,}]*\).*\"step\":$2[,}].*/\1/p" "$dir/$1.jsonl"; }
[ "$(loss scheduled 1)" = "$(loss constant 1)" ] ||
  fail "step 1 (no update yet) differs: $(loss scheduled 1) vs $(loss constant 1)"
[ "$(loss scheduled 3)" != "$(loss constant 3)" ] ||
  fail "the schedule did not change the updates"
echo "PASS: the step log's learning rate follows warm-up + cosine; the updates use it"
