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

import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sections  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MACHINE = "examples/machines/frontier.yaml"
MODEL = "examples/models/gpt-20b-llama.json"
TITLE = "## Seed 002 on Frontier: ZeRO++ vs three-level partitioning"
GCDS = [48, 96, 192, 384]
# Weak scaling with one micro-batch per step (m = 1): 4 sequences per GCD,
# 1536 at 384 GCDs (GPT-NeoX-20B's 1538, rounded to a multiple of 384). With
# m = 1 the lowering's once-per-step gradient reduce-scatter is the
# per-micro-batch one of ZeRO++ and seed 002; with m > 1 RATrain accumulates
# full-size gradients (42 GB of the 20B model at pp 1), so three-level's
# half-model secondary partition no longer fits 64 GB (STRONG_BATCH below).
MICRO_BATCH = 4
STRONG_BATCH = 1536
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


def run_sim(tool, machine_file, gcds, batch, flags):
    cmd = [tool, "--machine", machine_file, "--model", os.path.join(ROOT, MODEL),
           "--clusters", str(gcds), "--global-batch", str(batch),
           "--seq-len", str(SEQ_LEN), "--pp", "1", "--dp", str(gcds),
           "--micro-batch", str(MICRO_BATCH), "--zero", "3", "--recompute", "full",
           "--offload", "none", "--act-offload", "none", "--iterations", "3"] + flags
    return cmd, subprocess.run(cmd, capture_output=True, text=True)


def simulate(tool, machine_file, gcds, flags):
    cmd, proc = run_sim(tool, machine_file, gcds, gcds * MICRO_BATCH, flags)
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


def strong_scaling_memory(tool, machine_file):
    """DDR per GCD of each policy at the first GCD count with STRONG_BATCH
    (m > 1): the simulated peak when it fits, else what the planner reports
    the stage needs."""
    gcds = GCDS[0]
    out = {}
    for key, _, flags in VARIANTS:
        _, proc = run_sim(tool, machine_file, gcds, STRONG_BATCH, flags)
        if proc.returncode == 0:
            m = re.search(r"^peak-ddr-max-gib: ([0-9.]+)", proc.stdout, re.M)
            out[key] = (True, float(m.group(1)) * 2**30 / 1e9 if m else 0.0)
        else:
            m = re.search(r"needs ([0-9.]+) GB of ([0-9.]+) GB", proc.stderr)
            if not m:
                sys.exit(f"seed002.py: unexpected failure at {gcds} GCDs, batch "
                         f"{STRONG_BATCH}:\n{proc.stderr}")
            out[key] = (False, float(m.group(1)))
    return out


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
    w("| GCDs | global batch | " + " | ".join(f"{label} TFLOPS/GCD" for _, label, _ in VARIANTS) +
      " | ZeRO++ eff. | three-level+q eff. | three-level / ZeRO++ | three-level+q / ZeRO++ |")
    w("| ---: | ---: | " + " | ".join("---:" for _ in VARIANTS) + " | ---: | ---: | ---: | ---: |")
    base = GCDS[0]
    for gcds in GCDS:
        row = [str(gcds), str(gcds * MICRO_BATCH)]
        for key, _, _ in VARIANTS:
            r = table[(gcds, key)]
            row.append(f"{r['tflops']:.1f} ({r['exposed']:.2f} s exp.)")
        for key in ("zero++", "three-q"):
            row.append(f"{table[(gcds, key)]['tflops'] / table[(base, key)]['tflops']:.3f}")
        for key in ("three", "three-q"):
            row.append(f"{table[(gcds, key)]['tflops'] / table[(gcds, 'zero++')]['tflops']:.3f}x")
        w("| " + " | ".join(row) + " |")


def section(table, what_if, strong):
    lines = []
    w = lines.append
    first, last = GCDS[0], GCDS[-1]
    ratio = table[(last, "three-q")]["tflops"] / table[(last, "zero++")]["tflops"]
    ratio_native = table[(last, "three")]["tflops"] / table[(last, "zero++")]["tflops"]
    eff = table[(last, "three-q")]["tflops"] / table[(first, "three-q")]["tflops"]
    wi_ratio = what_if[(last, "three-q")]["tflops"] / what_if[(last, "zero++")]["tflops"]
    wi_native = what_if[(last, "three")]["tflops"] / what_if[(last, "zero++")]["tflops"]
    wi_eff = what_if[(last, "three-q")]["tflops"] / what_if[(first, "three-q")]["tflops"]
    wi_first = what_if[(first, "three-q")]["tflops"] / what_if[(first, "zero++")]["tflops"]
    w(TITLE)
    w("")
    w("Seed 002 (Xu et al., *Scaling Large Language Model Training on Frontier with Low-Bandwidth "
      "Partitioning*) reports, for a 20B GPT on Frontier up to 384 GCDs, **1.71x** TFLOPS per GPU "
      "of three-level partitioning over ZeRO++ and a scaling efficiency of **0.94**. The simulator "
      "prices the same policies (docs/simulator.md, \"Partitioned ZeRO\") on "
      f"`{MACHINE}` for `{MODEL}` (44 layers, hidden 6144, 20.6B parameters): dp = GCDs, pp 1, "
      f"ZeRO-3, full recomputation, {SEQ_LEN}-token sequences, weak scaling with one micro-batch "
      f"of {MICRO_BATCH} sequences per GCD and step (global batch {first * MICRO_BATCH} at "
      f"{first} GCDs to {last * MICRO_BATCH} at {last}, GPT-NeoX-20B's batch; the seed's own "
      "batch is not in its abstract). Policies: ZeRO-3 = `--partition flat` (every gather and "
      "reduce-scatter over all GCDs); ZeRO++ = `--partition zero++` (secondary weight partition "
      "per node, gradients reduce-scattered over all GCDs) with int8 weights and int4 gradients "
      "on the wire; three-level = `--partition three-level` (weights partitioned over the GCD "
      "pair of an MI250X, gradients reduce-scattered inside the node and the partition across "
      "the nodes), without and with the same quantization. With one micro-batch the lowering's "
      "gradient reduce-scatter after a layer's last backward is the per-micro-batch one of the "
      "seed's systems. TFLOPS per GCD = model FLOPs / step time / GCDs (the simulator's MFU "
      "times the 191.5 TFLOPS bf16 peak); efficiency = TFLOPS per GCD at N / at 48; in brackets "
      "the exposed communication per step.")
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
                "--global-batch", str(last * MICRO_BATCH), "--seq-len", str(SEQ_LEN), "--pp", "1",
                "--dp", str(last), "--micro-batch", str(MICRO_BATCH), "--zero", "3",
                "--recompute", "full", "--offload", "none"] + VARIANTS[3][2]))
    w("```")
    w("")
    fits = "; ".join(
        f"{label} {'fits, ' if ok else 'needs '}{gb:.1f} GB"
        for (key, label, _), (ok, gb) in ((v, strong[v[0]]) for v in VARIANTS))
    w("Why the gap:")
    w("")
    w("- On the link peaks of frontier.yaml the step is compute bound under every policy: a layer's "
      f"forward on a micro-batch of {MICRO_BATCH} x {SEQ_LEN} tokens takes about 70 ms at the "
      "assumed 0.55 GEMM efficiency, while the gather of its 0.45B-parameter view inside a node "
      "takes under 10 ms (half with int8) and is prefetched one layer ahead, and the gradient "
      "reduce-scatters run on their own stream behind the backward. What is exposed is the first "
      "gather of each sweep and the tail of the last reduce-scatters, under 1% of a step, so the "
      f"policies differ by under 1% ({ratio:.3f}x at {last} GCDs) and scale almost perfectly "
      f"({eff:.3f}).")
    w("- Per layer and step, each GCD sends between nodes: ZeRO++ about P/8 bytes of int8 weights "
      "(the first-use gather into the node's secondary partition) plus P/16 of int4 gradients "
      "(the reduce-scatter over all GCDs); three-level P/8 of weights (the first-use gather into "
      "the GCD pair's partition) plus the partition's reduce-scatter across the nodes, P/8 "
      "native or P/32 int4 (P = 0.45B parameters per layer); ZeRO-3 gathers over all GCDs in "
      "every forward and backward. Where communication is exposed (the what-if table) the "
      f"quantized policies tie (three-level + qwZ/qgZ over ZeRO++ {wi_first:.3f}x at {first} "
      f"GCDs, {wi_ratio:.3f}x at {last}): with one micro-batch per step both cross the nodes with "
      "about the same bytes per layer, and what is left hides behind the compute. Unquantized "
      f"three-level is {wi_native:.3f}x of quantized ZeRO++ at {last} GCDs: its native wire "
      "moves 2x the weight and 4x the gradient bytes. ZeRO-3's gathers over all GCDs in every "
      "forward and backward are what partitioning saves (ZeRO++ "
      f"{what_if[(last, 'zero++')]['tflops'] / what_if[(last, 'flat')]['tflops']:.2f}x of it).")
    w(f"- Memory, not bandwidth, limits three-level in RATrain at more than one micro-batch per "
      f"step: the lowering reduces a partitioned gradient once per step (docs/schedule.md, "
      f"\"Partitioning\"), so with m > 1 each GCD accumulates the full-size 16-bit gradients of "
      f"the whole model at pp 1, and three-level's secondary partition over the GCD pair holds "
      f"half the model's views. At {first} GCDs with the strong-scaling batch of "
      f"{STRONG_BATCH} (m = {STRONG_BATCH // (first * MICRO_BATCH)}): {fits} of 64 GB. The "
      "seed's systems reduce-scatter every micro-batch into a partitioned accumulator, which "
      "RATrain's IR does not express yet; the tables above therefore keep m = 1.")
    w("- A 1.71x gap is not a bandwidth effect this model produces with these volumes at "
      "Frontier's 25 GB/s per NIC. The baselines differ too: the ZeRO++ priced here gathers a "
      "layer's node-level secondary shard across the nodes once per step (the design's first-use "
      "gather), while DeepSpeed's ZeRO++ all-gathers over all GPUs (qwZ) in every micro-batch's "
      "forward and uses the secondary copy only in the backward. The seed measured DeepSpeed on "
      "ROCm/RCCL, where what the simulator does not model dominates: RCCL all-gather and "
      "reduce-scatter throughput far below the link peak for the many small hpZ / qgZ messages "
      "and across the Slingshot dragonfly, per-collective launch and synchronization overhead, "
      "the quantization kernels competing with the GEMMs for the GPU (here they are memory-bound "
      "time on the collective's stream, HBM bandwidth x memory-bound efficiency, since the "
      "machine file names no quantization rate), and allocator fragmentation on MI250X.")
    w("- The absolute TFLOPS are an upper bound set by the assumed efficiencies in frontier.yaml "
      "(0.55 GEMM, 0.4 / 0.3 attention, all marked [U]); the seed's measured TFLOPS per GCD are "
      "lower. The simulated ratio and efficiency are what the bandwidth hierarchy alone explains.")
    w("")
    return lines


def make_lines(tool):
    table = sweep(tool, os.path.join(ROOT, MACHINE))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "frontier-whatif.yaml")
        what_if_machine(WHATIF_FACTOR, path)
        what_if = sweep(tool, path)
    strong = strong_scaling_memory(tool, os.path.join(ROOT, MACHINE))
    return section(table, what_if, strong)


if __name__ == "__main__":
    sections.main(__doc__, ROOT, TITLE,
                  "bench/evaluation/seed002.sh        # only the seed-002 section "
                  "(ZeRO++ vs three-level on Frontier)",
                  make_lines)
