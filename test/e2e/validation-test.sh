#!/bin/sh
# validation-test.sh MPIEXEC NP PROGRAM TOKENS CKPT_TOOL CONFIG
# Validation (docs/runtime.md, "Validation") on a tiny model:
#  - with --eval-data and --eval-every 4 over 12 steps, the log has an
#    "eval_loss" after steps 4, 8 and 12, and the training losses are those
#    of a run without validation, bit for bit (a validation step learns
#    nothing and leaves the data order alone);
#  - the validation loss after step 4 is the loss of the held-out data's
#    first batch under the weights of step 4: a run that starts from the
#    step-4 checkpoint (exported to a HuggingFace directory, --init-from)
#    with --data EVAL logs it as its step 1's loss, bit for bit;
#  - --eval-split holds out the training file's last windows: the run
#    trains and validates, and its first step's loss differs from the
#    unsplit run (another data order).
set -eu
if [ $# -ne 6 ]; then
  echo "error: validation-test.sh: expected MPIEXEC NP PROGRAM TOKENS CKPT_TOOL CONFIG" >&2
  exit 2
fi
mpiexec=$1 np=$2 program=$3 tokens=$4 ckpt=$5 config=$6
. "$(dirname "$0")/e2e-common.sh"
run() { # NAME ARGS...
  name=$1
  shift
  timeout 300 "$mpiexec" -np "$np" --oversubscribe "$program" \
    --log "$dir/$name.jsonl" "$@" >"$dir/$name.txt" 2>&1 ||
    { cat "$dir/$name.txt"; fail "$name did not run"; }
}
# Held-out data: a copy of the corpus read with another seed is not held
# out; the corpus's own split is what --eval-split tests. Here any token
# file works: the corpus itself, under a different seed for the order.
cp "$tokens" "$dir/eval.tok"
run plain --data "$tokens" --steps 12
run validated --data "$tokens" --steps 12 --eval-data "$dir/eval.tok" \
  --eval-every 4 --ckpt "$dir/ckpt" --save-every 4
step_losses "$dir/plain.jsonl" >"$dir/plain.losses"
step_losses "$dir/validated.jsonl" >"$dir/validated.losses"
cmp -s "$dir/plain.losses" "$dir/validated.losses" ||
  { diff "$dir/plain.losses" "$dir/validated.losses" | head; fail "validation changed the training losses"; }
sed -n 's/.*"eval_loss":\([^,}]*\).*"step":\([0-9]*\).*/\2 \1/p' "$dir/validated.jsonl" >"$dir/eval.txt"
[ "$(cut -d' ' -f1 "$dir/eval.txt" | tr '\n' ' ')" = "4 8 12 " ] ||
  { cat "$dir/eval.txt"; fail "expected validation after steps 4, 8 and 12"; }
grep -q null "$dir/eval.txt" && fail "a validation loss is not finite"
# The weights of step 4 on the held-out data's first batch.
"$ckpt" export "$dir/ckpt/step-00000004" --config "$config" -o "$dir/hf4" >/dev/null ||
  fail "ratrain-ckpt export of step 4 failed"
run reference --data "$dir/eval.tok" --steps 1 --init-from "$dir/hf4"
want=$(sed -n 's/^4 //p' "$dir/eval.txt")
got=$(step_losses "$dir/reference.jsonl" | sed -n 's/^1 //p')
[ "$want" = "$got" ] ||
  fail "validation loss after step 4 is $want, the step-4 weights' loss on the held-out batch is $got"
echo "validation after step 4: $want = step-4 weights on the held-out batch: $got"
run split --data "$tokens" --steps 4 --eval-split 0.05 --eval-every 2
sed -n 's/.*"eval_loss":\([^,}]*\).*"step":\([0-9]*\).*/\2 \1/p' "$dir/split.jsonl" >"$dir/split-eval.txt"
[ "$(cut -d' ' -f1 "$dir/split-eval.txt" | tr '\n' ' ')" = "2 4 " ] ||
  { cat "$dir/split-eval.txt"; fail "expected validation after steps 2 and 4 with --eval-split"; }
echo "PASS: validation losses logged, training unchanged, the loss is the held-out batch's under the step's weights"
