#!/bin/sh
# resume-layout-test.sh MPIEXEC PROGRAM NP OTHER OTHER_NP TOKENS STEPS TOLERANCE
# A checkpoint resumes into another layout (docs/runtime.md, "Checkpoints"):
# PROGRAM (on NP ranks) trains 2 x STEPS steps without interruption, and
# again STEPS steps saving a checkpoint; OTHER (the same model and global
# batch under another pipeline / data-parallel / ZeRO layout, on OTHER_NP
# ranks) resumes from that checkpoint to step 2 x STEPS. Every resumed
# step's loss must equal the uninterrupted run's within TOLERANCE (relative).
set -eu
if [ $# -ne 8 ]; then
  echo "error: resume-layout-test.sh: expected MPIEXEC PROGRAM NP OTHER" \
       "OTHER_NP TOKENS STEPS TOLERANCE, got $# arguments" >&2
  exit 2
fi
mpiexec=$1 program=$2 np=$3 other=$4 other_np=$5 tokens=$6 steps=$7 tolerance=$8
. "$(dirname "$0")/e2e-common.sh"
run() { # run NAME NP PROGRAM ARGS...
  name=$1 ranks=$2 binary=$3
  shift 3
  timeout 300 "$mpiexec" -np "$ranks" --oversubscribe "$binary" \
    --data "$tokens" --seed 11 "$@" >"$dir/$name.txt" 2>&1 ||
    { cat "$dir/$name.txt"; fail "$name did not run"; }
}
total=$((2 * steps))
run full "$np" "$program" --steps "$total" --log "$dir/full.jsonl"
run first "$np" "$program" --steps "$steps" --ckpt "$dir/ckpt" --log "$dir/first.jsonl"
run resumed "$other_np" "$other" --steps "$total" --ckpt "$dir/ckpt" --resume \
  --log "$dir/resumed.jsonl"
step_losses "$dir/full.jsonl" >"$dir/full.txt"
step_losses "$dir/resumed.jsonl" >"$dir/resumed.txt"
awk -v tol="$tolerance" -v first="$((steps + 1))" -v last="$total" '
  NR == FNR { full[$1] = $2; next }
  { resumed[$1] = $2 }
  END {
    worst = 0; count = 0; at = first
    for (s = first; s <= last; s++) {
      if (!(s in resumed) || !(s in full)) {
        printf "FAIL: step %d is missing\n", s
        exit 1
      }
      d = full[s] - resumed[s]; if (d < 0) d = -d
      r = d / (full[s] < 0 ? -full[s] : full[s])
      if (r > worst) { worst = r; at = s }
      count++
    }
    printf "resumed steps %d..%d: largest relative deviation %.3e (step %d)\n", first, last, worst, at
    exit !(worst <= tol)
  }' "$dir/full.txt" "$dir/resumed.txt" ||
  { paste "$dir/full.txt" "$dir/resumed.txt"; fail "the resumed losses differ"; }
echo "PASS: resumed in another layout within $tolerance"
