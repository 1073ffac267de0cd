#!/usr/bin/env bash
# Training benchmark of the tiny LLaMA (docs/benchmarks.md):
#   bench/training/run.sh [BUILD_DIR] [STEPS] [WARMUP] [OUT_DIR]
# Builds the emitted programs (`ninja ratrain-bench-training`; set
# RATRAIN_BENCH_NO_BUILD=1 to skip), trains each for WARMUP + STEPS steps on
# the corpus, simulates the scheduled program of the same plan on the host's
# machine file (ratrain-sim --measured-log, as scripts/main-job.sh does) and
# prints tokens/s, the per-rank step split (kernels / waits / other), the
# simulator's step time and error, and the "outside kernels < 10%" check.
# Runs: 1rank (pp 1 x dp 1: no communication), pp2 (pp 2, progress thread),
# pp2-inline (pp 2, RATRAIN_PROGRESS=inline), dp2 (dp 2, ZeRO-1).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
steps=${2:-30}
warmup=${3:-5}
out=${4:-$build/bench/training/out}
model=$root/examples/models/tiny-llama.json
# The simulator predicts with this host's calibrated machine file (measured
# on first use, cached by CPU: `ratrain machine --host-file`), or
# RATRAIN_BENCH_MACHINE; the programs are the ones CMake built.
if [[ -n "${RATRAIN_BENCH_MACHINE:-}" ]]; then
  machine=$RATRAIN_BENCH_MACHINE
elif [[ -x "$build/bin/ratrain" ]]; then
  machine=$("$build/bin/ratrain" machine --host-file)
else
  machine=$root/examples/machines/host.yaml
fi
echo "machine file: $machine" >&2
corpus=$build/examples/data/corpus.tok
bin=$build/bin

if [[ -z "${RATRAIN_BENCH_NO_BUILD:-}" ]]; then
  ninja -C "$build" ratrain-bench-training >/dev/null
fi
for file in "$bin/ratrain-sim" "$bin/ratrain-opt" "$bin/ratrain-translate" \
    "$corpus"; do
  [[ -e "$file" ]] || { echo "error: $file is missing (ninja -C $build ratrain-bench-training)" >&2; exit 1; }
done
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# The host is shared: the load average says how much the numbers are worth.
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
specs=()
# bench NAME RANKS PROGRAM PLAN PROGRESS
bench() {
  local name=$1 ranks=$2 program=$3 plan=$4 progress=$5
  [[ -x "$program" ]] || { echo "error: $program is missing" >&2; exit 1; }
  local log=$out/$name.steps.jsonl
  rm -f "$log" "$out/$name.measured.jsonl"
  echo "== $name: mpirun -np $ranks -x RATRAIN_PROGRESS=$progress $program --steps $((warmup + steps))" >&2
  mpirun -np "$ranks" --oversubscribe -x RATRAIN_PROGRESS="$progress" \
    "$program" --data "$corpus" --steps $((warmup + steps)) --log "$log" \
    --seed 0 >"$out/$name.stdout" 2>&1 ||
    { cat "$out/$name.stdout" >&2; echo "error: $name failed" >&2; exit 1; }
  # The simulator reads the measured steps only (it drops the first of them
  # too, as a warm-up, and takes the median step_s).
  awk -v w="$warmup" -F'"step":' '{ split($2, a, ","); if (a[1] + 0 > w) print }' \
    "$log" >"$out/$name.measured.jsonl"
  # The scheduled ratrain program of the same plan, for the simulator.
  "$bin/ratrain-translate" --import-hf-config "$model" --machine "$machine" |
    "$bin/ratrain-opt" --ratrain-plan="$plan" --ratrain-schedule-pipeline \
      -o "$out/$name.ratrain.mlir"
  "$bin/ratrain-sim" "$out/$name.ratrain.mlir" --machine "$machine" \
    --measured-log "$out/$name.measured.jsonl" >"$out/$name.sim.txt"
  specs+=("$name:$ranks:$log:$out/$name.sim.txt")
}

bench 1rank 1 "$build/bench/training/ratrain-bench-tiny-1rank" \
  "clusters=1 global-batch=4" thread
bench pp2 2 "$build/test/e2e/ratrain-emit-tiny-pp2" \
  "clusters=2 global-batch=4 pp=2" thread
bench pp2-inline 2 "$build/test/e2e/ratrain-emit-tiny-pp2" \
  "clusters=2 global-batch=4 pp=2" inline
bench dp2 2 "$build/test/e2e/ratrain-emit-tiny" \
  "clusters=2 global-batch=8" thread

echo "tiny LLaMA, $steps steps after $warmup warm-up steps; logs in $out;" \
  "load average after: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
python3 "$here/report.py" "$warmup" "${specs[@]}"
