#!/usr/bin/env bash
# RATrain's one entry point for set-up, build, the main job and the tests.
#
#   scripts/ratrain.sh deps    install missing Debian packages (apt)
#   scripts/ratrain.sh build   deps + configure + build everything
#   scripts/ratrain.sh main    build + the main job (see README)
#   scripts/ratrain.sh test    build + every test: lit, unit, end-to-end
#
# Environment: BUILD_DIR (default build), JOBS (default nproc),
# RATRAIN_CMAKE_ARGS (extra cmake arguments).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
JOBS="${JOBS:-$(nproc)}"

# Every package the build, the tests and the runtime need.
PACKAGES=(
  cmake ninja-build g++ clang git python3 ccache
  libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools libzstd-dev
  libhalide14-0-dev
  libopenmpi-dev openmpi-bin
  libopenblas-dev
  googletest libgtest-dev libbenchmark-dev
)

log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

deps() {
  local missing=()
  for pkg in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" ||
      missing+=("$pkg")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    log "all packages present"
    return
  fi
  log "installing: ${missing[*]}"
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "error: need root or sudo to install ${missing[*]}" >&2; exit 1; }
    sudo=sudo
  fi
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q "${missing[@]}"
}

build() {
  deps
  if [ ! -f "$BUILD_DIR/build.ninja" ]; then
    log "configuring $BUILD_DIR"
    # shellcheck disable=SC2086
    cmake -G Ninja -S "$ROOT" -B "$BUILD_DIR" \
      -DCMAKE_BUILD_TYPE=Release \
      -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
      -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
      ${RATRAIN_CMAKE_ARGS:-}
  fi
  log "building ($JOBS jobs)"
  ninja -C "$BUILD_DIR" -j "$JOBS"
}

# MPI as root in containers needs these; harmless otherwise.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1

main_job() {
  build
  exec "$ROOT/scripts/main-job.sh" "$BUILD_DIR"
}

run_tests() {
  build
  log "running every test (lit + unit + end-to-end)"
  cd "$BUILD_DIR"
  ctest --output-on-failure -j "$JOBS" --timeout 900
}

case "${1:-}" in
  deps) deps ;;
  build) build ;;
  main) main_job ;;
  test) run_tests ;;
  *)
    sed -n '2,12p' "$0" >&2
    exit 2
    ;;
esac
