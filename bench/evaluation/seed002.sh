#!/usr/bin/env bash
# Regenerates only the "Seed 002 on Frontier" section of docs/evaluation.md
# (bench/evaluation/seed002.py): builds ratrain-sim if it is missing.
# BUILD_DIR defaults to build/.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
if [ ! -x "$BUILD_DIR/bin/ratrain-sim" ]; then
  ninja -C "$BUILD_DIR" -j"${JOBS:-2}" ratrain-sim
fi
exec python3 "$ROOT/bench/evaluation/seed002.py" --build "$BUILD_DIR" "$@"
