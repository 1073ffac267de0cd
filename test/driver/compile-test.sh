#!/bin/sh
# compile-test.sh RATRAIN MODEL MACHINE TOKENS WORKDIR
# `ratrain compile` writes an executable (keeping every stage's output) that
# loads no LLVM, MLIR or Halide library, and the executable trains 2 steps
# under mpirun with finite losses.
set -eu
ratrain=$1 model=$2 machine=$3 tokens=$4 work=$5
rm -rf "$work"
mkdir -p "$work"
"$ratrain" compile "$model" --machine "$machine" --ranks 2 --global-batch 4 \
  -o "$work/program" --keep-temps "$work/temps"
if [ ! -x "$work/program" ]; then
  echo "FAIL: no executable $work/program"
  exit 1
fi
for file in model.mlir planned.mlir scheduled.mlir mt3k.mlir program.cpp \
    plan.txt; do
  if [ ! -s "$work/temps/$file" ]; then
    echo "FAIL: --keep-temps kept no $file"
    exit 1
  fi
done
"$(dirname "$0")/ldd-test.sh" "$work/program"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export RATRAIN_PROGRESS_LINE=never
timeout 300 mpirun -np 2 --oversubscribe "$work/program" --data "$tokens" \
  --steps 2 --log "$work/steps.jsonl" >"$work/out.txt" 2>&1 || {
  cat "$work/out.txt"
  echo "FAIL: the compiled program failed"
  exit 1
}
count=$(sed -n 's/.*"loss":\([0-9][^,}]*\).*/\1/p' "$work/steps.jsonl" | wc -l)
if [ "$count" -ne 2 ]; then
  cat "$work/steps.jsonl"
  echo "FAIL: expected 2 finite losses, got $count"
  exit 1
fi
echo "PASS: compiled, trained 2 steps"
