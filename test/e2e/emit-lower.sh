#!/bin/sh
# emit-lower.sh TRANSLATE OPT MODEL MACHINE PLAN_OPTIONS OUT [DTYPE]
#               [--dtype DTYPE] [--policy ratrain|gpu-style]
#               [--split-backward true|false]
#               [--schedule 1f1b|interleaved-1f1b|zb-h1|zbv]
# The mt3k programs of a model: import -> plan -> schedule -> lower-to-mt3k.
# --policy selects the lifecycle policy of both the plan's step-time
# prediction (--ratrain-plan policy=...) and the schedule
# (--ratrain-schedule-pipeline=policy=...); the default is the passes'
# default, ratrain. --split-backward true splits every backward into its
# input and weight parts (--ratrain-schedule-pipeline=split-backward=true).
# --schedule selects the pipeline schedule the plan is made for and the
# pipeline runs (--ratrain-plan schedule=...). An empty DTYPE, POLICY or
# SCHEDULE means the default.
set -eu
if [ $# -lt 6 ]; then
  echo "error: emit-lower.sh: expected TRANSLATE OPT MODEL MACHINE PLAN OUT" \
       "[DTYPE] [--dtype D] [--policy P], got $# arguments" >&2
  exit 2
fi
translate=$1 opt=$2 model=$3 machine=$4 plan=$5 out=$6
shift 6
dtype= policy= split= kind=
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then
  dtype=$1 # the positional DTYPE of older callers
  shift
fi
while [ $# -gt 0 ]; do
  case $1 in
  --dtype) dtype=${2-} ;;
  --policy) policy=${2-} ;;
  --split-backward) split=${2-} ;;
  --schedule) kind=${2-} ;;
  *)
    echo "error: emit-lower.sh: unknown argument '$1'" >&2
    exit 2
    ;;
  esac
  if [ $# -lt 2 ]; then
    echo "error: emit-lower.sh: $1 needs a value" >&2
    exit 2
  fi
  shift 2
done
case $split in
'' | true | false) ;;
*)
  echo "error: emit-lower.sh: --split-backward '$split' is not true or false" >&2
  exit 2
  ;;
esac
schedule="${policy:+policy=$policy}${split:+ split-backward=$split}"
case $policy in
'' | ratrain | gpu-style) ;;
*)
  echo "error: emit-lower.sh: --policy '$policy' is not ratrain or gpu-style" >&2
  exit 2
  ;;
esac
"$translate" --import-hf-config "$model" --machine "$machine" \
    ${dtype:+--dtype="$dtype"} |
  "$opt" --ratrain-plan="$plan${policy:+ policy=$policy}${kind:+ schedule=$kind}" \
    --ratrain-schedule-pipeline${schedule:+="$schedule"} \
    --ratrain-lower-to-mt3k --mt3k-verify -o "$out.tmp"
mv "$out.tmp" "$out"
