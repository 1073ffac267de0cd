#!/bin/sh
# equivalence-rerun.sh MPIEXEC NP PROGRAM TOKENS STEPS SEED LOG
# Determinism and data-order checks for the equivalence runs: LOG is the
# step log of PROGRAM trained with data seed SEED (e2e.equiv.run.*).
#  1. The same program with the same seed, rerun for STEPS steps, logs
#     bit-identical losses at steps 1..STEPS (relative deviation 0).
#  2. With seed SEED + 1 (another sample order) the losses of steps
#     1..STEPS deviate by more than 1e-3 somewhere: the equivalence tests'
#     tolerance does tell different data apart.
set -eu
if [ $# -ne 7 ]; then
  echo "error: equivalence-rerun.sh: expected MPIEXEC NP PROGRAM TOKENS" \
       "STEPS SEED LOG, got $# arguments" >&2
  exit 2
fi
mpiexec=$1 np=$2 program=$3 tokens=$4 steps=$5 seed=$6 log=$7
here=$(dirname "$0")
if [ ! -s "$log" ]; then
  echo "error: $log: no step log (did its e2e.equiv.run test pass?)" >&2
  exit 1
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
head -n "$steps" "$log" >"$dir/reference.jsonl"
"$here/equivalence-run.sh" "$mpiexec" "$np" "$program" "$tokens" "$steps" \
  "$seed" "$dir/same-seed.jsonl"
echo "same seed $seed, steps 1..$steps:"
"$here/equivalence-compare.sh" "$dir/reference.jsonl" "$dir/same-seed.jsonl" \
  0 "$steps"
other=$((seed + 1))
"$here/equivalence-run.sh" "$mpiexec" "$np" "$program" "$tokens" "$steps" \
  "$other" "$dir/other-seed.jsonl"
echo "seed $other against seed $seed, steps 1..$steps (must exceed 1e-3):"
if "$here/equivalence-compare.sh" "$dir/reference.jsonl" \
    "$dir/other-seed.jsonl" 1e-3 "$steps"; then
  echo "FAIL: seed $other trains on the same losses as seed $seed"
  exit 1
fi
echo "PASS: deterministic given the seed; another seed is told apart"
