#!/bin/sh
# host-machine-test.sh RATRAIN MODEL WORKDIR
# `--machine host` (docs/machine-model.md, "This host's machine file"): the
# driver measures the host with ratrain-calibrate on first use into its
# cache, keyed by the CPU, and reuses the file afterwards.
#  1. --host-file on an empty cache calibrates, prints the cached path
#     (machines/host-<vendor>-<family>-<model>-<cpus>c-<hash>.yaml) and
#     leaves no temporary file (ratrain-calibrate writes a temporary file
#     and renames it: its note names the final path);
#  2. the file is a machine file (`ratrain machine host` reads it back),
#     with the GEMM's and the attention's time fits where the kernels are
#     built, and ddr_bandwidth_alone on a host of several CPUs;
#  3. a second --host-file prints the same path without measuring again;
#  4. `ratrain plan --machine host` plans on it, timing the model's GEMM
#     calls into it first (gemm_measured, with the kernels; MODEL is the
#     tiny LLaMA: e.g. its k/v projections' weight gradient for
#     micro-batches of 2, TN 128 x 256 x 512), once: a second plan times
#     nothing;
#  5. --calibrate measures again into the same path;
#  6. --calibrate --model lists the model's GEMM calls as well; a missing
#     model file is refused before anything is measured.
set -eu
ratrain=$1 model=$2 work=$3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
rm -rf "$work"
mkdir -p "$work"
export XDG_CACHE_HOME="$work/cache"
fail() { echo "FAIL: $*"; exit 1; }

"$ratrain" machine --host-file >"$work/path1" 2>"$work/err1" ||
  { cat "$work/err1"; fail "the first --host-file failed"; }
path=$(cat "$work/path1")
case "$path" in
  "$XDG_CACHE_HOME"/ratrain/machines/host-*-*-*-*c-*.yaml) ;;
  *) fail "unexpected machine file path '$path'" ;;
esac
[ -f "$path" ] || fail "$path was not written"
grep -q 'calibrating this host' "$work/err1" || fail "no calibration note"
ls "$XDG_CACHE_HOME/ratrain/machines" | grep -q '\.tmp$' &&
  fail "a temporary file is left behind"
grep -q '\.tmp' "$work/err1" && fail "the output names a temporary file"
grep -q "wrote $path" "$work/err1" || fail "the output does not name $path"

"$ratrain" machine host >"$work/host.yaml" || fail "ratrain machine host"
grep -q '^clusters_per_node:' "$work/host.yaml" || fail "not a machine file"
# A host of several CPUs (one cluster each) shares its DDR: the calibration
# writes what one cluster streaming alone gets.
if [ "$(nproc)" -gt 1 ]; then
  grep -q '^  ddr_bandwidth_alone:' "$work/host.yaml" ||
    fail "no ddr_bandwidth_alone in the calibrated file of $(nproc) CPUs"
fi
# With the Halide kernels (a GEMM time fit), the attention's time fits and
# the optimizer update's and the layers' element-wise kernels' own rates too.
if grep -q '^  gemm_fit:' "$work/host.yaml"; then
  for fit in attention_forward_fit attention_backward_fit optimizer_bandwidth \
    optimizer_bandwidth_alone optimizer_bandwidth_f16 optimizer_bandwidth_alone_f16 \
    elementwise_bandwidth elementwise_bandwidth_f16; do
    grep -q "^  $fit:" "$work/host.yaml" || fail "no $fit in the calibrated file"
  done
fi

"$ratrain" machine --host-file >"$work/path2" 2>"$work/err2"
[ "$(cat "$work/path2")" = "$path" ] || fail "the second --host-file differs"
grep -q 'calibrating' "$work/err2" && fail "the second --host-file measured again"

# has_model_calls: the cached file lists the model's TN 128 x 256 x 512 for
# both operand types.
has_model_calls() {
  for type in f32 f16; do
    awk -v t="    $type:" '$0 == t {on = 1; next} /^    [a-z0-9]+:/ {on = 0}
      on && /form: TN, m: 128, n: 256, k: 512,/ {found = 1} END {exit !found}' "$path" ||
      return 1
  done
}
"$ratrain" plan "$model" --machine host --ranks 2 >"$work/plan.txt" 2>&1 ||
  { cat "$work/plan.txt"; fail "ratrain plan --machine host"; }
grep -q 'calibrating' "$work/plan.txt" && fail "plan measured again"
if grep -q '^  gemm_fit:' "$work/host.yaml"; then
  grep -q 'timing [0-9]* GEMM calls of' "$work/plan.txt" ||
    { cat "$work/plan.txt"; fail "plan did not time the model's GEMM calls"; }
  has_model_calls || fail "the cached file lacks the model's GEMM calls after plan"
  "$ratrain" plan "$model" --machine host --ranks 2 >"$work/plan1.txt" 2>&1 ||
    { cat "$work/plan1.txt"; fail "the second ratrain plan --machine host"; }
  grep -q 'timing' "$work/plan1.txt" && fail "the second plan timed the GEMM calls again"
fi

"$ratrain" machine --calibrate --quick >"$work/path3" 2>"$work/err3" ||
  { cat "$work/err3"; fail "--calibrate --quick"; }
[ "$(cat "$work/path3")" = "$path" ] || fail "--calibrate wrote elsewhere"
grep -q 'calibrating this host' "$work/err3" || fail "--calibrate did not measure"

if grep -q '^  gemm_fit:' "$work/host.yaml"; then
  "$ratrain" machine --calibrate --quick --model "$model" >"$work/path4" 2>"$work/err4" ||
    { cat "$work/err4"; fail "--calibrate --model"; }
  [ "$(cat "$work/path4")" = "$path" ] || fail "--calibrate --model wrote elsewhere"
  has_model_calls || fail "--calibrate --model did not list the model's GEMM calls"
  "$ratrain" plan "$model" --machine host --ranks 2 >"$work/plan2.txt" 2>&1 ||
    { cat "$work/plan2.txt"; fail "ratrain plan on the file with the model's calls"; }
fi
"$ratrain" machine --calibrate --model "$work/missing.json" >/dev/null 2>"$work/err5" &&
  fail "--model of a missing file succeeded"
grep -q "missing.json: no such model file" "$work/err5" ||
  { cat "$work/err5"; fail "no message naming the missing model"; }
echo "PASS: $path"
head -3 "$path"
