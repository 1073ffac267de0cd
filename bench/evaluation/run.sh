#!/usr/bin/env bash
# Regenerates docs/evaluation.md and docs/evaluation/*.svg: builds ratrain-sim
# (only it and the libraries it needs) if it is missing, then runs
# bench/evaluation/run.py, bench/evaluation/seed002.py (the seed-002
# section) and bench/evaluation/heterogeneous.py (the heterogeneous-clusters
# section). BUILD_DIR defaults to build/.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
if [ ! -x "$BUILD_DIR/bin/ratrain-sim" ]; then
  if [ ! -f "$BUILD_DIR/build.ninja" ]; then
    cmake -G Ninja -S "$ROOT" -B "$BUILD_DIR" \
      -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
      -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit ${RATRAIN_CMAKE_ARGS:-}
  fi
  ninja -C "$BUILD_DIR" -j"${JOBS:-2}" ratrain-sim
fi
# The compiler path (scheduled modules) when this build has the compiler.
if ninja -C "$BUILD_DIR" -t targets all 2>/dev/null | grep -q '^ratrain-opt:'; then
  ninja -C "$BUILD_DIR" -j"${JOBS:-2}" ratrain-sim ratrain-opt ratrain-translate
fi
python3 "$ROOT/bench/evaluation/run.py" --build "$BUILD_DIR" "$@"
# The seed-002 section (Frontier) and the heterogeneous-clusters section,
# spliced into the file run.py wrote.
python3 "$ROOT/bench/evaluation/seed002.py" --build "$BUILD_DIR" "$@"
exec python3 "$ROOT/bench/evaluation/heterogeneous.py" --build "$BUILD_DIR" "$@"
