#!/usr/bin/env python3
"""Regenerates the "Seed 002 on Frontier" section of docs/evaluation.md.

Simulates a 20B GPT-shaped LLaMA (examples/models/gpt-20b-llama.json) on
examples/machines/frontier.yaml with ratrain-sim at 48, 96, 192 and 384 GCDs
(dp = GCDs, pp 1, ZeRO-3) under ZeRO-3 (flat), ZeRO++ (hpZ + qwZ + qgZ) and
seed 002's three-level partitioning (with and without quantization), then the
same on a what-if copy of the machine whose network bandwidths are divided by
WHATIF_FACTOR, and splices the tables into docs/evaluation.md (before
"## Reproduce"; the section is replaced when present, the rest of the file is
left alone). Every run takes well under a second.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MACHINE = "examples/machines/frontier.yaml"
MODEL = "examples/models/gpt-20b-llama.json"
TITLE = "## Seed 002 on Frontier: ZeRO++ vs three-level partitioning"
GCDS = [48, 96, 192, 384]
# GPT-NeoX-20B's global batch (1538 sequences of 2048 tokens), rounded to a
# multiple of 384; 2 sequences per micro-batch (4 does not fit 64 GB at 48
# GCDs in the memory model, which does not yet shrink the gradient buffer
# under a gradient partition).
GLOBAL_BATCH = 1536
MICRO_BATCH = 2
SEQ_LEN = 2048
WHATIF_FACTOR = 10
SEED_RATIO = 1.71
SEED_EFFICIENCY = 0.94
# (key, label, ratrain-sim flags)
VARIANTS = [
    ("flat", "ZeRO-3", ["--partition", "flat"]),
    ("zero++", "ZeRO++ (hpZ+qwZ+qgZ)",
     ["--partition", "zero++", "--weight-wire", "int8", "--grad-wire", "int4"]),
    ("three", "three-level", ["--partition", "three-level"]),
    ("three-q", "three-level + qwZ/qgZ",
     ["--partition", "three-level", "--weight-wire", "int8", "--grad-wire", "int4"]),
]


def find_tool(build):
    tool = os.path.join(build, "bin", "ratrain-sim")
    if not os.access(tool, os.X_OK):
        sys.exit(f"seed002.py: {tool} not found; build it (ninja -C {build} ratrain-sim)")
    return tool


def peak_flops(machine_file):
    with open(machine_file) as f:
        m = re.search(r"^\s*peak_flops_f16:\s*([0-9.eE+-]+)", f.read(), re.M)
    return float(m.group(1))


def what_if_machine(factor, path):
    """frontier.yaml with every network bandwidth divided by `factor`."""
    out, in_network = [], False
    with open(os.path.join(ROOT, MACHINE)) as f:
        for line in f.read().split("\n"):
            if re.match(r"^[a-z_]+:", line):
                in_network = line.startswith("network:")
            m = re.match(r"^(\s+(?:bandwidth|injection_bandwidth):\s*)([0-9.eE+-]+)\s*$", line)
            if in_network and m:
                line = m.group(1) + repr(float(m.group(2)) / factor)
            if line.startswith("name:"):
                line = f"name: frontier-network-div{factor}"
            out.append(line)
    with open(path, "w") as f:
        f.write("\n".join(out))


def simulate(tool, machine_file, gcds, flags):
    cmd = [tool, "--machine", machine_file, "--model", os.path.join(ROOT, MODEL),
           "--clusters", str(gcds), "--global-batch", str(GLOBAL_BATCH),
           "--seq-len", str(SEQ_LEN), "--pp", "1", "--dp", str(gcds),
           "--micro-batch", str(MICRO_BATCH), "--zero", "3", "--recompute", "full",
           "--offload", "none", "--iterations", "3"] + flags
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"seed002.py: {' '.join(cmd)} failed:\n{proc.stderr}")
    result = {}
    for line in proc.stdout.splitlines():
        key, _, value = line.partition(": ")
        try:
            result[key] = float(value)
        except ValueError:
            result[key] = value
    return result


def sweep(tool, machine_file):
    peak = peak_flops(machine_file)
    table = {}
    for gcds in GCDS:
        for key, _, flags in VARIANTS:
            r = simulate(tool, machine_file, gcds, flags)
            exposed = sum(v for k, v in r.items()
                          if k.startswith("exposed-") and isinstance(v, float))
            table[(gcds, key)] = {
                "tflops": r["mfu-percent"] / 100.0 * peak / 1e12,
                "step": r["step-time-s"],
                "exposed": exposed,
                "peak-gib": r.get("peak-ddr-max-gib", 0.0),
            }
        print(f"{os.path.basename(machine_file)} {gcds} GCDs: " + ", ".join(
            f"{k} {table[(gcds, k)]['tflops']:.1f}" for k, _, _ in VARIANTS), file=sys.stderr)
    return table


def write_table(w, table):
    w("| GCDs | m | " + " | ".join(f"{label} TFLOPS/GCD" for _, label, _ in VARIANTS) +
      " | ZeRO++ eff. | three-level+q eff. | three-level / ZeRO++ | three-level+q / ZeRO++ |")
    w("| ---: | ---: | " + " | ".join("---:" for _ in VARIANTS) + " | ---: | ---: | ---: | ---: |")
    base = GCDS[0]
    for gcds in GCDS:
        row = [str(gcds), str(GLOBAL_BATCH // (gcds * MICRO_BATCH))]
        for key, _, _ in VARIANTS:
            r = table[(gcds, key)]
            row.append(f"{r['tflops']:.1f} ({r['exposed']:.2f} s exp.)")
        for key in ("zero++", "three-q"):
            row.append(f"{table[(gcds, key)]['tflops'] / table[(base, key)]['tflops']:.3f}")
        for key in ("three", "three-q"):
            row.append(f"{table[(gcds, key)]['tflops'] / table[(gcds, 'zero++')]['tflops']:.3f}x")
        w("| " + " | ".join(row) + " |")


def section(table, what_if):
    lines = []
    w = lines.append
    last = GCDS[-1]
    ratio = table[(last, "three-q")]["tflops"] / table[(last, "zero++")]["tflops"]
    ratio_native = table[(last, "three")]["tflops"] / table[(last, "zero++")]["tflops"]
    eff = table[(last, "three-q")]["tflops"] / table[(GCDS[0], "three-q")]["tflops"]
    wi_ratio = what_if[(last, "three-q")]["tflops"] / what_if[(last, "zero++")]["tflops"]
    wi_native = what_if[(last, "three")]["tflops"] / what_if[(last, "zero++")]["tflops"]
    wi_eff = what_if[(last, "three-q")]["tflops"] / what_if[(GCDS[0], "three-q")]["tflops"]
    w(TITLE)
    w("")
    w("Seed 002 (Xu et al., *Scaling Large Language Model Training on Frontier with Low-Bandwidth "
      "Partitioning*) reports, for a 20B GPT on Frontier up to 384 GCDs, **1.71x** TFLOPS per GPU "
      "of three-level partitioning over ZeRO++ and a scaling efficiency of **0.94**. The simulator "
      "prices the same policies (docs/simulator.md, \"Partitioned ZeRO\") on "
      f"`{MACHINE}` for `{MODEL}` (44 layers, hidden 6144, 20.6B parameters): dp = GCDs, pp 1, "
      f"ZeRO-3, full recomputation, {SEQ_LEN}-token sequences, a global batch of {GLOBAL_BATCH} "
      f"sequences (GPT-NeoX-20B's 1538, rounded to a multiple of 384; the seed's own batch is not "
      f"in its abstract) in micro-batches of {MICRO_BATCH}, so m = {GLOBAL_BATCH // (GCDS[0] * MICRO_BATCH)} "
      f"micro-batches per step at {GCDS[0]} GCDs down to {GLOBAL_BATCH // (last * MICRO_BATCH)} at {last}. "
      "Policies: ZeRO-3 = `--partition flat` (every gather and reduce-scatter over all GCDs, "
      "gradients synchronized once per step); ZeRO++ = `--partition zero++` (secondary weight "
      "partition per node, gradients reduce-scattered over all GCDs every micro-batch) with int8 "
      "weights and int4 gradients on the wire; three-level = `--partition three-level` (weights "
      "partitioned over the GCD pair of an MI250X, gradients reduce-scattered inside the node every "
      "micro-batch into an fp32 accumulator that crosses the nodes once per step), without and with "
      "the same quantization. TFLOPS per GCD = model FLOPs / step time / GCDs (the simulator's MFU "
      "times the 191.5 TFLOPS bf16 peak); efficiency = TFLOPS per GCD at N / at 48; in brackets the "
      "exposed communication per step.")
    w("")
    w(f"**frontier.yaml** (link peaks: 200 GB/s GCD-GCD, 50 GB/s GPU-GPU, 25 GB/s per NIC, "
      "100 GB/s per node):")
    w("")
    write_table(w, table)
    w("")
    w(f"**What-if: every network bandwidth / {WHATIF_FACTOR}** (an assumption standing for "
      "collectives that reach a tenth of the link peak; not a measured Frontier number):")
    w("")
    write_table(w, what_if)
    w("")
    w("| at 384 GCDs | seed 002 | simulated, frontier.yaml | simulated, network / "
      f"{WHATIF_FACTOR} |")
    w("| --- | ---: | ---: | ---: |")
    w(f"| three-level / ZeRO++ TFLOPS per GCD | {SEED_RATIO:.2f}x | {ratio:.3f}x (native "
      f"{ratio_native:.3f}x) | {wi_ratio:.3f}x (native {wi_native:.3f}x) |")
    w(f"| three-level scaling efficiency 48 -> 384 | {SEED_EFFICIENCY:.2f} | {eff:.3f} | "
      f"{wi_eff:.3f} |")
    w("")
    w("One run by hand (the last column's row at 384 GCDs):")
    w("")
    w("```")
    w(" ".join(["ratrain-sim", "--machine", MACHINE, "--model", MODEL, "--clusters", str(last),
                "--global-batch", str(GLOBAL_BATCH), "--seq-len", str(SEQ_LEN), "--pp", "1",
                "--dp", str(last), "--micro-batch", str(MICRO_BATCH), "--zero", "3",
                "--recompute", "full", "--offload", "none"] + VARIANTS[3][2]))
    w("```")
    w("")
    w("Why the gap:")
    w("")
    w("- On the link peaks of frontier.yaml the step is compute bound under every policy: a layer's "
      f"forward on a micro-batch of {MICRO_BATCH} x {SEQ_LEN} tokens takes about 35 ms at the "
      "assumed 0.55 GEMM efficiency, while the gather of its 0.45B-parameter view inside a node "
      "takes under 10 ms (half with int8) and is prefetched one layer ahead, and the gradient "
      "reduce-scatters run on their own stream behind the backward. What is exposed is the first "
      "gather of each sweep and the tail of the last reduce-scatters, under 1% of a step, so the "
      f"policies differ by under 1% ({ratio:.3f}x at {last} GCDs) and scale almost perfectly "
      f"({eff:.3f}).")
    w("- Per layer and step, each GCD sends between nodes: ZeRO++ about P/8 bytes of int8 weights "
      "(the first-use gather into the node's secondary partition) plus m x P/16 of int4 gradients "
      "(a reduce-scatter over all GCDs every micro-batch); three-level P/8 of weights (the "
      "first-use gather into the GCD pair's partition) plus one reduce-scatter of the fp32 "
      "accumulator, P/2 native or P/16 int4 (P = 0.45B parameters per layer). Where communication "
      "is exposed (the what-if table) the simulator reproduces the seed's direction only with "
      "quantization: three-level + qwZ/qgZ beats ZeRO++ "
      f"({what_if[(GCDS[0], 'three-q')]['tflops'] / what_if[(GCDS[0], 'zero++')]['tflops']:.3f}x "
      f"at m = {GLOBAL_BATCH // (GCDS[0] * MICRO_BATCH)}, {wi_ratio:.3f}x at m = "
      f"{GLOBAL_BATCH // (last * MICRO_BATCH)}), its edge shrinking with the micro-batches per step "
      "because its inter-node gradient traffic is once per step; unquantized three-level "
      f"({wi_native:.3f}x at {last} GCDs) loses to quantized ZeRO++, its per-step fp32 accumulator "
      "and half-view gathers not shrinking as the per-GCD batch does.")
    w("- A 1.71x gap is not a bandwidth effect this model produces with these volumes at "
      "Frontier's 25 GB/s per NIC. The baselines differ too: the ZeRO++ priced here gathers a "
      "layer's node-level secondary shard across the nodes once per step (the design's first-use "
      "gather), while DeepSpeed's ZeRO++ all-gathers over all GPUs (qwZ) in every micro-batch's "
      "forward and uses the secondary copy only in the backward, m times the inter-node weight "
      "traffic. The seed measured DeepSpeed on ROCm/RCCL, where what the simulator does not model "
      "dominates: RCCL all-gather and reduce-scatter throughput far below "
      "the link peak for the many small hpZ / qgZ messages and across the Slingshot dragonfly, "
      "per-collective launch and synchronization overhead, the quantization kernels competing with "
      "the GEMMs for the GPU (here they are memory-bound time on the collective's stream, HBM "
      "bandwidth x memory-bound efficiency, since the machine file names no quantization rate), "
      "and memory: ZeRO++'s secondary copies and gradient buckets change what micro-batch fits, "
      "and allocator fragmentation on MI250X. The simulator's memory model still keeps phase 1's "
      "full-size gradient buffer under every policy (the costmodel part of issue 13 adds the "
      "partitioned accumulator and the secondary copies), so memory does not separate the policies "
      "here.")
    w("- The absolute TFLOPS are an upper bound set by the assumed efficiencies in frontier.yaml "
      "(0.55 GEMM, 0.4 / 0.3 attention, all marked [U]); the seed's measured TFLOPS per GCD are "
      "lower. The simulated ratio and efficiency are what the bandwidth hierarchy alone explains.")
    w("")
    return lines


def splice(doc, lines):
    with open(doc) as f:
        text = f.read()
    body = "\n".join(lines) + "\n"
    start = text.find(TITLE)
    if start >= 0:
        end = text.find("\n## ", start + len(TITLE))
        text = text[:start] + body + (text[end + 1:] if end >= 0 else "")
    else:
        at = text.find("## Reproduce")
        text = (text[:at] + body + "\n" + text[at:]) if at >= 0 else text + "\n" + body
    line = ("bench/evaluation/seed002.sh        # only the seed-002 section "
            "(ZeRO++ vs three-level on Frontier)")
    if line not in text:
        anchor = "bench/evaluation/run.sh            # builds ratrain-sim if needed, regenerates this file"
        if anchor in text:
            text = text.replace(anchor, anchor + "\n" + line, 1)
    text = re.sub(r"\n{3,}", "\n\n", text)
    with open(doc, "w") as f:
        f.write(text)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=os.environ.get("BUILD_DIR", os.path.join(ROOT, "build")))
    parser.add_argument("--out", default=os.path.join(ROOT, "docs"))
    parser.add_argument("--print", action="store_true", help="print the section, write nothing")
    args = parser.parse_args()
    tool = find_tool(os.path.abspath(args.build))
    table = sweep(tool, os.path.join(ROOT, MACHINE))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "frontier-whatif.yaml")
        what_if_machine(WHATIF_FACTOR, path)
        what_if = sweep(tool, path)
    lines = section(table, what_if)
    if args.print:
        print("\n".join(lines))
        return
    doc = os.path.join(args.out, "evaluation.md")
    splice(doc, lines)
    print(f"wrote {TITLE[3:]} into {doc}", file=sys.stderr)


if __name__ == "__main__":
    main()
