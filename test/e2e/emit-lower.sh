#!/bin/sh
# emit-lower.sh TRANSLATE OPT MODEL MACHINE PLAN_OPTIONS OUT [DTYPE]
# The mt3k programs of a model: import -> plan -> schedule -> lower-to-mt3k.
set -eu
translate=$1 opt=$2 model=$3 machine=$4 plan=$5 out=$6 dtype=${7:-}
"$translate" --import-hf-config "$model" --machine "$machine" \
    ${dtype:+--dtype="$dtype"} |
  "$opt" --ratrain-plan="$plan" --ratrain-schedule-pipeline \
    --ratrain-lower-to-mt3k -o "$out.tmp"
mv "$out.tmp" "$out"
