#!/bin/sh
# emit-resume-test.sh MPIEXEC NP PROGRAM TOKENS
# Checkpoints of an emitted program: 4 steps uninterrupted; 2 steps saving a
# checkpoint, then --resume to step 4. Steps 3 and 4 of the resumed run must
# log exactly the losses of the uninterrupted run.
set -eu
mpiexec=$1 np=$2 program=$3 tokens=$4
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export RATRAIN_PROGRESS_LINE=never
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
run() {
  timeout 500 "$mpiexec" -np "$np" --oversubscribe "$program" --data "$tokens" \
    "$@" >"$dir/out.txt" 2>&1 || { cat "$dir/out.txt"; echo "FAIL: $*"; exit 1; }
}
losses() { # step and loss of every line
  sed -n 's/.*"loss":\([^,}]*\).*"step":\([0-9]*\).*/\2 \1/p' "$1"
}
run --steps 4 --log "$dir/full.jsonl"
run --steps 2 --ckpt "$dir/ckpt" --save-every 2 --log "$dir/first.jsonl"
[ -f "$dir/ckpt/latest" ] || { echo "FAIL: no checkpoint written"; exit 1; }
run --steps 4 --ckpt "$dir/ckpt" --resume --log "$dir/resumed.jsonl"
expected=$(losses "$dir/full.jsonl" | sed -n '3,4p')
actual=$(losses "$dir/resumed.jsonl")
echo "uninterrupted steps 3-4: $(echo $expected)"
echo "resumed steps 3-4:       $(echo $actual)"
if [ -z "$expected" ] || [ "$expected" != "$actual" ]; then
  echo "FAIL: the resumed run differs"
  exit 1
fi
echo "PASS"
