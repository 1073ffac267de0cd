#!/bin/sh
# partition-counters-test.sh CHECK A B
# Compares the collective counters two emitted programs left through
# RATRAIN_COUNTERS (rank 0's bytes per network level: `level <l> <bytes>`
# lines, native and wire bytes together; runtime/src/EmittedProgram.cpp):
#   outer-less  A sends fewer bytes than B at the outermost level (a
#               partitioned policy against flat ZeRO-3)
#   wire-ratio  at every level B uses, A sends at most RATIO x B's bytes,
#               RATIO = the int8 wire's bytes per fp32 element (1 byte plus a
#               4-byte scale per 256-element block, over 4 bytes) with 2 %
#               slack; A is the qwZ int8 + qgZ int4 run of B's plan (int4
#               gradients send less still)
# Prints the bytes it compares; exits 1 when the check fails.
set -eu
if [ $# -ne 3 ]; then
  echo "error: partition-counters-test.sh: expected CHECK A B, got $#" \
       "arguments" >&2
  exit 2
fi
check=$1 a=$2 b=$3
for file in "$a" "$b"; do
  if [ ! -s "$file" ]; then
    echo "error: $file: no counters (did its e2e.equiv.run test pass?)" >&2
    exit 1
  fi
done
case $check in
outer-less)
  outer=$(awk '$1 == "level" { l = $2 } END { print l }' "$b")
  bytesA=$(awk -v l="$outer" '$1 == "level" && $2 == l { print $3 }' "$a")
  bytesB=$(awk -v l="$outer" '$1 == "level" && $2 == l { print $3 }' "$b")
  echo "outermost level $outer: $a sends $bytesA bytes, $b $bytesB bytes"
  if [ -z "$bytesA" ] || [ -z "$bytesB" ] || [ "$bytesA" -ge "$bytesB" ]; then
    echo "FAIL: expected fewer bytes at level $outer"
    exit 1
  fi
  ;;
wire-ratio)
  awk -v ratio="$(awk 'BEGIN { print (1 + 4 / 256) / 4 * 1.02 }')" '
    FNR == NR { if ($1 == "level") a[$2] = $3; next }
    $1 == "level" && $3 > 0 {
      printf "level %s: %.0f bytes quantized, %.0f native (ratio %.4f, bound %.4f)\n",
        $2, a[$2], $3, a[$2] / $3, ratio
      if (a[$2] > ratio * $3) bad = 1
      seen = 1
    }
    END {
      if (!seen) { print "FAIL: no native bytes to compare"; exit 1 }
      if (bad) { print "FAIL: quantized bytes above the wire ratio"; exit 1 }
    }' "$a" "$b"
  ;;
*)
  echo "error: partition-counters-test.sh: unknown check '$check'" >&2
  exit 2
  ;;
esac
