#!/bin/sh
# emit-warnings-test.sh TRANSLATE OPT PROGRAM_TXT SOURCE_DIR BINARY_DIR WORK
#                       GXX CLANGXX
# Emitted C++ compiles without a warning under -Wall -Wextra -Werror with both
# compilers (docs/emitter.md, "Warnings"). The tiny LLaMA is lowered under
# several plans (FP32 and bf16 pipelines, ZeRO-1, offloaded states, the
# gpu-style policy) and emitted, as is the every-op-kind module of the lit
# tests; each program is compiled with -fsyntax-only, with the definitions
# and include directories of PROGRAM_TXT (build/bin/ratrain-program.txt, how
# the driver builds programs). Directories outside SOURCE_DIR and BINARY_DIR
# (LLVM, MPI) are third-party headers and given with -isystem: a warning
# inside them is not one of the emitted code.
set -eu
if [ $# -ne 8 ]; then
  echo "error: emit-warnings-test.sh: expected 8 arguments, got $#" >&2
  exit 2
fi
translate=$1 opt=$2 program_txt=$3 src=$4 bin=$5 work=$6 gxx=$7 clangxx=$8
lower=$src/test/e2e/emit-lower.sh
model=$src/examples/models/tiny-llama.json
host=$src/examples/machines/host.yaml

for cxx in "$gxx" "$clangxx"; do
  if ! command -v "$cxx" >/dev/null 2>&1; then
    echo "FAIL: compiler '$cxx' not found; both g++ and clang++ are needed" \
         "(scripts/ratrain.sh deps installs them)"
    exit 1
  fi
done

value() { sed -n "s/^$1=//p" "$program_txt"; }
flags=
for dir in $(value include_dirs | tr ';' ' '); do
  case $dir in
  "$src"/* | "$bin"/*) flags="$flags -I$dir" ;;
  *) flags="$flags -isystem $dir" ;;
  esac
done
for def in $(value compile_definitions | tr ';' ' '); do
  flags="$flags -D$def"
done
std=$(value cxx_flags | tr ' ' '\n' | grep '^-std=' || true)
flags="${std:--std=c++17} $flags -Wall -Wextra -Werror -fsyntax-only"

rm -rf "$work"
mkdir -p "$work"
# name | emit-lower.sh machine | plan | emit-lower.sh options
cases="fp32-pp2|$host|clusters=2 global-batch=4 pp=2|
bf16-pp2|$host|clusters=2 global-batch=4 pp=2|--dtype bf16
zero1|$host|clusters=2 global-batch=8|
offload-master-bf16|$host|clusters=2 global-batch=4 pp=2 offload=master|--dtype bf16
zero1-offload|$host|clusters=2 global-batch=8 offload=optimizer|
gpu-style-pp2|$host|clusters=2 global-batch=4 pp=2|--policy gpu-style"
programs=
echo "$cases" | {
  while IFS='|' read -r name machine plan options; do
    # shellcheck disable=SC2086 # options are words
    "$lower" "$translate" "$opt" "$model" "$machine" "$plan" \
      "$work/$name.mlir" $options
    "$translate" --mt3k-to-cpp "$work/$name.mlir" -o "$work/$name.cpp"
  done
}
"$translate" --mt3k-to-cpp "$src/test/Target/emit-cpp.mlir" -o "$work/ops.cpp"

failed=0
for cpp in "$work"/*.cpp; do
  for cxx in "$gxx" "$clangxx"; do
    # shellcheck disable=SC2086 # flags are words
    if "$cxx" $flags "$cpp" >"$cpp.log" 2>&1; then
      echo "ok: $(basename "$cpp") with $cxx"
    else
      echo "FAIL: $(basename "$cpp") with $cxx:"
      head -n 40 "$cpp.log"
      failed=1
    fi
  done
done
if [ "$failed" -ne 0 ]; then
  exit 1
fi
echo "PASS: every emitted program compiles without warnings"
