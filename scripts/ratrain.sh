#!/usr/bin/env bash
# RATrain's one entry point for set-up, build, the main job and the tests.
#
#   scripts/ratrain.sh deps    install missing Debian packages (apt)
#   scripts/ratrain.sh build   deps + configure + build everything
#   scripts/ratrain.sh main    build + the main job (see README)
#   scripts/ratrain.sh test    build + every test: lit, unit, end-to-end
#   scripts/ratrain.sh sanitize  ASan+UBSan build (build-sanitize) + unit and lit tests
#   scripts/ratrain.sh fuzz [SECONDS]  libFuzzer build (build-fuzz) + each target
#                                      for SECONDS (default 60); fails on a crash
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
  pkgconf libsentencepiece-dev libpcre2-dev
  googletest libgtest-dev libbenchmark-dev
)

# ccache (when installed) keys on paths relative to the checkout, so a fresh
# clone elsewhere (CI) reuses the objects of earlier builds on this machine.
export CCACHE_BASEDIR="$ROOT"

log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

# configure_build DIR CMAKE_ARGS...: configure DIR unless it was configured
# with exactly these arguments (and compiler variables); a folder configured
# otherwise (another compiler, other flags) is configured again from scratch,
# since CMake cannot switch compilers in place.
configure_build() {
  local dir=$1
  shift
  local signature="CC=${CC:-} CXX=${CXX:-} $* ${RATRAIN_CMAKE_ARGS:-}"
  if [ -f "$dir/build.ninja" ] && [ -f "$dir/ratrain-configure.txt" ] &&
     [ "$(cat "$dir/ratrain-configure.txt")" = "$signature" ]; then
    return
  fi
  if [ -f "$dir/CMakeCache.txt" ]; then
    log "$dir was configured with other options: configuring it again"
    rm -rf "$dir/CMakeCache.txt" "$dir/CMakeFiles"
  fi
  log "configuring $dir"
  # shellcheck disable=SC2086
  cmake -G Ninja -S "$ROOT" -B "$dir" "$@" ${RATRAIN_CMAKE_ARGS:-}
  printf '%s' "$signature" >"$dir/ratrain-configure.txt"
}

# The sanitizer and fuzz builds: clang at -O1 (what the sanitizers' manuals
# advise; clang compiles the MLIR-heavy files about 3.5x faster than gcc at
# -O3, which keeps CI within its budget on 2 cores), no kernels or benchmarks.
SANITIZER_CMAKE_ARGS=(
  -DCMAKE_BUILD_TYPE=Release
  "-DCMAKE_C_FLAGS_RELEASE=-O1 -DNDEBUG"
  "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -DNDEBUG"
  -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir
  -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit
  "-DRATRAIN_SANITIZE=address;undefined"
  -DRATRAIN_ENABLE_KERNELS=OFF -DRATRAIN_ENABLE_BENCH=OFF
)

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
  # RATRAIN_TEST_DEADLINE (seconds since the epoch, set by .ci/run): start no
  # test after it (ctest --stop-time, a time of day within the next 24 hours),
  # so a suite over its budget still ends with ctest's summary.
  local stop=()
  if [ -n "${RATRAIN_TEST_DEADLINE:-}" ]; then
    if [ "$(date +%s)" -ge "$RATRAIN_TEST_DEADLINE" ]; then
      echo "error: no time left for the tests: the deadline" \
        "(RATRAIN_TEST_DEADLINE, $(date -d "@$RATRAIN_TEST_DEADLINE" +%T)) has passed" >&2
      exit 1
    fi
    stop=(--stop-time "$(date -d "@$RATRAIN_TEST_DEADLINE" +%T)")
  fi
  ctest --output-on-failure -j "$JOBS" --timeout 900 "${stop[@]}"
}

# ASan + UBSan build of the compiler, its tools and unit tests (no kernels,
# runtime or benchmarks: the Halide objects cannot be instrumented and the
# mpirun tests are too slow under ASan), then the unit tests and the lit suite.
# SANITIZE_BUILD_DIR (default build-sanitize), SANITIZE_TARGETS (default all).
# Leaks are reported (detect_leaks=1): our tools free what they allocate.
sanitize() {
  deps
  local dir="${SANITIZE_BUILD_DIR:-$ROOT/build-sanitize}"
  CC=clang CXX=clang++ configure_build "$dir" "${SANITIZER_CMAKE_ARGS[@]}" \
    -DRATRAIN_ENABLE_RUNTIME=OFF
  log "building $dir ($JOBS jobs)"
  # shellcheck disable=SC2086
  ninja -C "$dir" -j "$JOBS" ${SANITIZE_TARGETS:-}
  export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:allow_user_poisoning=0:${ASAN_OPTIONS:-}"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
  log "running the unit tests and the lit suite under ASan+UBSan"
  cd "$dir"
  ctest --output-on-failure -j "$JOBS" --timeout 900
}

# libFuzzer targets (fuzz/README.md): a clang build in build-fuzz with
# RATRAIN_FUZZ=ON and ASan+UBSan, then each target for SECONDS on a copy of
# its seed corpus. A crash fails the run; its input is left in
# $FUZZ_BUILD_DIR/artifacts/<target>/.
fuzz() {
  deps
  local seconds="${1:-60}"
  local dir="${FUZZ_BUILD_DIR:-$ROOT/build-fuzz}"
  CC=clang CXX=clang++ configure_build "$dir" "${SANITIZER_CMAKE_ARGS[@]}" \
    -DRATRAIN_FUZZ=ON
  log "building the fuzz targets ($JOBS jobs)"
  ninja -C "$dir" -j "$JOBS" ratrain-fuzzers
  export ASAN_OPTIONS="detect_leaks=1:allow_user_poisoning=0:${ASAN_OPTIONS:-}"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
  python3 "$ROOT/fuzz/seeds.py" "$ROOT" "$dir/fuzz/seeds" >/dev/null
  local failed=()
  local target
  for target in $(cat "$dir/fuzz/targets.txt"); do
    # New inputs go to the first corpus folder (kept in the build tree).
    local corpus="$dir/fuzz/corpus/$target" artifacts="$dir/fuzz/artifacts/$target"
    mkdir -p "$corpus" "$artifacts" "$dir/fuzz/seeds/$target"
    local inputs=("$corpus" "$dir/fuzz/seeds/$target")
    [ -d "$ROOT/fuzz/corpus/$target" ] && inputs+=("$ROOT/fuzz/corpus/$target")
    log "fuzzing $target for ${seconds}s"
    # A fixed seed (RATRAIN_FUZZ_SEED) makes a short run repeatable; vary it
    # for longer runs.
    if ! "$dir/bin/fuzz/$target" -max_total_time="$seconds" -print_final_stats=1 \
      -seed="${RATRAIN_FUZZ_SEED:-1}" -artifact_prefix="$artifacts/" "${inputs[@]}"; then
      failed+=("$target")
    fi
  done
  if [ ${#failed[@]} -ne 0 ]; then
    echo "error: fuzz targets crashed: ${failed[*]} (inputs in $dir/fuzz/artifacts)" >&2
    exit 1
  fi
  log "all fuzz targets ran ${seconds}s without a crash"
}

case "${1:-}" in
  deps) deps ;;
  sanitize) sanitize ;;
  fuzz) shift; fuzz "$@" ;;
  build) build ;;
  main) main_job ;;
  test) run_tests ;;
  *)
    sed -n '2,15p' "$0" >&2
    exit 2
    ;;
esac
