#!/bin/sh
# offload-host-cache-test.sh MPIEXEC NP PROGRAM TOKENS
# PROGRAM keeps optimizer states in the storage tier. With a host cache
# (RATRAIN_OFFLOAD_HOST_CACHE_BYTES) as large as every state, no state goes
# to a file (the run does not need its offload directory); with a small one,
# some do (it does); both train to exactly the losses of
# the run without a cache, and a checkpoint of the half-cached run resumes
# bit-identically (cached keys are saved from memory, the others from their
# files).
set -eu
mpiexec=$1 np=$2 program=$3 tokens=$4
. "$(dirname "$0")/e2e-common.sh"
run() { # log offload-dir cache-bytes [options]
  log=$1 offload=$2 cache=$3
  shift 3
  RATRAIN_OFFLOAD_DIR=$offload RATRAIN_OFFLOAD_HOST_CACHE_BYTES=$cache \
    timeout 500 "$mpiexec" -np "$np" --oversubscribe -x RATRAIN_OFFLOAD_DIR \
    -x RATRAIN_OFFLOAD_HOST_CACHE_BYTES "$program" --data "$tokens" \
    --seed 3 --log "$log" "$@" >"$dir/out.txt" 2>&1 ||
    { cat "$dir/out.txt"; fail "$program ($cache bytes of host cache) did not train"; }
}
# An offload directory that cannot be created (below a regular file): a run
# that writes no state to a file does not notice it.
: >"$dir/file"
run "$dir/none.jsonl" "$dir/off-none" 0 --steps 6
run "$dir/all.jsonl" "$dir/file/off" 100000000000 --steps 6
run "$dir/some.jsonl" "$dir/off-some" 3000000 --steps 6
if RATRAIN_OFFLOAD_DIR="$dir/file/off" RATRAIN_OFFLOAD_HOST_CACHE_BYTES=3000000 \
    timeout 500 "$mpiexec" -np "$np" --oversubscribe -x RATRAIN_OFFLOAD_DIR \
    -x RATRAIN_OFFLOAD_HOST_CACHE_BYTES "$program" --data "$tokens" \
    --steps 1 >"$dir/out.txt" 2>&1; then
  fail "with a 3 MB host cache no state went to a file"
fi
grep -q "offload directory $dir/file/off" "$dir/out.txt" ||
  { cat "$dir/out.txt"; fail "no error naming the offload directory"; }
for case in all some; do
  step_losses "$dir/$case.jsonl" >"$dir/$case.txt"
  step_losses "$dir/none.jsonl" >"$dir/none.txt"
  diff "$dir/none.txt" "$dir/$case.txt" >/dev/null ||
    fail "the losses with the '$case' host cache differ from those without"
done
echo "losses with and without the host cache: $(tr '\n' ' ' <"$dir/none.txt")"
# Resume through a checkpoint, some states cached and some in files.
run "$dir/first.jsonl" "$dir/off-r1" 3000000 --steps 3 --ckpt "$dir/ckpt" \
  --save-every 3
run "$dir/resumed.jsonl" "$dir/off-r2" 3000000 --steps 6 --ckpt "$dir/ckpt" \
  --resume
step_losses "$dir/resumed.jsonl" | awk '$1 > 3' >"$dir/resumed.txt"
awk '$1 > 3' "$dir/none.txt" >"$dir/tail.txt"
diff "$dir/tail.txt" "$dir/resumed.txt" >/dev/null ||
  fail "the resumed steps 4-6 differ: $(tr '\n' ' ' <"$dir/resumed.txt")"
echo "PASS"
