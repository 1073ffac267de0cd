#!/bin/sh
# trace-test.sh MPIEXEC NP PROGRAM TOKENS TRANSLATE OPT SIM MODEL MACHINE PLAN
# The per-op trace of an emitted program (--trace): trains 4 steps tracing
# steps 2-3, then checks the trace (trace-check.py: the Chrome trace schema
# Perfetto opens, every kernel call of a step once, every schedule op's span
# named as the simulator names it) and that ratrain-sim compares it with its
# own prediction for the same scheduled program (--measured-trace).
set -eu
mpiexec=$1 np=$2 program=$3 tokens=$4 translate=$5 opt=$6 sim=$7
model=$8 machine=$9 plan=${10}
here=$(cd "$(dirname "$0")" && pwd)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export RATRAIN_PROGRESS_LINE=never
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
status=0
timeout 500 "$mpiexec" -np "$np" --oversubscribe "$program" --data "$tokens" \
  --steps 4 --trace "$dir/trace.json" --trace-steps 2-3 \
  --log "$dir/steps.jsonl" >"$dir/out.txt" 2>&1 || status=$?
cat "$dir/out.txt"
if [ "$status" -ne 0 ]; then
  echo "FAIL: the program exited with status $status"
  exit 1
fi
"$translate" --import-hf-config "$model" --machine "$machine" |
  "$opt" --ratrain-plan="$plan" --ratrain-schedule-pipeline >"$dir/sched.mlir"
"$sim" "$dir/sched.mlir" --machine "$machine" --trace "$dir/sim.json" \
  --measured-trace "$dir/trace.json" >"$dir/sim.txt"
sed -n '/^measured-trace:/,$p' "$dir/sim.txt"
for row in forward backward step trace-error-percent; do
  grep -q "$row" "$dir/sim.txt" || {
    echo "FAIL: ratrain-sim --measured-trace printed no '$row' row"
    exit 1
  }
done
python3 "$here/trace-check.py" "$dir/trace.json" "$dir/steps.jsonl" "$dir/sim.json"
