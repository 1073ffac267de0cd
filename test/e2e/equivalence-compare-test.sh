#!/bin/sh
# equivalence-compare-test.sh: equivalence-compare.sh on made-up step logs
# passes what it must and fails what it must (deviation over the tolerance,
# missing or extra steps, a null loss, too few steps, a missing log).
set -eu
compare="$(dirname "$0")/equivalence-compare.sh"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# log FILE STEPS [STEP LOSS]: losses 5 - step/100, one step overridden.
log() {
  awk -v n="$2" -v s="${3-0}" -v l="${4-}" 'BEGIN {
    for (i = 1; i <= n; i++) {
      loss = (i == s) ? l : sprintf("%.17g", 5 - i / 100)
      printf "{\"elapsed_s\":0.5,\"loss\":%s,\"step\":%d,\"step_s\":0.1}\n", loss, i
    }
    print "{\"note\":\"saved checkpoint\"}"
  }' >"$dir/$1"
}
failures=0
expect() { # expect pass|fail WHAT MESSAGE ARGS...: MESSAGE is in the output
  want=$1 what=$2 message=$3
  shift 3
  status=0
  "$compare" "$@" >"$dir/out.txt" 2>&1 || status=$?
  if { [ "$want" = pass ] && [ "$status" -eq 0 ]; } ||
     { [ "$want" = fail ] && [ "$status" -eq 1 ]; } &&
     grep -q -e "$message" "$dir/out.txt"; then
    echo "ok: $what ($want): $(grep -e "$message" "$dir/out.txt" | head -n 1)"
  else
    echo "WRONG: $what: expected $want, exit status $status:"
    cat "$dir/out.txt"
    failures=$((failures + 1))
  fi
}
log a.jsonl 10
log same.jsonl 10
log close.jsonl 10 7 4.9345 # step 7 is 4.93: 9.1e-4 relative
log far.jsonl 10 7 4.9356   # 1.14e-3 relative
log short.jsonl 9
log null.jsonl 10 4 null
expect pass "identical logs" "deviation 0.000e+00" \
  "$dir/a.jsonl" "$dir/same.jsonl" 1e-3 10
expect pass "identical logs, tolerance 0" "^PASS" \
  "$dir/a.jsonl" "$dir/same.jsonl" 0 10
expect pass "9.1e-4 under 1e-3" "deviation 9.1[0-9]*e-04 .* at step 7 of 10" \
  "$dir/close.jsonl" "$dir/a.jsonl" 1e-3 10
expect fail "1.14e-3 over 1e-3" "FAIL: deviation 1.136e-03 exceeds" \
  "$dir/far.jsonl" "$dir/a.jsonl" 1e-3 10
expect fail "a step missing" "FAIL: step 10 is in .* but not in" \
  "$dir/a.jsonl" "$dir/short.jsonl" 1e-3 9
expect fail "fewer steps than asked" "FAIL: 10 steps logged, the comparison needs 11" \
  "$dir/a.jsonl" "$dir/same.jsonl" 1e-3 11
expect fail "a null loss" "FAIL: step 4: losses null and" \
  "$dir/null.jsonl" "$dir/a.jsonl" 1e-3 10
expect fail "no log" "error: .*none.jsonl: no step log" \
  "$dir/none.jsonl" "$dir/a.jsonl" 1e-3 10
if [ "$failures" -ne 0 ]; then
  echo "FAIL: $failures cases"
  exit 1
fi
echo "PASS"
