#!/usr/bin/env bash
# Simulator fidelity on this host (docs/benchmarks.md, "Simulator against
# measured steps"):
#   bench/training/fidelity.sh [BUILD_DIR] [STEPS=20] [OUT_DIR] [ROUNDS=3]
# Calibrates the host (`ratrain machine --calibrate --model`: the tiny
# LLaMA's GEMM calls timed too, gemm_measured), compiles the tiny
# LLaMA for each run with the driver (`ratrain compile --keep-temps`) on that
# calibration, then ROUNDS times: calibrates the host again, trains each run
# STEPS steps (`ratrain run`, the program compiled first) and simulates the
# same scheduled program on this round's calibration (split into virtual
# clusters as the driver splits it) against the measured steps
# (`ratrain-sim --measured-log`: median step_s, the first step dropped).
# The rounds interleave the runs, so a host that drifts over minutes moves
# every run alike, and each prediction uses a calibration measured minutes
# before it. Prints each round's simulated and measured step times, error
# and spread (interquartile range over the median), then per run the median
# over the rounds of the simulated and of the measured step, the error
# between those medians and the range of the rounds' errors; and the load
# average before and after (the error is only meaningful on a quiet host, and
# only beyond the spread).
# A shared host's kernel speed moves by 10-30% within minutes, between the
# calibration and the run and during either. So each row also has "kern"
# (how fast the run's kernels ran against the calibration: simulated over
# measured kernel time; with more ranks than cores, kernel CPU time, since a
# kernel's wall time then holds the other ranks' turns) and "at kern" (the
# error of the step simulated with
# every compute task at the run's measured kernel speed, ratrain-sim's
# error-at-measured-kernel-speed-percent): the error of everything but the
# kernel rates (schedule, overlap, messages, collectives, core sharing). Runs: 1 rank; pp 2; dp 2; pp 2 x dp 2 (4 ranks on
# 2 cores: each core split into 2 virtual clusters); the bf16 tiny LLaMA on
# pp 2.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
steps=${2:-20}
out=${3:-$build/bench/training/fidelity}
rounds=${4:-3}
bin=$build/bin
model=$root/examples/models/tiny-llama.json
for file in "$bin/ratrain" "$bin/ratrain-sim" "$build/examples/data/corpus.tok"; do
  [[ -e "$file" ]] || { echo "error: $file is missing (build the project first)" >&2; exit 1; }
done
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] ||
  { echo "error: ROUNDS must be a positive integer, got '$rounds'" >&2; exit 1; }
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
# calibrate FILE: measures the host now and copies its machine file to FILE.
calibrate() {
  local cached
  cached=$("$bin/ratrain" machine --calibrate --model "$model" 2>/dev/null)
  cp "$cached" "$1"
}
machine=$out/machine.compile.yaml
calibrate "$machine"
echo "calibrated for compiling: $machine"

names=(1rank pp2 dp2 pp2xdp2 bf16-pp2)
declare -A ranks=([1rank]=1 [pp2]=2 [dp2]=2 [pp2xdp2]=4 [bf16-pp2]=2)
declare -A options=([1rank]="--global-batch 4" [pp2]="--pp 2 --global-batch 4"
  [dp2]="--dp 2 --global-batch 8" [pp2xdp2]="--pp 2 --global-batch 8"
  [bf16-pp2]="--pp 2 --global-batch 4 --dtype bf16")
for name in "${names[@]}"; do
  rm -rf "${out:?}/$name"
  # shellcheck disable=SC2086
  "$bin/ratrain" compile "$model" --machine "$machine" --ranks "${ranks[$name]}" \
    ${options[$name]} -o "$out/$name.exe" --keep-temps "$out/$name" >/dev/null 2>&1 ||
    { echo "error: compiling $name failed" >&2; exit 1; }
done

# field FILE KEY: the value of "KEY: value" in ratrain-sim's output.
field() { awk -v k="$2:" '$1 == k {print $2}' "$1"; }
ms() { awk -v s="$1" 'BEGIN {printf "%.1f", s * 1000}'; }

printf '%-5s %-8s %5s %-36s %9s %9s %8s %8s %6s %8s\n' round run ranks options "sim ms" \
  "meas ms" error spread kern "at kern"
declare -A sims meass errs kerrs
for ((r = 1; r <= rounds; ++r)); do
  round_machine=$out/machine.r$r.yaml
  calibrate "$round_machine"
  for name in "${names[@]}"; do
    dir=$out/$name
    log=$dir.r$r.steps.jsonl
    rm -f "$log"
    # shellcheck disable=SC2086
    "$bin/ratrain" run "$model" --machine "$machine" --ranks "${ranks[$name]}" \
      ${options[$name]} --steps "$steps" --seed 0 --log "$log" >"$dir.r$r.stdout" 2>&1 ||
      { cat "$dir.r$r.stdout" >&2; echo "error: $name failed" >&2; exit 1; }
    # More ranks than cores: the driver planned for the split machine file;
    # this round's calibration is split the same way.
    sim_machine=$round_machine
    if [[ -e "$dir/machine.yaml" ]]; then
      k=$(awk '$1 == "virtual_clusters_per_cluster:" {print $2}' "$dir/machine.yaml")
      sim_machine=$dir/machine.r$r.yaml
      "$bin/ratrain" machine "$round_machine" --ranks-per-cluster "$k" -o "$sim_machine"
    fi
    "$bin/ratrain-sim" "$dir/scheduled.mlir" --machine "$sim_machine" \
      --measured-log "$log" >"$dir.r$r.sim.txt"
    sim=$(field "$dir.r$r.sim.txt" step-time-s)
    meas=$(field "$dir.r$r.sim.txt" measured-step-s)
    err=$(field "$dir.r$r.sim.txt" error-percent)
    spread=$(field "$dir.r$r.sim.txt" measured-spread-percent)
    kern=$(field "$dir.r$r.sim.txt" kernel-speed-ratio)
    kerr=$(field "$dir.r$r.sim.txt" error-at-measured-kernel-speed-percent)
    sims[$name]+="$sim "
    meass[$name]+="$meas "
    errs[$name]+="$err "
    kerrs[$name]+="$kerr "
    printf '%-5s %-8s %5s %-36s %9s %9s %7s%% %7s%% %6s %7s%%\n' "$r" "$name" "${ranks[$name]}" \
      "${options[$name]}" "$(ms "$sim")" "$(ms "$meas")" "$err" "$spread" "$kern" "$kerr"
  done
done

# median VALUES...: the median of the numbers given.
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
echo
echo "over $rounds rounds (medians):"
printf '%-8s %5s %9s %9s %8s %18s %8s %18s\n' run ranks "sim ms" "meas ms" error "rounds' errors" \
  "at kern" "rounds' at kern"
for name in "${names[@]}"; do
  # shellcheck disable=SC2086
  sim=$(median ${sims[$name]})
  # shellcheck disable=SC2086
  meas=$(median ${meass[$name]})
  # shellcheck disable=SC2086
  range=$(printf '%s\n' ${errs[$name]} | sort -g | awk 'NR == 1 {lo = $1} {hi = $1} END {printf "%+.1f..%+.1f%%", lo, hi}')
  # shellcheck disable=SC2086
  krange=$(printf '%s\n' ${kerrs[$name]} | sort -g | awk 'NR == 1 {lo = $1} {hi = $1} END {printf "%+.1f..%+.1f%%", lo, hi}')
  # shellcheck disable=SC2086
  kerr=$(median ${kerrs[$name]})
  printf '%-8s %5s %9s %9s %+7.2f%% %18s %+7.2f%% %18s\n' "$name" "${ranks[$name]}" "$(ms "$sim")" \
    "$(ms "$meas")" "$(awk -v s="$sim" -v m="$meas" 'BEGIN {print 100 * (s - m) / m}')" "$range" \
    "$kerr" "$krange"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg); outputs in $out"
