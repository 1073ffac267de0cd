#!/bin/sh
# offload-storage-ckpt-test.sh MPIEXEC NP PROGRAM TOKENS
# A program that keeps optimizer states in the storage tier (files) cannot
# checkpoint them: --ckpt must fail with an error naming the offloaded key,
# and write no checkpoint.
set -u
mpiexec=$1 np=$2 program=$3 tokens=$4
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export RATRAIN_PROGRESS_LINE=never
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
if timeout 240 "$mpiexec" -np "$np" --oversubscribe "$program" \
    --data "$tokens" --steps 2 --ckpt "$dir/ckpt" >"$dir/out.txt" 2>&1; then
  cat "$dir/out.txt"
  echo "FAIL: --ckpt with states in the storage tier succeeded"
  exit 1
fi
if ! grep -E "error: .*--ckpt: '[^']+\.adam' is offloaded to storage; checkpoints of states kept in the storage tier are not supported" "$dir/out.txt"; then
  cat "$dir/out.txt"
  echo "FAIL: no error naming the offloaded state"
  exit 1
fi
if [ -e "$dir/ckpt/latest" ]; then
  echo "FAIL: a checkpoint was written"
  exit 1
fi
echo "PASS"
