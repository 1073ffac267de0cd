#!/usr/bin/env bash
# Runs an MPI end-to-end test with a bounded wall time.
#   mpi-test.sh [--expect-fail REGEX] [--env NAME=VALUE]... MPIEXEC NP PROGRAM ARGS...
# Without --expect-fail the job must exit 0. With it, the job must exit
# non-zero and its output must match REGEX (extended grep).
set -uo pipefail

expect_fail=""
envs=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --expect-fail) expect_fail=$2; shift 2 ;;
    --env) envs+=("-x" "$2"); shift 2 ;;
    *) break ;;
  esac
done
mpiexec=$1; np=$2; shift 2

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Bounded: a hung job is killed after 240 s and counts as a failure.
start=$SECONDS
output=$(timeout -k 10 240 "$mpiexec" --oversubscribe -np "$np" "${envs[@]}" "$@" 2>&1)
rc=$?
printf '%s\n' "$output"
# 124: timeout stopped it; 137 after the limit: timeout had to kill it (a job
# whose rank died of SIGKILL also exits 137, but early).
if [[ $rc -eq 124 || ( $rc -eq 137 && $(( SECONDS - start )) -ge 240 ) ]]; then
  echo "mpi-test: FAILED: the job did not finish within 240 s" >&2
  exit 1
fi
if [[ -z $expect_fail ]]; then
  [[ $rc -eq 0 ]] || { echo "mpi-test: FAILED: exit code $rc" >&2; exit 1; }
  exit 0
fi
if [[ $rc -eq 0 ]]; then
  echo "mpi-test: FAILED: expected a non-zero exit code" >&2
  exit 1
fi
if ! grep -Eq -- "$expect_fail" <<<"$output"; then
  echo "mpi-test: FAILED: output does not match /$expect_fail/" >&2
  exit 1
fi
echo "mpi-test: failed as expected (exit code $rc)"
