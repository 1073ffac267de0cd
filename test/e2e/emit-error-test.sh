#!/bin/bash
# emit-error-test.sh MPIEXEC NP PROGRAM TOKENS CASE REGEX [OTHER_PROGRAM]
# Bad input through an emitted training program: prepares CASE, runs the
# program, and requires a non-zero exit and output matching REGEX (extended
# grep). Cases:
#   checksum      --resume from a checkpoint with one flipped data byte in
#                 data rank 1's optimizer shard file
#   truncated     --resume from a checkpoint whose model file lost its tail
#   wrong-shape   --resume from a checkpoint whose trainer_state.json says
#                 hidden_size 128 (this model has 256)
#   other-model   OTHER_PROGRAM (another model, same plan) --resume-s from
#                 PROGRAM's checkpoint
#   missing-data  --data names no file
#   corrupt-data  --data is a token file cut short
#   arena         RATRAIN_DDR_LIMIT_BYTES=1048576: the program's DDR arena is
#                 larger than the rank's DDR
#   bf16-products RATRAIN_BF16_PRODUCTS=fast (neither dot nor widen)
#   killed-rank   one rank is SIGKILLed after step 1 was logged, mid-run;
#                 the job must end within the watchdog (RATRAIN_COMM_TIMEOUT_S)
set -uo pipefail
mpiexec=$1 np=$2 program=$3 tokens=$4 case=$5 regex=$6 other=${7-}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export RATRAIN_PROGRESS_LINE=never
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL ($case): $*"; exit 1; }
mpi() { timeout -k 10 240 "$mpiexec" -np "$np" --oversubscribe "$@"; }

# A checkpoint of step 2 under $dir/ckpt, its step directory in $step.
save() {
  mpi "$program" --data "$tokens" --steps 2 --ckpt "$dir/ckpt" \
    --save-every 2 --log "$dir/save.jsonl" >"$dir/save.txt" 2>&1 ||
    { cat "$dir/save.txt"; fail "saving the checkpoint failed"; }
  step="$dir/ckpt/step-00000002"
  [ -d "$step" ] || fail "no checkpoint of step 2"
}
# Replaces byte OFFSET of FILE by itself xor 0x40.
flip() {
  local byte
  byte=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
  printf "\\$(printf %o $((byte ^ 64)))" |
    dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}
resume=(--data "$tokens" --steps 4 --ckpt "$dir/ckpt" --resume --log -)
env=()
case $case in
  checksum)
    save
    shard=$(ls "$step"/optimizer-*-zero-00002-of-*.safetensors | head -n1)
    [ -f "$shard" ] || fail "no zero shard file of data rank 1"
    flip "$shard" $(($(stat -c %s "$shard") - 7))
    args=("${resume[@]}") ;;
  truncated)
    save
    truncate -s -100 "$step/model-00001-of-00001.safetensors"
    args=("${resume[@]}") ;;
  wrong-shape)
    save
    sed -i 's/"hidden_size": 256/"hidden_size": 128/' "$step/trainer_state.json"
    grep -q '"hidden_size": 128' "$step/trainer_state.json" ||
      fail "could not edit trainer_state.json"
    args=("${resume[@]}") ;;
  other-model)
    [ -x "$other" ] || fail "OTHER_PROGRAM '$other' is not an executable"
    save
    program=$other
    args=("${resume[@]}") ;;
  missing-data)
    args=(--data "$dir/no-such-file.tok" --steps 2 --log -) ;;
  corrupt-data)
    head -c 4096 "$tokens" >"$dir/cut.tok"
    args=(--data "$dir/cut.tok" --steps 2 --log -) ;;
  arena)
    env=(-x RATRAIN_DDR_LIMIT_BYTES=1048576)
    args=(--data "$tokens" --steps 2 --log -) ;;
  bf16-products)
    env=(-x RATRAIN_BF16_PRODUCTS=fast)
    args=(--data "$tokens" --steps 2 --log -) ;;
  killed-rank) ;;
  *) fail "unknown case" ;;
esac

start=$SECONDS
if [ "$case" = killed-rank ]; then
  # mpirun (under timeout) starts the ranks as its children: after the first
  # step line, SIGKILL the last of them by its process id.
  export RATRAIN_COMM_TIMEOUT_S=20
  output=$(
    {
      timeout -k 10 240 "$mpiexec" -np "$np" --oversubscribe \
        -x RATRAIN_COMM_TIMEOUT_S "$program" --data "$tokens" \
        --steps 100000 --log - 2>&1 &
      echo "timeout $!" >"$dir/pid"
      wait $!
      echo "mpirun exit status $?"
    } | {
      killed=""
      while IFS= read -r line; do
        printf '%s\n' "$line"
        if [ -z "$killed" ] && [[ $line == *'"step":1,'* ]]; then
          wrapper=$(sed -n 's/^timeout //p' "$dir/pid")
          mpirun=$(ps -o pid= --ppid "$wrapper" | head -n1 | tr -d ' ')
          victim=$(ps -o pid= --ppid "$mpirun" | tail -n1 | tr -d ' ')
          [ -n "$victim" ] || { echo "no rank process under mpirun $mpirun"; break; }
          echo "killing rank process $victim (SIGKILL) after step 1"
          kill -KILL "$victim"
          killed=yes
        fi
      done
    }
  )
  printf '%s\n' "$output"
  rc=$(sed -n 's/^mpirun exit status //p' <<<"$output")
  [ -n "$rc" ] || fail "mpirun's exit status is missing"
  grep -q "^killing rank process" <<<"$output" || fail "no rank was killed"
else
  output=$(mpi "${env[@]}" "$program" "${args[@]}" 2>&1)
  rc=$?
  printf '%s\n' "$output"
fi
echo "exit status $rc after $((SECONDS - start)) s"
# 124, or 137 at the limit: timeout had to stop the job.
[ "$rc" -ne 124 ] && [ $((SECONDS - start)) -lt 240 ] ||
  fail "the job did not end within 240 s (timeout)"
[ "$rc" -ne 0 ] || fail "expected a non-zero exit status"
grep -Eq -- "$regex" <<<"$output" || fail "output does not match /$regex/"
echo "PASS ($case): exit status $rc, message matches /$regex/"
