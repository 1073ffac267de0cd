#!/bin/sh
# emit-kill-save-test.sh MPIEXEC NP PROGRAM TOKENS CKPT_TOOL
# A job killed while it writes a checkpoint leaves the previous one intact:
#  1. 6 steps uninterrupted (the reference losses);
#  2. 6 steps saving every 2, with the test hook RATRAIN_TEST_KILL_IN_SAVE=4:
#     rank 0 SIGKILLs itself after every rank wrote its step-4 shards into
#     the staging directory (no index, nothing committed). The job must exit
#     non-zero; `latest` must still name step 2, which `ratrain-ckpt verify`
#     accepts, and the half-written staging directory must not be a
#     checkpoint;
#  3. --resume from the root: steps 3-6 must log exactly the losses of the
#     uninterrupted run (save at k = 2, kill, resume).
set -eu
mpiexec=$1 np=$2 program=$3 tokens=$4 ckpt_tool=$5
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export RATRAIN_PROGRESS_LINE=never
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
run() {
  timeout 500 "$mpiexec" -np "$np" --oversubscribe "$program" --data "$tokens" \
    "$@" >"$dir/out.txt" 2>&1 || { cat "$dir/out.txt"; fail "$*"; }
}
losses() { # step and loss of every line
  sed -n 's/.*"loss":\([^,}]*\).*"step":\([0-9]*\).*/\2 \1/p' "$1"
}

run --steps 6 --log "$dir/full.jsonl"

status=0
RATRAIN_TEST_KILL_IN_SAVE=4 timeout 500 "$mpiexec" -np "$np" --oversubscribe \
  -x RATRAIN_TEST_KILL_IN_SAVE "$program" --data "$tokens" --steps 6 \
  --ckpt "$dir/ckpt" --save-every 2 --log "$dir/killed.jsonl" \
  >"$dir/out.txt" 2>&1 || status=$?
cat "$dir/out.txt"
[ "$status" -ne 0 ] || fail "the job killed while saving step 4 exited 0"
[ "$status" -ne 124 ] || fail "the killed job did not end (timeout)"
grep -q "RATRAIN_TEST_KILL_IN_SAVE: rank 0 kills itself while saving step 4" \
  "$dir/out.txt" || fail "the kill hook did not run"
echo "killed while saving step 4: exit status $status"
echo "checkpoint root: $(ls -A "$dir/ckpt" | tr '\n' ' ')"
[ "$(cat "$dir/ckpt/latest")" = "step-00000002" ] ||
  fail "latest names '$(cat "$dir/ckpt/latest")', not step-00000002"
[ -d "$dir/ckpt/.step-00000004.partial" ] ||
  fail "no half-written staging directory of step 4 (did the hook run?)"
[ ! -e "$dir/ckpt/step-00000004" ] || fail "step 4 was committed"
[ ! -e "$dir/ckpt/.step-00000004.partial/trainer_state.json" ] ||
  fail "the staging directory is complete: the hook ran too late"
echo "staging directory: $(ls "$dir/ckpt/.step-00000004.partial" | tr '\n' ' ')"
"$ckpt_tool" verify "$dir/ckpt" || fail "ratrain-ckpt verify rejects latest"
"$ckpt_tool" verify "$dir/ckpt" | grep -q "ok: step 2," ||
  fail "ratrain-ckpt verify does not report step 2"

run --steps 6 --ckpt "$dir/ckpt" --resume --log "$dir/resumed.jsonl"
expected=$(losses "$dir/full.jsonl" | sed -n '3,6p')
actual=$(losses "$dir/resumed.jsonl")
echo "uninterrupted steps 3-6: $(echo $expected)"
echo "resumed steps 3-6:       $(echo $actual)"
if [ -z "$expected" ] || [ "$expected" != "$actual" ]; then
  fail "the resumed run differs"
fi
# The resumed run's own saves replace the stale staging directory.
[ "$(cat "$dir/ckpt/latest")" = "step-00000006" ] ||
  fail "the resumed run did not save step 6"
"$ckpt_tool" verify "$dir/ckpt" >/dev/null || fail "step 6 does not verify"
echo "PASS"
