#!/bin/sh
# near-losses-test.sh MPIEXEC NP PROGRAM REFERENCE TOKENS STEPS TOLERANCE
#                     CHANGE [PROGRAM_ARGS]
# PROGRAM differs from REFERENCE by CHANGE (words for the messages), which
# computes the same step in another order (e.g. uneven data-parallel shares
# summing the same micro-batches): both train STEPS steps on the same data
# and seed (PROGRAM with the extra options PROGRAM_ARGS), and every step's
# loss must be within TOLERANCE (relative) of the reference's. Prints the
# largest relative difference. Exits 1 when a run fails, logs fewer than
# STEPS steps, a loss is not finite, or any step differs by more.
set -eu
if [ $# -ne 8 ] && [ $# -ne 9 ]; then
  echo "error: near-losses-test.sh: expected MPIEXEC NP PROGRAM REFERENCE" \
       "TOKENS STEPS TOLERANCE CHANGE [PROGRAM_ARGS], got $# arguments" >&2
  exit 2
fi
mpiexec=$1 np=$2 program=$3 reference=$4 tokens=$5 steps=$6 tolerance=$7
change=$8 program_args=${9-}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export RATRAIN_PROGRESS_LINE=never
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
run() { # program log [options]
  # shellcheck disable=SC2086 # the options are words
  timeout 1000 "$mpiexec" -np "$np" --oversubscribe "$1" --data "$tokens" \
    --steps "$steps" --seed 3 --log "$2" ${3-} >"$dir/out.txt" 2>&1 ||
    { cat "$dir/out.txt"; echo "FAIL: $1 did not train"; exit 1; }
}
losses() { # "step loss" of every step record
  sed -n 's/.*"loss":\([^,}]*\).*"step":\([0-9]*\).*/\2 \1/p' "$1"
}
run "$program" "$dir/changed.jsonl" "$program_args"
run "$reference" "$dir/reference.jsonl"
losses "$dir/changed.jsonl" >"$dir/changed.txt"
losses "$dir/reference.jsonl" >"$dir/reference.txt"
for f in changed reference; do
  n=$(wc -l <"$dir/$f.txt")
  if [ "$n" -ne "$steps" ]; then
    echo "FAIL: the $f run logged $n steps, expected $steps"
    exit 1
  fi
done
echo "with $change: $(head -1 "$dir/changed.txt") ... $(tail -1 "$dir/changed.txt")"
echo "reference: $(head -1 "$dir/reference.txt") ... $(tail -1 "$dir/reference.txt")"
paste -d ' ' "$dir/changed.txt" "$dir/reference.txt" | awk -v tol="$tolerance" '
  {
    if ($2 != $2 + 0 || $4 != $4 + 0 || $1 != $3) { bad = $1; exit }
    d = $2 - $4; if (d < 0) d = -d
    r = $4 < 0 ? -$4 : $4
    rel = r > 0 ? d / r : d
    if (rel > worst) { worst = rel; at = $1 }
  }
  END {
    if (bad != "") { printf "FAIL: step %s has no finite loss in both runs\n", bad; exit 1 }
    printf "largest relative difference %.3g at step %s (tolerance %s)\n", worst, at, tol
    if (worst > tol + 0) { print "FAIL: the losses differ by more than the tolerance"; exit 1 }
    print "PASS"
  }'
