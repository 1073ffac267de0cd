#!/bin/sh
# init-from-test.sh MPIEXEC NP PROGRAM TOKENS CKPT_TOOL CONFIG DTYPE SHARDS
# --init-from and `ratrain-ckpt export` on an emitted program of the model
# CONFIG describes (an FP32 model), with a HuggingFace directory written by
# an independent writer (hf-directory.py: struct and json, no torch) in
# DTYPE (F32, BF16, F16) and SHARDS files:
#  1. --init-from HF --steps 2 trains; its first loss differs from a run
#     from the program's own initialization (the weights were used);
#  2. --init-from HF --steps 0 --ckpt C0 saves them as the step-0 checkpoint,
#     and --resume from it gives the losses of 1. bit for bit;
#  3. export C0 -> E holds HF's values exactly (compared as floats), and
#     --init-from E saves a step-0 checkpoint equal to C0 (round trip);
#  4. a missing tensor, a misshapen tensor and a config of another shape are
#     refused with a message naming them, exit non-zero, and write nothing
#     (nor leave the files of an offload storage tier behind).
set -eu
if [ $# -ne 8 ]; then
  echo "error: init-from-test.sh: expected MPIEXEC NP PROGRAM TOKENS" \
       "CKPT_TOOL CONFIG DTYPE SHARDS, got $# arguments" >&2
  exit 2
fi
mpiexec=$1 np=$2 program=$3 tokens=$4 ckpt_tool=$5 config=$6 dtype=$7 shards=$8
writer="$(dirname "$0")/hf-directory.py"
. "$(dirname "$0")/e2e-common.sh"
run() { # run NAME ARGS...: the program on NP ranks, output in NAME.txt
  name=$1
  shift
  status=0
  timeout 300 "$mpiexec" -np "$np" --oversubscribe "$program" --data "$tokens" \
    "$@" >"$dir/$name.txt" 2>&1 || status=$?
  return $status
}

python3 "$writer" write "$config" "$dir/hf" --dtype "$dtype" --seed 5 \
  --shards "$shards" || fail "the writer failed"

# 1. Training from the directory, and from the program's initialization.
run init --init-from "$dir/hf" --steps 2 --log "$dir/init.jsonl" ||
  { cat "$dir/init.txt"; fail "--init-from did not train"; }
run fresh --steps 1 --log "$dir/fresh.jsonl" ||
  { cat "$dir/fresh.txt"; fail "the program did not train"; }
first=$(step_losses "$dir/init.jsonl" | sed -n 1p)
fresh=$(step_losses "$dir/fresh.jsonl" | sed -n 1p)
echo "first step from $dtype weights: $first; from the program's init: $fresh"
[ -n "$first" ] && [ "$first" != "$fresh" ] ||
  fail "the first loss does not depend on the loaded weights"

# 2. The step-0 checkpoint of the same weights resumes to the same losses.
run save0 --init-from "$dir/hf" --steps 0 --ckpt "$dir/c0" ||
  { cat "$dir/save0.txt"; fail "--init-from --steps 0 --ckpt did not save"; }
"$ckpt_tool" verify "$dir/c0" || fail "the step-0 checkpoint does not verify"
run resumed --resume --ckpt "$dir/c0" --steps 2 --log "$dir/resumed.jsonl" ||
  { cat "$dir/resumed.txt"; fail "--resume from the step-0 checkpoint failed"; }
step_losses "$dir/init.jsonl" >"$dir/a.txt"
step_losses "$dir/resumed.jsonl" >"$dir/b.txt"
if ! cmp -s "$dir/a.txt" "$dir/b.txt"; then
  paste "$dir/a.txt" "$dir/b.txt"
  fail "--init-from and --resume of the same weights give different losses"
fi
echo "losses equal: $(tr '\n' ' ' <"$dir/a.txt")"

# 3. Export and round trip.
"$ckpt_tool" export "$dir/c0/step-00000000" --config "$config" -o "$dir/export" ||
  fail "ratrain-ckpt export failed"
python3 "$writer" compare "$dir/hf" "$dir/export" ||
  fail "the export does not hold the directory's values"
run save1 --init-from "$dir/export" --steps 0 --ckpt "$dir/c1" ||
  { cat "$dir/save1.txt"; fail "--init-from the export did not save"; }
python3 "$writer" compare "$dir/c0/step-00000000" "$dir/c1/step-00000000" ||
  fail "export -> --init-from does not round-trip"

# 4. Bad directories: an error naming the problem, nothing written.
expect_refused() { # NAME MESSAGE WRITER-ARGS...
  name=$1 message=$2 source=$3
  shift 3
  python3 "$writer" write "$source" "$dir/$name" --dtype "$dtype" --seed 5 "$@"
  export RATRAIN_OFFLOAD_DIR="$dir/$name.offload"
  if run "$name" --init-from "$dir/$name" --steps 0 --ckpt "$dir/$name.ckpt"; then
    fail "$name: --init-from accepted it"
  fi
  unset RATRAIN_OFFLOAD_DIR
  grep -q "$message" "$dir/$name.txt" ||
    { cat "$dir/$name.txt"; fail "$name: no message '$message'"; }
  [ ! -e "$dir/$name.ckpt" ] || fail "$name: a checkpoint was written"
  # The failed run removed its offload files (a storage tier's; the
  # directory the ranks share may stay, empty).
  [ -z "$(ls -A "$dir/$name.offload" 2>/dev/null)" ] ||
    fail "$name: offload files were left: $(ls "$dir/$name.offload")"
  echo "refused $name: $(grep -m1 -o "$message.*" "$dir/$name.txt")"
}
expect_refused missing "tensor 'model.layers.0.mlp.up_proj.weight' of the model is missing" \
  "$config" --drop model.layers.0.mlp.up_proj.weight
expect_refused misshapen "tensor 'model.layers.0.mlp.down_proj.weight' has shape" \
  "$config" --reshape model.layers.0.mlp.down_proj.weight
sed 's/"intermediate_size": \([0-9]*\)/"intermediate_size": 64/' "$config" >"$dir/other.json"
expect_refused other-shape "intermediate_size is 64, the program's model has" \
  "$dir/other.json"
echo "PASS: --init-from ($dtype, $shards file(s)), step-0 checkpoint, export round trip, bad directories refused"
