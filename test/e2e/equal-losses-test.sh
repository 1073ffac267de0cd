#!/bin/sh
# equal-losses-test.sh MPIEXEC NP PROGRAM REFERENCE TOKENS STEPS CHANGE
# PROGRAM differs from REFERENCE only by CHANGE (words for the messages, e.g.
# "offload", "waits placed by --mt3k-insert-waits"), which must not change the
# numerics: both train STEPS steps on the same data and seed, and every
# step's logged loss must be the same text (bit for bit). Exits 1 when a run
# fails, logs fewer than STEPS steps, or any loss differs.
set -eu
if [ $# -ne 7 ]; then
  echo "error: equal-losses-test.sh: expected MPIEXEC NP PROGRAM" \
       "REFERENCE TOKENS STEPS CHANGE, got $# arguments" >&2
  exit 2
fi
mpiexec=$1 np=$2 program=$3 reference=$4 tokens=$5 steps=$6 change=$7
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export RATRAIN_PROGRESS_LINE=never
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
run() { # program log
  timeout 500 "$mpiexec" -np "$np" --oversubscribe "$1" --data "$tokens" \
    --steps "$steps" --seed 3 --log "$2" >"$dir/out.txt" 2>&1 ||
    { cat "$dir/out.txt"; echo "FAIL: $1 did not train"; exit 1; }
}
losses() { # "step loss" of every step record
  sed -n 's/.*"loss":\([^,}]*\).*"step":\([0-9]*\).*/\2 \1/p' "$1"
}
run "$program" "$dir/changed.jsonl"
run "$reference" "$dir/reference.jsonl"
losses "$dir/changed.jsonl" >"$dir/changed.txt"
losses "$dir/reference.jsonl" >"$dir/reference.txt"
n=$(wc -l <"$dir/changed.txt")
if [ "$n" -ne "$steps" ]; then
  echo "FAIL: $program logged $n steps, expected $steps"
  exit 1
fi
echo "with $change: $(head -1 "$dir/changed.txt") ... $(tail -1 "$dir/changed.txt")"
echo "reference: $(head -1 "$dir/reference.txt") ... $(tail -1 "$dir/reference.txt")"
if ! diff "$dir/reference.txt" "$dir/changed.txt"; then
  echo "FAIL: the losses with $change differ from the reference's"
  exit 1
fi
echo "PASS: $steps steps, identical losses"
