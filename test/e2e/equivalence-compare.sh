#!/bin/sh
# equivalence-compare.sh LOG_A LOG_B TOLERANCE MIN_STEPS
# Compares the losses of two step logs (JSON lines with "step" and "loss",
# written by emitted programs through --log): both must log the same steps,
# at least MIN_STEPS of them, every loss finite, and the relative deviation
# |a - b| / |b| at every step must be at most TOLERANCE. Prints the largest
# deviation and the step where it occurs; exits 1 when any check fails.
set -eu
if [ $# -ne 4 ]; then
  echo "error: equivalence-compare.sh: expected LOG_A LOG_B TOLERANCE" \
       "MIN_STEPS, got $# arguments" >&2
  exit 2
fi
a=$1 b=$2 tolerance=$3 minSteps=$4
for log in "$a" "$b"; do
  if [ ! -s "$log" ]; then
    echo "error: $log: no step log (did its e2e.equiv.run test pass?)" >&2
    exit 1
  fi
done
# One "A|B step loss" line per step record (loss is null when not finite);
# notes (records without step and loss) are skipped.
extract() {
  awk -v tag="$2" '
    function field(key,   at, rest) {
      at = index($0, "\"" key "\":")
      if (at == 0) return ""
      rest = substr($0, at + length(key) + 3)
      sub(/[,}].*/, "", rest)
      return rest
    }
    NF { step = field("step"); loss = field("loss")
         if (step == "" && loss == "") next # a note, not a step
         if (step == "" || loss == "") {
           print "error: " FILENAME ":" FNR ": a record without step or loss" \
             > "/dev/stderr"
           exit 1
         }
         print tag, step, loss }' "$1"
}
pairs=$(extract "$a" A && extract "$b" B)
printf '%s\n' "$pairs" | awk -v tol="$tolerance" -v minSteps="$minSteps" \
    -v nameA="$a" -v nameB="$b" '
  function finite(x) { return x ~ /^-?[0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?$/ }
  $1 == "A" { if ($2 in lossA) dupA = $2; lossA[$2] = $3; nA++ }
  $1 == "B" { if ($2 in lossB) dupB = $2; lossB[$2] = $3; nB++ }
  END {
    fail = 0
    if (dupA != "") { print "FAIL: " nameA " logs step " dupA " twice"; fail = 1 }
    if (dupB != "") { print "FAIL: " nameB " logs step " dupB " twice"; fail = 1 }
    if (nA != nB) {
      print "FAIL: " nameA " logs " nA " steps, " nameB " " nB; fail = 1
    }
    if (nA < minSteps) {
      print "FAIL: " nA " steps logged, the comparison needs " minSteps
      fail = 1
    }
    worst = -1; worstStep = -1; compared = 0
    for (step in lossA) {
      if (!(step in lossB)) {
        print "FAIL: step " step " is in " nameA " but not in " nameB
        fail = 1; continue
      }
      la = lossA[step]; lb = lossB[step]
      if (!finite(la) || !finite(lb) || lb + 0 == 0) {
        print "FAIL: step " step ": losses " la " and " lb " are not both " \
              "finite and non-zero"
        fail = 1; continue
      }
      d = la - lb; if (d < 0) d = -d
      ref = lb < 0 ? -lb : lb
      rel = d / ref
      compared++
      if (rel > worst || (rel == worst && step + 0 < worstStep + 0)) {
        worst = rel; worstStep = step; worstA = la; worstB = lb
      }
    }
    if (compared > 0)
      printf "max relative loss deviation %.3e (%.3g%%) at step %d of %d: " \
             "%s vs %s; tolerance %s\n", worst, 100 * worst, worstStep,
             compared, worstA, worstB, tol
    if (compared > 0 && worst > tol + 0) {
      printf "FAIL: deviation %.3e exceeds the tolerance %s\n", worst, tol
      fail = 1
    }
    if (fail) exit 1
    print "PASS: " nameA " ~ " nameB
  }'
