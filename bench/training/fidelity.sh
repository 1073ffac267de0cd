#!/usr/bin/env bash
# Simulator fidelity on this host (docs/benchmarks.md, "Simulator against
# measured steps"):
#   bench/training/fidelity.sh [BUILD_DIR] [STEPS=20] [OUT_DIR]
# Calibrates the host now (`ratrain machine --calibrate`: the machine file the
# simulator predicts with is measured in the same run), then for each run
# compiles the tiny LLaMA with the driver (`ratrain compile --keep-temps`),
# trains it STEPS steps under mpirun (`ratrain run`) and simulates the same
# scheduled program on the same (split) machine file against the measured
# steps (`ratrain-sim --measured-log`: median step_s, the first step dropped).
# Prints simulated and measured step times, the error and the measured
# steps' spread (interquartile range over the median) per run, and the load
# average before and after (the error is only meaningful on a quiet host, and
# only beyond the spread). Runs: 1 rank; pp 2; dp 2; pp 2 x dp 2 (4 ranks on 2 cores: each
# core split into 2 virtual clusters); the bf16 tiny LLaMA on pp 2.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
steps=${2:-20}
out=${3:-$build/bench/training/fidelity}
bin=$build/bin
model=$root/examples/models/tiny-llama.json
for file in "$bin/ratrain" "$bin/ratrain-sim" "$build/examples/data/corpus.tok"; do
  [[ -e "$file" ]] || { echo "error: $file is missing (build the project first)" >&2; exit 1; }
done
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
machine=$("$bin/ratrain" machine --calibrate 2>/dev/null)
echo "calibrated now: $machine"

rows=()
# measure NAME RANKS [plan and run options...]
measure() {
  local name=$1 ranks=$2
  shift 2
  local dir=$out/$name
  rm -rf "$dir" "$dir.steps.jsonl"
  "$bin/ratrain" compile "$model" --machine "$machine" --ranks "$ranks" "$@" \
    -o "$dir.exe" --keep-temps "$dir" >/dev/null 2>&1
  "$bin/ratrain" run "$model" --machine "$machine" --ranks "$ranks" "$@" \
    --steps "$steps" --seed 0 --log "$dir.steps.jsonl" >"$dir.stdout" 2>&1 ||
    { cat "$dir.stdout" >&2; echo "error: $name failed" >&2; exit 1; }
  # More ranks than cores: the driver planned for the split machine file.
  local split=$machine
  [[ -e "$dir/machine.yaml" ]] && split=$dir/machine.yaml
  "$bin/ratrain-sim" "$dir/scheduled.mlir" --machine "$split" \
    --measured-log "$dir.steps.jsonl" >"$dir.sim.txt"
  local sim meas err spread
  sim=$(awk '/^step-time-s:/ {print $2}' "$dir.sim.txt")
  meas=$(awk '/^measured-step-s:/ {print $2}' "$dir.sim.txt")
  err=$(awk '/^error-percent:/ {print $2}' "$dir.sim.txt")
  spread=$(awk '/^measured-spread-percent:/ {print $2}' "$dir.sim.txt")
  rows+=("$(printf '%-8s %5s %-28s %10.1f %10.1f %8s%% %8s%%' "$name" "$ranks" "$*" \
    "$(awk -v s="$sim" 'BEGIN {print s * 1000}')" \
    "$(awk -v s="$meas" 'BEGIN {print s * 1000}')" "$err" "$spread")")
  echo "${rows[-1]}"
}

printf '%-8s %5s %-28s %10s %10s %9s %9s\n' run ranks options "sim ms" "meas ms" error spread
measure 1rank 1 --global-batch 4
measure pp2 2 --pp 2 --global-batch 4
measure dp2 2 --dp 2 --global-batch 8
measure pp2xdp2 4 --pp 2 --global-batch 8
measure bf16-pp2 2 --pp 2 --global-batch 4 --dtype bf16
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg); outputs in $out"
