#!/usr/bin/env python3
"""An independent writer and reader of HuggingFace model directories.

Plain Python (struct, json; no torch, no numpy), written from the
safetensors format description, not from RATrain's code:

  hf-directory.py write CONFIG OUT [--dtype F32|BF16|F16] [--seed N]
                  [--shards K] [--drop NAME] [--reshape NAME]
      writes OUT/config.json (a copy of CONFIG) and the parameters of the
      LLaMA-style model CONFIG describes under their HF names, pseudo-random
      (norm weights near 1), in one model.safetensors or K shards with
      model.safetensors.index.json. --drop leaves a tensor out, --reshape
      writes it with its dimensions swapped (for the error tests).
  hf-directory.py compare A B
      compares the tensors of two directories (HF or a RATrain checkpoint
      step directory: every model*.safetensors) by name, as float values:
      exits 1 naming the first difference.
"""

import json
import os
import random
import shutil
import struct
import sys

DTYPE_BYTES = {"F32": 4, "BF16": 2, "F16": 2}


def parameters(config):
    """(name, shape) of every parameter, in HF naming."""
    h = config["hidden_size"]
    heads = config["num_attention_heads"]
    kv = config.get("num_key_value_heads") or heads
    d = config.get("head_dim") or h // heads
    f = config["intermediate_size"]
    vocab = config["vocab_size"]
    qkv_bias = config["model_type"] == "qwen2"
    params = [("model.embed_tokens.weight", [vocab, h])]
    for i in range(config["num_hidden_layers"]):
        p = "model.layers.%d." % i
        params.append((p + "input_layernorm.weight", [h]))
        if config["model_type"] == "baichuan":
            params.append((p + "self_attn.W_pack.weight", [heads * d + 2 * kv * d, h]))
        else:
            params.append((p + "self_attn.q_proj.weight", [heads * d, h]))
            params.append((p + "self_attn.k_proj.weight", [kv * d, h]))
            params.append((p + "self_attn.v_proj.weight", [kv * d, h]))
        if qkv_bias:
            params.append((p + "self_attn.q_proj.bias", [heads * d]))
            params.append((p + "self_attn.k_proj.bias", [kv * d]))
            params.append((p + "self_attn.v_proj.bias", [kv * d]))
        params.append((p + "self_attn.o_proj.weight", [h, heads * d]))
        params.append((p + "post_attention_layernorm.weight", [h]))
        params.append((p + "mlp.gate_proj.weight", [f, h]))
        params.append((p + "mlp.up_proj.weight", [f, h]))
        params.append((p + "mlp.down_proj.weight", [h, f]))
    params.append(("model.norm.weight", [h]))
    if not config.get("tie_word_embeddings", False):
        params.append(("lm_head.weight", [vocab, h]))
    return params


def encode(values, dtype):
    if dtype == "F32":
        return struct.pack("<%df" % len(values), *values)
    if dtype == "F16":
        return struct.pack("<%de" % len(values), *values)
    # BF16: the upper half of the float32 bits, rounded to nearest even.
    out = bytearray()
    for v in values:
        bits = struct.unpack("<I", struct.pack("<f", v))[0]
        bits += 0x7FFF + ((bits >> 16) & 1)
        out += struct.pack("<H", (bits >> 16) & 0xFFFF)
    return bytes(out)


def decode(raw, dtype):
    if dtype == "F32":
        return list(struct.unpack("<%df" % (len(raw) // 4), raw))
    if dtype == "F16":
        return list(struct.unpack("<%de" % (len(raw) // 2), raw))
    if dtype == "BF16":
        halves = struct.unpack("<%dH" % (len(raw) // 2), raw)
        return [struct.unpack("<f", struct.pack("<I", x << 16))[0] for x in halves]
    raise SystemExit("unsupported dtype %s" % dtype)


def write_safetensors(path, tensors):
    """tensors: [(name, dtype, shape, raw bytes)]."""
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for _, _, _, raw in tensors:
            f.write(raw)


def read_safetensors(path):
    """{name: [float values]}."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        b, e = info["data_offsets"]
        out[name] = decode(data[base + b:base + e], info["dtype"])
    return out


def write(args):
    config_path, out = args[0], args[1]
    opts = {"--dtype": "F32", "--seed": "1", "--shards": "1", "--drop": None,
            "--reshape": None}
    i = 2
    while i < len(args):
        opts[args[i]] = args[i + 1]
        i += 2
    with open(config_path) as f:
        config = json.load(f)
    rng = random.Random(int(opts["--seed"]))
    tensors = []
    for name, shape in parameters(config):
        if name == opts["--drop"]:
            continue
        n = 1
        for dim in shape:
            n *= dim
        if name.endswith("norm.weight"):
            values = [1.0 + rng.gauss(0.0, 0.1) for _ in range(n)]
        elif name.endswith(".bias"):
            values = [rng.gauss(0.0, 0.02) for _ in range(n)]
        else:
            values = [rng.gauss(0.0, 0.05) for _ in range(n)]
        if name == opts["--reshape"]:
            shape = list(reversed(shape)) if len(shape) > 1 else [shape[0] + 1]
            values += [0.0] * (max(0, shape[0] - n) if len(shape) == 1 else 0)
        tensors.append((name, opts["--dtype"], shape, encode(values, opts["--dtype"])))
    os.makedirs(out)
    shutil.copyfile(config_path, os.path.join(out, "config.json"))
    shards = int(opts["--shards"])
    if shards == 1:
        write_safetensors(os.path.join(out, "model.safetensors"), tensors)
        return
    per = (len(tensors) + shards - 1) // shards
    weight_map = {}
    for s in range(shards):
        name = "model-%05d-of-%05d.safetensors" % (s + 1, shards)
        part = tensors[s * per:(s + 1) * per]
        write_safetensors(os.path.join(out, name), part)
        for t in part:
            weight_map[t[0]] = name
    with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {}, "weight_map": weight_map}, f)


def tensors_of(directory):
    out = {}
    for name in sorted(os.listdir(directory)):
        if name.startswith("model") and name.endswith(".safetensors"):
            out.update(read_safetensors(os.path.join(directory, name)))
    return out


def compare(args):
    a, b = tensors_of(args[0]), tensors_of(args[1])
    if sorted(a) != sorted(b):
        print("FAIL: tensor names differ: %s" % sorted(set(a) ^ set(b)))
        return 1
    for name in sorted(a):
        if a[name] != b[name]:
            first = next(i for i, (x, y) in enumerate(zip(a[name], b[name])) if x != y)
            print("FAIL: %s differs at element %d: %r vs %r"
                  % (name, first, a[name][first], b[name][first]))
            return 1
    print("equal: %d tensors" % len(a))
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 4 or sys.argv[1] not in ("write", "compare"):
        print(__doc__)
        sys.exit(2)
    if sys.argv[1] == "write":
        write(sys.argv[2:])
        sys.exit(0)
    sys.exit(compare(sys.argv[2:]))
