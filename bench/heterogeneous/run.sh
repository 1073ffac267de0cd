#!/usr/bin/env bash
# Heterogeneous clusters emulated on this host (docs/benchmarks.md,
# "Heterogeneous clusters on this host"):
#   bench/heterogeneous/run.sh [BUILD_DIR] [STEPS=20] [OUT_DIR]
# Calibrates the host (`ratrain machine --calibrate`), gives its clusters two
# classes (`fast`, and `slow` at half the compute), and trains the tiny LLaMA
# on 4 ranks (each cluster split in two: two fast, two slow ranks), pp 2,
# global batch 8 in micro-batches of 2, under each class layout (even,
# replicas, stages) with `ratrain run`, which passes --emulate-classes: the
# slow ranks sleep as long again as each compute. Prints, per layout, the
# simulated step (ratrain-sim on the same split machine file and plan) and the
# measured median step (the first 2 steps dropped), and each layout's speedup
# over the even one, simulated and measured. Ratios of the same run only; the
# load average before and after says how quiet the host was.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
steps=${2:-20}
out=${3:-$build/bench/heterogeneous}
bin=$build/bin
model=$root/examples/models/tiny-llama.json
for file in "$bin/ratrain" "$bin/ratrain-sim" "$build/examples/data/corpus.tok"; do
  [[ -e "$file" ]] || { echo "error: $file is missing (build the project first)" >&2; exit 1; }
done
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 RATRAIN_PROGRESS_LINE=never

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
host=$("$bin/ratrain" machine --calibrate 2>/dev/null)
clusters=$(awk '/^nodes:/ {n = $2} /^clusters_per_node:/ {c = $2} END {print n * c}' "$host")
if (( clusters < 2 || clusters % 2 )); then
  echo "error: $host has $clusters clusters; the benchmark needs an even number" >&2
  exit 1
fi
mixed=$out/host-mixed.yaml
{ grep -v '^name:' "$host"; echo "name: host-mixed"
  printf 'classes:\n  - name: fast\n    count: %d\n  - name: slow\n    count: %d\n    compute_scale: 0.5\n' \
    $((clusters / 2)) $((clusters / 2)); } >"$mixed"
ranks=$((2 * clusters))
split=$out/host-mixed-split.yaml
"$bin/ratrain" machine "$mixed" --ranks-per-cluster 2 -o "$split"
echo "calibrated now: $host; classes in $mixed; $ranks ranks"

median() { # the median step_s of a step log, the first 2 steps dropped
  sed -n 's/.*"step":\([0-9]*\).*"step_s":\([0-9.e+-]*\).*/\1 \2/p' "$1" |
    awk '$1 > 2 {print $2}' | sort -g |
    awk '{v[NR] = $1} END {print NR ? (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) : 0}'
}

declare -A sim meas
printf '%-9s %-60s %10s %10s\n' layout plan "sim ms" "meas ms"
for layout in even replicas stages; do
  log=$out/$layout.steps.jsonl
  rm -f "$log"
  "$bin/ratrain" run "$model" --machine "$mixed" --ranks "$ranks" --pp 2 \
    --global-batch 8 --micro-batch-size 2 --class-layout "$layout" \
    --steps "$steps" --seed 0 --log "$log" >"$out/$layout.stdout" 2>&1 ||
    { cat "$out/$layout.stdout" >&2; echo "error: the $layout run failed" >&2; exit 1; }
  "$bin/ratrain-sim" --model "$model" --machine "$split" --clusters "$ranks" \
    --global-batch 8 --pp 2 --micro-batch 2 --class-layout "$layout" \
    --act-offload none >"$out/$layout.sim.txt"
  sim[$layout]=$(awk '/^step-time-s:/ {print $2}' "$out/$layout.sim.txt")
  meas[$layout]=$(median "$log")
  plan=$(awk -F': ' '/^plan:/ {print $2}' "$out/$layout.sim.txt")
  printf '%-9s %-60s %10.1f %10.1f\n' "$layout" "${plan:0:60}" \
    "$(awk -v s="${sim[$layout]}" 'BEGIN {print s * 1000}')" \
    "$(awk -v s="${meas[$layout]}" 'BEGIN {print s * 1000}')"
done
for layout in replicas stages; do
  awk -v l="$layout" -v se="${sim[even]}" -v s="${sim[$layout]}" -v me="${meas[even]}" \
    -v m="${meas[$layout]}" 'BEGIN {
      printf "%s over even: simulated %.2fx, measured %.2fx\n", l, se / s, me / m }'
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg); outputs in $out"
