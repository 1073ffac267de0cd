#!/bin/sh
# clip-test.sh MPIEXEC TOKENS STEPS CLIP_PP2 CLIP_ZERO1 CLIP_OFF UNCLIPPED
# Global gradient-norm clipping on 2 ranks (clipping.cmake):
#  - CLIP_PP2 (2 stages) and CLIP_ZERO1 (ZeRO-1 over 2 replicas), both
#    clipped to 0.5, log the same global norm and loss every step (within
#    1e-5 relative: the sums run in another order);
#  - CLIP_OFF (max norm 1e9, never reached) logs the norm and trains bit
#    for bit as UNCLIPPED, the same plan without clipping;
#  - CLIP_PP2 starts from the same weights, so its first norm equals
#    CLIP_OFF's; it is above 0.5, so from step 2 on its losses differ.
set -eu
if [ $# -ne 7 ]; then
  echo "error: clip-test.sh: expected MPIEXEC TOKENS STEPS CLIP_PP2 CLIP_ZERO1 CLIP_OFF UNCLIPPED" >&2
  exit 2
fi
mpiexec=$1 tokens=$2 steps=$3
. "$(dirname "$0")/e2e-common.sh"
run() { # NAME PROGRAM
  timeout 300 "$mpiexec" -np 2 --oversubscribe "$2" --data "$tokens" \
    --steps "$steps" --log "$dir/$1.jsonl" >"$dir/$1.txt" 2>&1 ||
    { cat "$dir/$1.txt"; fail "$1 did not run"; }
}
run pp2 "$4"
run zero1 "$5"
run off "$6"
run unclipped "$7"
# "step loss grad_norm" per line ("-" where no norm is logged).
fields() {
  sed -n 's/.*"step":\([0-9]*\).*/\1/p' "$dir/$1.jsonl" >"$dir/$1.steps"
  sed -n 's/.*"loss":\([^,}]*\).*/\1/p' "$dir/$1.jsonl" >"$dir/$1.loss"
  sed 's/.*"grad_norm":\([^,}]*\).*/\1/; t; s/.*/-/' "$dir/$1.jsonl" >"$dir/$1.norm"
  paste -d' ' "$dir/$1.steps" "$dir/$1.loss" "$dir/$1.norm"
}
for name in pp2 zero1 off unclipped; do
  fields $name >"$dir/$name.fields"
  [ "$(wc -l <"$dir/$name.fields")" -eq "$steps" ] ||
    fail "$name logged $(wc -l <"$dir/$name.fields") steps, expected $steps"
done
grep -q ' -$' "$dir/unclipped.fields" || fail "the unclipped program logs no norm"
grep -q ' -$' "$dir/pp2.fields" "$dir/zero1.fields" "$dir/off.fields" &&
  fail "a clipped program did not log its grad_norm"
paste -d' ' "$dir/pp2.fields" "$dir/zero1.fields" | awk '
  function rel(a, b) { d = a - b; if (d < 0) d = -d; return d / (b < 0 ? -b : b) }
  {
    printf "step %d pp2 loss %s norm %s | zero1 loss %s norm %s\n", $1, $2, $3, $5, $6
    if (rel($2, $5) > 1e-5 || rel($3, $6) > 1e-5) bad = 1
  }
  END { exit bad }' || fail "2 stages and ZeRO-1 over 2 replicas clip differently"
cut -d' ' -f1,2 "$dir/off.fields" >"$dir/off.losses"
cut -d' ' -f1,2 "$dir/unclipped.fields" >"$dir/unclipped.losses"
cmp -s "$dir/off.losses" "$dir/unclipped.losses" ||
  { diff "$dir/off.losses" "$dir/unclipped.losses" | head; fail "an unreached max norm changed the losses"; }
first_pp2=$(sed -n '1s/^[0-9]* [^ ]* //p' "$dir/pp2.fields")
first_off=$(sed -n '1s/^[0-9]* [^ ]* //p' "$dir/off.fields")
[ "$first_pp2" = "$first_off" ] ||
  fail "step 1 starts from the same weights but logs norm $first_pp2 vs $first_off"
awk -v n="$first_pp2" 'BEGIN { exit !(n > 0.5) }' ||
  fail "the first norm $first_pp2 does not exceed 0.5: the test clips nothing"
loss2_pp2=$(sed -n '2s/^[0-9]* \([^ ]*\).*/\1/p' "$dir/pp2.fields")
loss2_off=$(sed -n '2s/^[0-9]* \([^ ]*\).*/\1/p' "$dir/off.fields")
[ "$loss2_pp2" != "$loss2_off" ] || fail "clipping to 0.5 did not change step 2's loss"
echo "PASS: clipped norms and losses agree across layouts; an unreached norm changes nothing; clipping changes the updates"
