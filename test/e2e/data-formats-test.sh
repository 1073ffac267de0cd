#!/bin/sh
# data-formats-test.sh MPIEXEC NP PROGRAM TOKENS
# The same token stream in the three formats the loader reads (docs/runtime.md,
# "Data"): TOKENS (a RATrain token file), a Megatron-LM indexed dataset
# (.idx + .bin, uint16, cut into sequences of 1000 tokens) and a flat uint16
# array (u16:FILE), both written here by Python from TOKENS' ids. Training 3
# steps on each logs the same losses bit for bit; a Megatron dataset with ids
# past the model's vocabulary stops with a message naming one.
set -eu
if [ $# -ne 4 ]; then
  echo "error: data-formats-test.sh: expected MPIEXEC NP PROGRAM TOKENS" >&2
  exit 2
fi
mpiexec=$1 np=$2 program=$3 tokens=$4
. "$(dirname "$0")/e2e-common.sh"
python3 - "$tokens" "$dir" <<'PY'
import struct, sys
src, out = sys.argv[1], sys.argv[2]
data = open(src, "rb").read()
width, count = struct.unpack_from("<IQ", data, 12)
assert width == 2, "expected a uint16 token file"
ids = data[32:32 + 2 * count]
open(out + "/flat.bin", "wb").write(ids)
def megatron(prefix, payload, n):
    lengths = [min(1000, n - s) for s in range(0, n, 1000)]
    idx = b"MMIDIDX\x00\x00" + struct.pack("<QBQQ", 1, 8, len(lengths), 2)
    idx += struct.pack("<%di" % len(lengths), *lengths)
    offsets, o = [], 0
    for length in lengths:
        offsets.append(o)
        o += 2 * length
    idx += struct.pack("<%dq" % len(offsets), *offsets)
    idx += struct.pack("<qq", 0, 1)
    open(prefix + ".idx", "wb").write(idx)
    open(prefix + ".bin", "wb").write(payload)
megatron(out + "/mega", ids, count)
bad = bytearray(ids)
for position in range(5, count, 100):  # in every window: past the vocabulary
    struct.pack_into("<H", bad, 2 * position, 60000)
megatron(out + "/bad", bytes(bad), count)
PY
run() { # NAME DATA
  timeout 300 "$mpiexec" -np "$np" --oversubscribe "$program" --data "$2" \
    --steps 3 --seed 4 --log "$dir/$1.jsonl" >"$dir/$1.txt" 2>&1
}
losses() { step_losses "$dir/$1.jsonl"; }
run tok "$tokens" || { cat "$dir/tok.txt"; fail "training on $tokens failed"; }
run mega "$dir/mega.bin" || { cat "$dir/mega.txt"; fail "training on the Megatron dataset failed"; }
run flat "u16:$dir/flat.bin" || { cat "$dir/flat.txt"; fail "training on the flat array failed"; }
[ "$(losses tok)" = "$(losses mega)" ] || fail "Megatron losses differ: $(losses mega) vs $(losses tok)"
[ "$(losses tok)" = "$(losses flat)" ] || fail "flat-array losses differ: $(losses flat) vs $(losses tok)"
echo "equal losses on the three formats: $(losses tok | tr '\n' ' ')"
if run bad "$dir/bad"; then
  fail "an id past the vocabulary was trained on"
fi
grep -q "bad.bin: token id 60000 at position [0-9]*05 is not below the model's vocab_size" "$dir/bad.txt" ||
  { cat "$dir/bad.txt"; fail "no message naming the bad id"; }
echo "PASS: RATrain, Megatron and flat token files train alike; a bad id is named"
