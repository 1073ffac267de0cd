#!/bin/sh
# model-train-test.sh MPIEXEC NP PROGRAM TOKENS STEPS CKPT_TOOL [NAME...]
# Trains an emitted program for STEPS steps on NP ranks, saving a checkpoint
# at the end, and checks that
#  - it exits 0 and every step logged a finite loss;
#  - the loss fell: the mean of the last 5 steps is below the first step's;
#  - the checkpoint verifies and holds every tensor NAME (an extended
#    regular expression matched against `ratrain-ckpt list`; a NAME that
#    starts with '!' must match no tensor).
set -eu
if [ $# -lt 6 ]; then
  echo "error: model-train-test.sh: expected MPIEXEC NP PROGRAM TOKENS" \
       "STEPS CKPT_TOOL [NAME...], got $# arguments" >&2
  exit 2
fi
mpiexec=$1 np=$2 program=$3 tokens=$4 steps=$5 ckpt_tool=$6
shift 6
. "$(dirname "$0")/e2e-common.sh"
status=0
timeout 500 "$mpiexec" -np "$np" --oversubscribe "$program" --data "$tokens" \
  --steps "$steps" --log "$dir/steps.jsonl" --ckpt "$dir/ckpt" \
  --save-every "$steps" >"$dir/out.txt" 2>&1 || status=$?
cat "$dir/out.txt"
[ "$status" -eq 0 ] || fail "the program exited with status $status"
# {"elapsed_s":...,"loss":5.517293,...}: loss is null when not finite.
losses=$(sed -n 's/.*"loss":\([^,}]*\).*/\1/p' "$dir/steps.jsonl")
count=$(printf '%s\n' "$losses" | grep -c -E '^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$' || true)
[ "$count" -eq "$steps" ] || fail "expected $steps finite losses, got: $losses"
echo "losses: $(echo $losses)"
printf '%s\n' "$losses" | awk -v steps="$steps" '
  NR == 1 { first = $1 }
  NR > steps - 5 { tail += $1; n++ }
  END {
    last = tail / n
    printf "loss: first %.4f, mean of the last %d %.4f\n", first, n, last
    exit !(last < first)
  }' || fail "the loss did not fall"

"$ckpt_tool" verify "$dir/ckpt" || fail "ratrain-ckpt verify rejects the checkpoint"
: >"$dir/names.txt"
for f in $(find "$dir/ckpt" -name '*.safetensors' | sort); do
  "$ckpt_tool" list "$f" >>"$dir/names.txt" || fail "ratrain-ckpt list $f"
done
for name in "$@"; do
  case $name in
  !*)
    if grep -E "${name#!}" "$dir/names.txt"; then
      fail "the checkpoint has a tensor matching '${name#!}'"
    fi
    ;;
  *)
    grep -q -E "$name" "$dir/names.txt" ||
      fail "the checkpoint has no tensor matching '$name'"
    ;;
  esac
done
echo "PASS: $steps steps, loss fell, checkpoint names as expected"
