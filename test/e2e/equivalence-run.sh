#!/bin/sh
# equivalence-run.sh MPIEXEC NP PROGRAM TOKENS STEPS SEED LOG
# Trains an emitted program for STEPS steps on NP ranks with data seed SEED
# and leaves its step log (one JSON line per step) at LOG for the
# equivalence comparisons (equivalence-compare.sh). A stale LOG is removed
# first, so a failed run never leaves an old log behind; LOG is written only
# when the program exits 0 and logged STEPS finite losses.
set -eu
if [ $# -ne 7 ]; then
  echo "error: equivalence-run.sh: expected MPIEXEC NP PROGRAM TOKENS STEPS" \
       "SEED LOG, got $# arguments" >&2
  exit 2
fi
mpiexec=$1 np=$2 program=$3 tokens=$4 steps=$5 seed=$6 log=$7
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export RATRAIN_PROGRESS_LINE=never
rm -f "$log"
mkdir -p "$(dirname "$log")"
tmp=$log.partial
rm -f "$tmp"
status=0
timeout 280 "$mpiexec" -np "$np" --oversubscribe "$program" --data "$tokens" \
  --steps "$steps" --seed "$seed" --log "$tmp" >"$log.out" 2>&1 || status=$?
if [ "$status" -ne 0 ]; then
  cat "$log.out"
  echo "FAIL: $program exited with status $status"
  exit 1
fi
# {"elapsed_s":...,"loss":5.517293,...,"step":2,...}: loss is null when not
# finite.
count=$(sed -n 's/.*"loss":\([^,}]*\).*/\1/p' "$tmp" |
  grep -c -E '^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$' || true)
if [ "$count" -ne "$steps" ]; then
  cat "$log.out" "$tmp"
  echo "FAIL: expected $steps finite losses in $tmp, got $count"
  exit 1
fi
mv "$tmp" "$log"
last=$(tail -n 1 "$log" | sed -n 's/.*"loss":\([^,}]*\).*/\1/p')
elapsed=$(tail -n 1 "$log" | sed -n 's/.*"elapsed_s":\([^,}]*\).*/\1/p')
echo "PASS: $steps steps on $np ranks in ${elapsed}s, last loss $last ($log)"
