# e2e-common.sh: sourced by the e2e test scripts (". e2e-common.sh"): the
# MPI environment (Open MPI as root, no progress line), a temporary
# directory $dir removed on exit, fail MESSAGE, and step_losses LOG (the
# "step loss" pairs of a program's step log).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export RATRAIN_PROGRESS_LINE=never
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}
step_losses() {
  sed -n 's/.*"loss":\([^,}]*\).*"step":\([0-9]*\).*/\2 \1/p' "$1"
}
