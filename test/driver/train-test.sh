#!/bin/sh
# train-test.sh RATRAIN MODEL MACHINE RANKS STEPS WORKDIR [plan flags...]
# `ratrain run` trains MODEL on RANKS ranks for STEPS steps (compiling into a
# cache under WORKDIR) and the loss must fall: every step logs a finite
# loss, and the mean of the last 5 losses is below 0.8 x the first.
set -eu
ratrain=$1 model=$2 machine=$3 ranks=$4 steps=$5 work=$6
shift 6
rm -rf "$work"
mkdir -p "$work"
export XDG_CACHE_HOME="$work/cache" RATRAIN_PROGRESS_LINE=never
status=0
timeout 500 "$ratrain" run "$model" --machine "$machine" --ranks "$ranks" \
  --steps "$steps" --log "$work/steps.jsonl" "$@" >"$work/out.txt" 2>&1 ||
  status=$?
grep -v '^{' "$work/out.txt" || true
if [ "$status" -ne 0 ]; then
  echo "FAIL: ratrain run exited with status $status"
  exit 1
fi
# {"elapsed_s":...,"loss":5.517293,...}: loss is null when not finite.
sed -n 's/.*"loss":\([^,}]*\).*/\1/p' "$work/steps.jsonl" >"$work/losses.txt"
awk -v steps="$steps" '
  /^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$/ { loss[n++] = $1; next }
  { print "FAIL: a non-finite loss: " $0; bad = 1 }
  END {
    if (bad) exit 1
    if (n != steps) { print "FAIL: expected " steps " losses, got " n; exit 1 }
    for (i = n - 5; i < n; ++i) last += loss[i] / 5
    printf "first loss %.4f, mean of the last 5 %.4f (%.2f of the first)\n",
           loss[0], last, last / loss[0]
    if (!(last < 0.8 * loss[0])) { print "FAIL: the loss did not fall"; exit 1 }
    print "PASS"
  }' "$work/losses.txt"
