#!/bin/sh
# ldd-test.sh FILE...
# Each FILE (libratrain_program.so, an emitted program) loads no LLVM, MLIR
# or Halide library and nothing the dynamic loader cannot find: a compute
# node needs MPI and the C/C++ runtime libraries only (docs/runtime.md).
set -eu
status=0
for file in "$@"; do
  deps=$(ldd "$file") || {
    echo "FAIL: ldd $file failed"
    exit 1
  }
  bad=$(printf '%s\n' "$deps" | grep -Ei 'libLLVM|libMLIR|libHalide|not found' ||
    true)
  if [ -n "$bad" ]; then
    printf '%s\n' "$deps"
    echo "FAIL: $file loads:"
    printf '%s\n' "$bad"
    status=1
  else
    echo "PASS: $file loads no LLVM, MLIR or Halide library"
  fi
done
exit $status
