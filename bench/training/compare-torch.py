#!/usr/bin/python3
"""RATrain against PyTorch on the same training shapes (docs/benchmarks.md).

    /usr/bin/python3 bench/training/compare-torch.py [--build BUILD_DIR]
        [--steps 20] [--warmup 3] [--models tiny,85m] [--precisions fp32,bf16]
        [--rounds 1]

For each model (the tiny LLaMA of examples/models, and the 12 x 768 LLaMA of
bench/training/llama-85m.json, both vocabulary 256) and precision, trains
4 sequences of 256 tokens a step:

  - RATrain: `ratrain run MODEL --machine host --ranks 2 --dtype D
    --global-batch 4 --seq-len 256` on the shipped corpus (the planner's plan
    on this host's calibrated machine file; 2 ranks);
  - PyTorch: bench/training/torch-baseline.py, 2 threads, fp32 or bf16
    autocast (fp32 masters), the same model shape, AdamW.

and prints tokens/s (from the median step after the warm-up), the ratio, the
fraction of the host's peak each reaches (6 x matrix parameters + causal
attention FLOPs per token, over the fp32 FMA or bf16 dot-product peak of
all CPUs: `ratrain-calibrate --peaks` measures each CPU alone and all of
them at once, right before and right after each run; the larger of the two
totals, averaged over the two measurements: the host's CPUs do not deliver
the same rate from one minute to the next, so a peak measured once at the
start misjudges a run minutes later) and the share of RATrain's step
outside kernels and waits (the runtime's overhead). The peaks each fraction
divides by are printed with it, per CPU. With --rounds N the pair of runs is
repeated N times, one line each, and a line of the medians follows: the
host's speed moves by 5-30% between minutes, and only runs side by side and
repeated say which is faster.

PyTorch is optional: without python3-torch the script says so and exits 0.
Never a test.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TOKENS_PER_STEP = (4, 256)  # sequences, tokens each
MODELS = {
    "tiny": os.path.join(ROOT, "examples", "models", "tiny-llama.json"),
    "85m": os.path.join(HERE, "llama-85m.json"),
}


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, text=True, **kw)


def flops_per_token(config, seq):
    """6 x the matrix parameters (projections, MLP, LM head; not the
    embedding lookup) + the causal attention products, forward and backward
    (QK^T and PV: 2 x 2 S D per head, half under the causal mask, x 3)."""
    h, layers = config["hidden_size"], config["num_hidden_layers"]
    heads = config["num_attention_heads"]
    kv = config.get("num_key_value_heads", heads)
    d = config.get("head_dim", h // heads)
    ffn, vocab = config["intermediate_size"], config["vocab_size"]
    per_layer = h * heads * d * 2 + h * kv * d * 2 + 3 * h * ffn
    matrices = layers * per_layer + h * vocab
    attention = layers * heads * 6 * seq * d
    return 6 * matrices + attention


def peaks(bin_dir):
    """The host's peaks now (`ratrain-calibrate --peaks`: each CPU alone,
    then all at once): {"fp32", "bf16": the larger total of the two (FLOP/s;
    bf16 at the rate of the bf16 kernels' path), "fp32_alone",
    "fp32_together", "bf16_alone", "bf16_together": per CPU}."""
    out = run([os.path.join(bin_dir, "ratrain-calibrate"), "--peaks"],
              capture_output=True).stdout
    p = json.loads(out)
    widen = p["bf16_path"] != "dot"
    result = {"fp32": p["peak32_total"], "bf16": p["peak16_total"]}
    for when in ("alone", "together"):
        result["fp32_" + when] = p[when]["fp32_flops"]
        result["bf16_" + when] = p[when]["fp32_flops" if widen else
                                         "bf16_flops"]
    return result


def bracket(before, after, precision):
    """The mean of two peak measurements (FLOP/s), and what they were made
    of as text: GFLOP/s per CPU alone and all at once, means of the two."""
    key = "fp32" if precision == "fp32" else "bf16"
    mean = lambda when: "/".join(
        "%.0f" % ((a + b) / 2e9)
        for a, b in zip(before[key + "_" + when], after[key + "_" + when]))
    return ((before[key] + after[key]) / 2,
            "%.0f (alone %s, together %s)" % (
                (before[key] + after[key]) / 2e9, mean("alone"),
                mean("together")))


def ratrain_run(bin_dir, corpus, model, precision, steps, warmup, out_dir,
                round_index):
    log = os.path.join(out_dir, "ratrain-%s-%s-%d.jsonl" % (
        os.path.basename(model), precision, round_index))
    if os.path.exists(log):
        os.remove(log)
    seqs, seq = TOKENS_PER_STEP
    dtype = {"fp32": "f32", "bf16": "bf16"}[precision]
    run([os.path.join(bin_dir, "ratrain"), "run", model, "--machine", "host",
         "--ranks", "2", "--dtype", dtype, "--global-batch", str(seqs),
         "--seq-len", str(seq), "--steps", str(steps), "--data", corpus,
         "--log", log, "--seed", "0"], stdout=subprocess.DEVNULL)
    rows = [json.loads(l) for l in open(log) if '"step"' in l]
    rows = [r for r in rows if r["step"] > warmup and "step_s" in r]
    step_s = statistics.median(r["step_s"] for r in rows)
    # Overhead: each rank's step minus kernels and waits, the worst rank.
    other = max(
        sum(r["other_s"][k] for r in rows) / sum(r["rank_step_s"][k] for r in rows)
        for k in range(len(rows[0]["rank_step_s"])))
    return seqs * seq / step_s, step_s, other


def torch_run(config, precision, steps, warmup):
    seqs, seq = TOKENS_PER_STEP
    out = run(["/usr/bin/python3", os.path.join(HERE, "torch-baseline.py"),
               config, "--batch", str(seqs), "--seq-len", str(seq),
               "--steps", str(steps), "--warmup", str(warmup), "--threads",
               "2", "--precision", precision], capture_output=True).stdout
    result = json.loads(out.strip().splitlines()[-1])
    return result["tokens_per_s"], result["step_s"], result["torch"]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--models", default="tiny,85m")
    p.add_argument("--precisions", default="fp32,bf16")
    p.add_argument("--rounds", type=int, default=1)
    a = p.parse_args()
    if a.rounds < 1 or a.steps <= a.warmup:
        sys.exit("error: --rounds must be at least 1 and --steps more than "
                 "--warmup (got %d, %d, %d)" % (a.rounds, a.steps, a.warmup))
    if subprocess.run(["/usr/bin/python3", "-c", "import torch"],
                      capture_output=True).returncode != 0:
        print("PyTorch baseline skipped: python3-torch is not installed "
              "(apt-get install python3-torch)")
        return 0
    bin_dir = os.path.join(a.build, "bin")
    corpus = os.path.join(a.build, "examples", "data", "corpus.tok")
    for f in (os.path.join(bin_dir, "ratrain"), corpus):
        if not os.path.exists(f):
            sys.exit("error: %s is missing (build the project first)" % f)
    out_dir = tempfile.mkdtemp(prefix="ratrain-vs-torch-")
    load = open("/proc/loadavg").read().split()[:3]
    first = peaks(bin_dir)
    print("host: %d cores, load %s; peaks now: fp32 %.1f GFLOP/s, bf16 %.1f "
          "GFLOP/s; %d steps after %d warm-up; logs in %s"
          % (os.cpu_count(), " ".join(load), first["fp32"] / 1e9,
             first["bf16"] / 1e9, a.steps - a.warmup, a.warmup, out_dir))
    header = ("model", "precision", "RATrain tok/s", "PyTorch tok/s", "ratio",
              "RATrain % peak", "PyTorch % peak", "RATrain other",
              "peak GFLOP/s (RATrain; PyTorch)")
    print("%-6s %-9s %14s %14s %7s %15s %15s %14s  %s" % header)
    seq = TOKENS_PER_STEP[1]
    for name in a.models.split(","):
        model = MODELS[name]
        config = json.load(open(model))
        fpt = flops_per_token(config, seq)
        for precision in a.precisions.split(","):
            rows = []
            for r in range(a.rounds):
                before = first if first else peaks(bin_dir)
                ours, _, other = ratrain_run(bin_dir, corpus, model, precision,
                                             a.steps, a.warmup, out_dir, r)
                between = peaks(bin_dir)
                theirs, _, version = torch_run(model, precision, a.steps,
                                               a.warmup)
                first = None
                after = peaks(bin_dir)
                peak_ours, cpus_ours = bracket(before, between, precision)
                peak_theirs, cpus_theirs = bracket(between, after, precision)
                rows.append((ours, theirs, ours / theirs,
                             100 * ours * fpt / peak_ours,
                             100 * theirs * fpt / peak_theirs, 100 * other))
                print("%-6s %-9s %14.0f %14.0f %6.2fx %14.1f%% %14.1f%% "
                      "%13.1f%%  %s; %s"
                      % ((name, precision) + rows[-1] +
                         (cpus_ours, cpus_theirs)), flush=True)
            if a.rounds > 1:
                medians = tuple(statistics.median(row[i] for row in rows)
                                for i in range(6))
                print("%-6s %-9s %14.0f %14.0f %6.2fx %14.1f%% %14.1f%% "
                      "%13.1f%%  median of %d rounds"
                      % ((name, precision) + medians + (a.rounds,)),
                      flush=True)
    print("PyTorch %s, 2 threads; RATrain 2 ranks (the planner's plan)" %
          version)
    return 0


if __name__ == "__main__":
    sys.exit(main())
