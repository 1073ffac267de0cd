#!/bin/sh
# close-losses-test.sh [--every-step] MPIEXEC NP PROGRAM REFERENCE TOKENS STEPS
#                      TOLERANCE CHANGE [PROGRAM_ARGS]
# PROGRAM differs from REFERENCE by CHANGE (words for the messages), which
# changes the numerics but must not change how well the model trains: both
# train STEPS steps on the same data and seed (PROGRAM with the extra
# options PROGRAM_ARGS, e.g. "--lr 6e-4"), and the mean loss of the last 20
# steps of PROGRAM must be within TOLERANCE (relative) of REFERENCE's. With
# --every-step (a change that computes the same step in another order, e.g.
# uneven data-parallel shares summing the same micro-batches), every step's
# loss must be within TOLERANCE of the reference's; the largest relative
# difference is printed. Exits 1 when a run fails, logs fewer than STEPS
# steps, a loss is not finite, or the losses differ by more.
set -eu
every_step=false
if [ "${1-}" = --every-step ]; then
  every_step=true
  shift
fi
if [ $# -ne 8 ] && [ $# -ne 9 ]; then
  echo "error: close-losses-test.sh: expected [--every-step] MPIEXEC NP PROGRAM REFERENCE" \
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
if $every_step; then
  echo "with $change: $(head -1 "$dir/changed.txt") ... $(tail -1 "$dir/changed.txt")"
  echo "reference: $(head -1 "$dir/reference.txt") ... $(tail -1 "$dir/reference.txt")"
  paste -d ' ' "$dir/changed.txt" "$dir/reference.txt" | awk -v tol="$tolerance" '
    {
      if ($2 != $2 + 0 || $4 != $4 + 0 || $1 != $3) { bad = $1; exit }
      d = $2 - $4; if (d < 0) d = -d
      r = $4 < 0 ? -$4 : $4
      rel = r > 0 ? d / r : d
      if (rel >= worst) { worst = rel; at = $1 }
    }
    END {
      if (bad != "") { printf "FAIL: step %s has no finite loss in both runs\n", bad; exit 1 }
      printf "largest relative difference %.3g at step %s (tolerance %s)\n", worst, at, tol
      if (worst > tol + 0) { print "FAIL: the losses differ by more than the tolerance"; exit 1 }
      print "PASS"
    }'
  exit
fi
tail -20 "$dir/changed.txt" >"$dir/changed-tail.txt"
tail -20 "$dir/reference.txt" >"$dir/reference-tail.txt"
awk -v change="$change" -v args="${program_args:+ ($program_args)}" -v tol="$tolerance" -v steps="$steps" '
  FNR == 1 { file++ }
  {
    if ($2 != $2 + 0 || $2 == "nan" || $2 == "inf") { bad = 1 }
    sum[file] += $2; count[file]++; last[file] = $2
  }
  END {
    if (bad || count[1] == 0 || count[2] == 0) {
      print "FAIL: a loss is not a finite number"; exit 1
    }
    a = sum[1] / count[1]; b = sum[2] / count[2]
    rel = (a - b) / b; if (rel < 0) rel = -rel
    printf "with %s%s: step %d loss %s, mean of the last %d steps %.6f\n",
           change, args, steps, last[1], count[1], a
    printf "reference: step %d loss %s, mean of the last %d steps %.6f\n",
           steps, last[2], count[2], b
    printf "relative difference of the means: %.4f (tolerance %s)\n", rel, tol
    if (rel > tol + 0) { print "FAIL: the losses differ by more"; exit 1 }
    print "PASS"
  }' "$dir/changed-tail.txt" "$dir/reference-tail.txt"
