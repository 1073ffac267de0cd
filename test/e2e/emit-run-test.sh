#!/bin/sh
# emit-run-test.sh MPIEXEC NP PROGRAM TOKENS STEPS
# Trains an emitted program for STEPS steps on NP ranks and checks that it
# exits 0 and that every step logged a finite loss.
set -eu
mpiexec=$1 np=$2 program=$3 tokens=$4 steps=$5
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export RATRAIN_PROGRESS_LINE=never
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
status=0
timeout 500 "$mpiexec" -np "$np" --oversubscribe "$program" --data "$tokens" \
  --steps "$steps" --log "$dir/steps.jsonl" >"$dir/out.txt" 2>&1 || status=$?
cat "$dir/out.txt"
cat "$dir/steps.jsonl" 2>/dev/null || true
if [ "$status" -ne 0 ]; then
  echo "FAIL: the program exited with status $status"
  exit 1
fi
# {"elapsed_s":...,"loss":5.517293,...,"step":2,...}: loss is null when not finite.
losses=$(sed -n 's/.*"loss":\([^,}]*\).*/\1/p' "$dir/steps.jsonl")
count=$(printf '%s\n' "$losses" | grep -c -E '^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$' || true)
if [ "$count" -ne "$steps" ]; then
  echo "FAIL: expected $steps finite losses, got: $losses"
  exit 1
fi
echo "PASS: $steps steps, losses $(echo $losses)"
