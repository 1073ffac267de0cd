#!/usr/bin/env bash
# Size and build time of emitted programs (issue 11, docs/benchmarks.md):
#   bench/compile/run.sh [BUILD_DIR] [OUT_DIR]
# For LLaMA-2-7B on 64 MT-3000 clusters (the planner's plan) at global batch
# 64, 128 and 256 (the planner picks the micro-batches), runs
# `ratrain compile` with an empty cache and prints, per batch: the plan's
# micro-batches, the lines of mt3k IR and of emitted C++ (outlined layers,
# the default), the same with outline-layers=false (every kernel unrolled at
# each use), and the wall time of `ratrain compile` (import -> ... -> g++).
# Then the growth: how much the C++ grows when the micro-batches double,
# against the 2x of an unrolled program.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
out=${2:-$build/bench/compile/out}
bin=$build/bin
model=$root/examples/models/llama-2-7b.json
machine=$root/examples/machines/mt3000.yaml
for tool in ratrain ratrain-opt ratrain-translate; do
  [[ -x "$bin/$tool" ]] || { echo "error: $bin/$tool is missing (ninja -C $build ratrain)" >&2; exit 1; }
done
mkdir -p "$out"
# An empty program cache: every compile builds the C++.
export XDG_CACHE_HOME=$out/cache
rm -rf "$XDG_CACHE_HOME"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

printf '%-6s %-6s %10s %10s %12s %12s %10s\n' batch m mt3k_lines cpp_lines unrolled_mt3k unrolled_cpp compile_s
declare -A cpp
for gb in 64 128 256; do
  temps=$out/7b-$gb.d
  rm -rf "$temps"
  start=$(date +%s.%N)
  "$bin/ratrain" compile "$model" --machine "$machine" --ranks 64 \
    --global-batch "$gb" -o "$out/7b-$gb" --keep-temps "$temps" >/dev/null 2>"$out/7b-$gb.log"
  end=$(date +%s.%N)
  m=$(grep -o 'micro_batches = [0-9]*' "$temps/planned.mlir" | head -1 | grep -o '[0-9]*$')
  mt3k=$(wc -l <"$temps/mt3k.mlir")
  lines=$(wc -l <"$temps/program.cpp")
  "$bin/ratrain-opt" "$temps/scheduled.mlir" \
    --ratrain-lower-to-mt3k=outline-layers=false -o "$out/7b-$gb.unrolled.mlir"
  "$bin/ratrain-translate" --mt3k-to-cpp "$out/7b-$gb.unrolled.mlir" \
    -o "$out/7b-$gb.unrolled.cpp"
  umt3k=$(wc -l <"$out/7b-$gb.unrolled.mlir")
  ucpp=$(wc -l <"$out/7b-$gb.unrolled.cpp")
  cpp[$gb]=$lines
  printf '%-6s %-6s %10s %10s %12s %12s %10.1f\n' "$gb" "$m" "$mt3k" "$lines" \
    "$umt3k" "$ucpp" "$(awk "BEGIN { print $end - $start }")"
done
echo "C++ growth from global batch 128 to 256 (micro-batches x2):" \
  "$(awk "BEGIN { printf \"%.2f\", ${cpp[256]} / ${cpp[128]} }")x (an unrolled program: about 2x)"
echo "targets (issue 11): LLaMA-2-7B @64, global batch 128: < 10,000 lines of C++, ratrain compile < 60 s"
