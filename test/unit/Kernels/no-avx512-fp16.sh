#!/bin/sh
# Fails if a kernel library holds an AVX512-FP16 instruction (vmovw, or a
# packed / scalar half-precision operation: v*ph, v*sh, v*phx). The kernels
# run on Zen 4, which has AVX512-BF16 but not AVX512-FP16, and the bf16
# pipelines are compiled for LLVM's sapphirerapids model, which has both: one
# 16-bit lane move there would be a SIGILL here (runtime/kernels/CMakeLists.txt).
# F16C's vcvtph2ps / vcvtps2ph are allowed.
#
# Usage: no-avx512-fp16.sh OBJDUMP LIBDIR
objdump=$1
libdir=$2
status=0
count=0
for lib in "$libdir"/libratrain_k_*.a "$libdir"/libratrain_kernels.a; do
  [ -f "$lib" ] || continue
  count=$((count + 1))
  found=$("$objdump" -d --no-show-raw-insn "$lib" |
    awk -F '\t' 'NF >= 2 { split($2, w, " "); print w[1] }' |
    grep -E '^(vmovw|v[a-z0-9]+(ph|sh|phx|shx))$' |
    grep -v -E '^(vcvtph2ps|vcvtps2ph)$' | sort | uniq -c)
  if [ -n "$found" ]; then
    echo "AVX512-FP16 instructions in $lib:"
    echo "$found"
    status=1
  fi
done
if [ "$count" -eq 0 ]; then
  echo "no kernel libraries under $libdir"
  exit 1
fi
[ "$status" -eq 0 ] && echo "$count kernel libraries, no AVX512-FP16 instruction"
exit $status
