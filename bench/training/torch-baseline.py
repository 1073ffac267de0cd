#!/usr/bin/python3
"""PyTorch baseline of bench/training/compare-torch.sh: trains the LLaMA of a
HuggingFace config.json on random tokens and prints its tokens/s.

An independent implementation (no transformers, no RATrain code): RMSNorm,
rotate-half RoPE, causal grouped-query attention, SwiGLU MLP, untied LM head,
cross-entropy, AdamW (torch.optim.AdamW, fused=False), written from the LLaMA
paper and HF's modeling_llama conventions. `--precision bf16` runs the forward
and backward under torch.autocast('cpu', dtype=torch.bfloat16) with fp32
masters, the mixed precision a PyTorch user gets; `fp32` runs plain fp32.

Prints one JSON line: tokens_per_s (over the steps after --warmup, from the
median step), step_s, threads, precision and the torch version.

Optional: needs python3-torch (Debian), never a test dependency.
"""

import argparse
import json
import math
import statistics
import sys
import time

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # the caller prints a skip message
    print("error: python3-torch is not installed (apt-get install "
          "python3-torch)", file=sys.stderr)
    sys.exit(3)


class RMSNorm(torch.nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        x32 = x.float()
        rstd = torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return (x32 * rstd).to(x.dtype) * self.weight.to(x.dtype)


def rope_tables(seq, head_dim, theta):
    inv = 1.0 / (theta ** (torch.arange(0, head_dim, 2).float() / head_dim))
    angles = torch.outer(torch.arange(seq).float(), inv)
    emb = torch.cat([angles, angles], dim=-1)
    return emb.cos(), emb.sin()


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat([-x[..., half:], x[..., :half]], dim=-1)


class Layer(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        h, self.nh = c["hidden_size"], c["num_attention_heads"]
        self.nkv = c.get("num_key_value_heads", self.nh)
        self.hd = c.get("head_dim", h // self.nh)
        ffn, eps = c["intermediate_size"], c.get("rms_norm_eps", 1e-5)
        self.norm1, self.norm2 = RMSNorm(h, eps), RMSNorm(h, eps)
        self.q = torch.nn.Linear(h, self.nh * self.hd, bias=False)
        self.k = torch.nn.Linear(h, self.nkv * self.hd, bias=False)
        self.v = torch.nn.Linear(h, self.nkv * self.hd, bias=False)
        self.o = torch.nn.Linear(self.nh * self.hd, h, bias=False)
        self.gate = torch.nn.Linear(h, ffn, bias=False)
        self.up = torch.nn.Linear(h, ffn, bias=False)
        self.down = torch.nn.Linear(ffn, h, bias=False)

    def forward(self, x, cos, sin, mask):
        b, s, _ = x.shape
        y = self.norm1(x)
        q = self.q(y).view(b, s, self.nh, self.hd).transpose(1, 2)
        k = self.k(y).view(b, s, self.nkv, self.hd).transpose(1, 2)
        v = self.v(y).view(b, s, self.nkv, self.hd).transpose(1, 2)
        q = q * cos.to(q.dtype) + rotate_half(q) * sin.to(q.dtype)
        k = k * cos.to(k.dtype) + rotate_half(k) * sin.to(k.dtype)
        if self.nkv != self.nh:
            k = k.repeat_interleave(self.nh // self.nkv, dim=1)
            v = v.repeat_interleave(self.nh // self.nkv, dim=1)
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.hd)
        probs = torch.softmax(scores.float() + mask, dim=-1).to(v.dtype)
        att = torch.matmul(probs, v).transpose(1, 2).reshape(b, s, -1)
        x = x + self.o(att)
        y = self.norm2(x)
        return x + self.down(F.silu(self.gate(y)) * self.up(y))


class Llama(torch.nn.Module):
    def __init__(self, c, seq):
        super().__init__()
        h = c["hidden_size"]
        self.embed = torch.nn.Embedding(c["vocab_size"], h)
        self.layers = torch.nn.ModuleList(
            Layer(c) for _ in range(c["num_hidden_layers"]))
        self.norm = RMSNorm(h, c.get("rms_norm_eps", 1e-5))
        self.head = torch.nn.Linear(h, c["vocab_size"], bias=False)
        hd = c.get("head_dim", h // c["num_attention_heads"])
        cos, sin = rope_tables(seq, hd, c.get("rope_theta", 10000.0))
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)
        mask = torch.full((seq, seq), float("-inf")).triu(1)
        self.register_buffer("mask", mask, persistent=False)

    def forward(self, ids):
        x = self.embed(ids)
        for layer in self.layers:
            x = layer(x, self.cos, self.sin, self.mask)
        return self.head(self.norm(x))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("config")
    p.add_argument("--batch", type=int, default=4, help="sequences a step")
    p.add_argument("--seq-len", type=int, default=256)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--precision", choices=["bf16", "fp32"], default="bf16")
    a = p.parse_args()
    if a.steps <= a.warmup or a.batch < 1 or a.seq_len < 2:
        p.error("need --steps > --warmup, --batch >= 1, --seq-len >= 2")
    with open(a.config) as f:
        config = json.load(f)
    torch.manual_seed(0)
    torch.set_num_threads(a.threads)
    model = Llama(config, a.seq_len)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.95),
                            weight_decay=0.1)
    vocab = config["vocab_size"]
    times = []
    for step in range(a.steps):
        ids = torch.randint(0, vocab, (a.batch, a.seq_len + 1))
        start = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16,
                            enabled=a.precision == "bf16"):
            logits = model(ids[:, :-1])
            loss = F.cross_entropy(logits.float().reshape(-1, vocab),
                                   ids[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        times.append(time.perf_counter() - start)
    step_s = statistics.median(times[a.warmup:])
    print(json.dumps({
        "tokens_per_s": a.batch * a.seq_len / step_s,
        "step_s": step_s,
        "steps": a.steps - a.warmup,
        "threads": a.threads,
        "precision": a.precision,
        "parameters": sum(t.numel() for t in model.parameters()),
        "torch": torch.__version__,
    }))


if __name__ == "__main__":
    main()
