#!/usr/bin/env bash
# Compares the progress strategies of the runtime on an all-reduce overlapped
# with compute:
#   bench/runtime/run-overlap.sh [BUILD_DIR] [NP] [MIB]
set -euo pipefail
build=${1:-build}
np=${2:-2}
mib=${3:-32}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for op in allreduce p2p; do
  for mode in thread inline; do
    mpirun --oversubscribe -np "$np" -x RATRAIN_PROGRESS=$mode \
      "$build/bin/ratrain-bench-overlap" --op $op --mib "$mib" --reps 15
  done
done
