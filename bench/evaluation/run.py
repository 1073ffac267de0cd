#!/usr/bin/env python3
"""Regenerates docs/evaluation.md and its plots (docs/evaluation/*.svg).

Runs `ratrain-sim` (plan input: the planner picks the best plan for each
policy, the simulator runs its 1F1B program event by event on the machine
file) for
  1. LLaMA-2-7B, Baichuan2-13B, Qwen2.5-32B, LLaMA-2-70B on 1024 MT-3000
     clusters, RATrain policy vs gpu-style policy (and a global-batch sweep),
     and per pipeline schedule (1F1B, ZB-H1, ZBV, interleaved 1F1B, auto)
     with an SVG timeline per schedule for LLaMA-2-70B;
  2. LLaMA-2-7B on 8..1024 clusters (weak scaling),
and writes the tables, SVG plots and two simulator timelines.

Usage: bench/evaluation/run.py [--build BUILD_DIR] [--out docs]
Only the Python standard library is used.
"""

import argparse
import datetime
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MACHINE = os.path.join("examples", "machines", "mt3000.yaml")
MODELS = [
    ("LLaMA-2-7B", "llama-2-7b.json"),
    ("Baichuan2-13B", "baichuan2-13b.json"),
    ("Qwen2.5-32B", "qwen2.5-32b.json"),
    ("LLaMA-2-70B", "llama-2-70b.json"),
]
SEQ_LEN = 4096
CLUSTERS = 1024
GLOBAL_BATCH = 1024  # sequences per iteration at 1024 clusters
BATCH_SWEEP = [256, 1024, 4096]
SCALING_CLUSTERS = [8, 16, 32, 64, 128, 256, 512, 1024]
SEQUENCES_PER_CLUSTER = 8  # weak scaling: global batch = clusters * this
# Scaling series: (name, extra ratrain-sim flags).
SCALING_SERIES = [("planner's choice", []), ("ZeRO off", ["--zero", "0"])]
# Network sensitivity: every network bandwidth of the machine file divided by.
NETWORK_SLOWDOWNS = [1, 4, 16]
POLICIES = ["ratrain", "gpu-style"]
# In-network collectives: (level, reduce, multicast speedups); level 0 is the
# chip, 1 the system network; (0, 1, 1) is the plain machine, 2.5 / 2.9 seed
# 001's collective NoC.
IN_NETWORK = [(0, 1, 1), (0, 2.5, 2.9), (0, 5, 5), (0, 10, 10), (1, 2.5, 2.9), (1, 10, 10)]
# Partial synchronization (ratrain-sim --sync-period): the models and the
# periods, per network slowdown.
PARTIAL_SYNC_MODELS = [("LLaMA-2-7B", "llama-2-7b.json"), ("LLaMA-3.2-1B", "llama-3.2-1b.json")]
SYNC_PERIODS = [4, 16]
PARTIAL_SYNC_CONCLUSION = (
    "**Where it wins.** Against per-step sync of the same layout the gain grows as the network "
    "slows: 0.99-1.00x on the plain and 4x networks, where the per-step collectives were hidden "
    "already and the view cast after each averaging (a pass over the masters, every step) costs "
    "about what the smaller all-reduce saves, and 1.01-1.11x at /16, where the averaging moves "
    "1/H of the fp32 masters per step instead of every gradient and an update no longer waits "
    "for a sync. LLaMA-3.2-1B fits ZeRO-0 without a pipeline; on the 16x slower network, where "
    "the per-step planner itself falls back to ZeRO-0 with offloaded optimizer states, partial "
    "synchronization is 1.21x (H = 4) to 1.27x (H = 16) faster than its best plan. "
    "**Where it loses.** Every replica keeps whole fp32 masters, so LLaMA-2-7B (28 GB of "
    "masters) needs pp 8 to fit 20 GB per cluster against the per-step planner's pp 1 with "
    "ZeRO-2: the pipeline's bubble costs more than ZeRO-2's exposed gathers even on the 16x "
    "slower network (0.63-0.81x); on the plain and 4x networks the 1B's ZeRO-1 plan is also "
    "ahead (0.93-0.96x). DreamDDP's setting, few large-memory nodes on slow links, is the 1B "
    "row at /16; MT-3000's small DDR per cluster favours sharding otherwise.")
# Activation offload (ratrain-sim --act-offload): the machines whose tier
# takes the activations. Every other section plans with --act-offload none,
# so that its figures stay those of the systems it is about.
ACT_OFFLOAD_MACHINES = [
    ("host memory", MACHINE),
    ("storage", os.path.join("examples", "machines", "mt3000-storage.yaml")),
]
# Pipeline message modes (ratrain-sim --transfers).
TRANSFERS = ["two-sided", "one-sided"]
# Pipeline schedules (ratrain-sim --schedule): each kind's best plan, and the
# planner free to pick the kind (auto).
SCHEDULES = ["1f1b", "zb-h1", "zbv", "interleaved-1f1b", "auto"]
TIMELINE_SCHEDULES = ["1f1b", "zb-h1", "zbv", "interleaved-1f1b"]
# (label, model, clusters, global batch, sequence length): the first that has
# a plan of the kind.
TIMELINE_MODELS = [
    ("LLaMA-2-70B", "llama-2-70b.json", CLUSTERS, GLOBAL_BATCH, SEQ_LEN),
    ("Baichuan2-13B", "baichuan2-13b.json", CLUSTERS, GLOBAL_BATCH, SEQ_LEN),
    ("LLaMA-2-7B on 128 clusters, 512 sequences of 2048 tokens", "llama-2-7b.json", 128, 512, 2048),
]
# Acceptance of issue 12 for LLaMA-2-70B with the planner free.
TARGET_BUBBLE_PERCENT = 15.0
TARGET_SPEEDUP = 1.3
ITERATIONS = 3

PAPER_7B_TOKENS = 112790.55
PAPER_7B_EFFICIENCY = 97.0
PAPER_MAX_SPEEDUP = 1.35


def find_tool(build):
    for candidate in (os.path.join(build, "bin", "ratrain-sim"),
                      os.path.join(build, "tools", "ratrain-sim", "ratrain-sim")):
        if os.access(candidate, os.X_OK):
            return candidate
    sys.exit(f"error: {build}: no ratrain-sim; build it first "
             f"(ninja -C {build} ratrain-sim)")


def parse_summary(text):
    """The `key: value` lines of ratrain-sim, numbers converted."""
    result = {"stages_detail": []}
    for line in text.splitlines():
        if line.startswith("stage ") and ": name=" in line:
            fields = dict(re.findall(r"(\S+)=('[^']*'|\S+)", line))
            result["stages_detail"].append(fields)
            continue
        key, sep, value = line.partition(": ")
        if not sep:
            continue
        try:
            result[key] = float(value)
        except ValueError:
            result[key] = value
    return result


def simulate(tool, model_file, clusters, batch, policy, extra=(), machine=MACHINE,
             seq_len=SEQ_LEN):
    if "--act-offload" not in extra:
        extra = list(extra) + ["--act-offload", "none"]
    cmd = [tool, "--machine", machine,
           "--model", os.path.join("examples", "models", model_file),
           "--clusters", str(clusters), "--global-batch", str(batch),
           "--seq-len", str(seq_len), "--policy", policy,
           "--iterations", str(ITERATIONS)] + list(extra)
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        return {"error": done.stderr.strip().replace("ratrain-sim: error: ", "")}
    summary = parse_summary(done.stdout)
    summary["command"] = " ".join(["ratrain-sim"] + cmd[1:])
    return summary


def compile_and_simulate(build, model_file, clusters, batch, policy, plan_extra="",
                         machine=MACHINE):
    """The compiler path: import the HF config, plan (with the extra
    --ratrain-plan options `plan_extra`), expand 1F1B, schedule the
    lifecycle, assign buffers, then simulate the scheduled module."""
    if "act-offload" not in plan_extra:
        plan_extra = (plan_extra + " act-offload=none").strip()
    translate = os.path.join(build, "bin", "ratrain-translate")
    opt = os.path.join(build, "bin", "ratrain-opt")
    sim = os.path.join(build, "bin", "ratrain-sim")
    steps = [
        [translate, "--import-hf-config", os.path.join("examples", "models", model_file),
         f"--machine={machine}"],
        [opt, f"--ratrain-plan=clusters={clusters} global-batch={batch} policy={policy}"
              + (f" {plan_extra}" if plan_extra else ""),
         "--ratrain-expand-1f1b", f"--ratrain-schedule-lifecycle=policy={policy}",
         "--ratrain-assign-buffers"],
        [sim, "-", "--machine", machine, "--iterations", str(ITERATIONS)],
    ]
    data = None
    for cmd in steps:
        done = subprocess.run(cmd, cwd=ROOT, input=data, capture_output=True, text=True)
        if done.returncode != 0:
            return {"error": done.stderr.strip().splitlines()[-1] if done.stderr.strip()
                    else f"{os.path.basename(cmd[0])} failed"}
        data = done.stdout
    summary = parse_summary(data)
    summary["command"] = " | ".join(" ".join([os.path.basename(c[0])] + [
        f'"{a}"' if " " in a else a for a in c[1:]]) for c in steps)
    return summary


def has_compiler_path(build):
    if not all(os.access(os.path.join(build, "bin", t), os.X_OK)
               for t in ("ratrain-translate", "ratrain-opt", "ratrain-sim")):
        return False
    probe = subprocess.run([os.path.join(build, "bin", "ratrain-sim"), "-", "--machine", MACHINE],
                           cwd=ROOT, input="", capture_output=True, text=True)
    return "built without the compiler" not in probe.stderr


def slower_network(path, factor, out_dir):
    """A copy of the machine file with every network bandwidth / factor."""
    out, section = [], None
    with open(os.path.join(ROOT, path)) as f:
        for line in f:
            stripped = line.split("#", 1)[0]
            if re.match(r"^\S", stripped):
                section = stripped.split(":", 1)[0].strip()
            m = re.match(r"^(\s*-?\s*)(bandwidth|node_injection_bandwidth|injection_bandwidth):"
                         r"\s*([0-9.eE+-]+)", stripped)
            if section == "network" and m:
                line = f"{m.group(1)}{m.group(2)}: {float(m.group(3)) / factor:g}\n"
            out.append(line)
    target = os.path.join(out_dir, f"mt3000-network-div{factor}.yaml")
    with open(target, "w") as f:
        f.writelines(out)
    return target


def in_network_machine(path, level, reduce, multicast, out_dir):
    """A copy of the machine file whose network level `level` reduces and
    multicasts in the network `reduce` and `multicast` times faster."""
    with open(os.path.join(ROOT, path)) as f:
        text = f.read()
    block = (f"  in_network:\n    level: {level}\n    reduce_speedup: {reduce:g}\n"
             f"    multicast_speedup: {multicast:g}\n")
    text = text.replace("  collective:", block + "  collective:", 1)
    target = os.path.join(out_dir,
                          f"mt3000-in-network-{level}-{reduce:g}-{multicast:g}.yaml")
    with open(target, "w") as f:
        f.write(text)
    return target


def read_machine(path):
    """The scalar keys of a machine file as dotted names (a small YAML subset:
    nested mappings of scalars, lists of mappings as `key.0.field`,
    comments)."""
    values, stack, items = {}, [], {}
    with open(path) as f:
        for raw in f:
            line = raw.split("#", 1)[0].rstrip()
            if not line.strip():
                continue
            indent = len(line) - len(line.lstrip())
            text = line.strip()
            if text.startswith("- "):
                # A list item: its fields one level below an index key.
                while stack and stack[-1][0] >= indent:
                    stack.pop()
                parent = ".".join(k for _, k in stack)
                index = items.get(parent, 0)
                items[parent] = index + 1
                stack.append((indent, str(index)))
                text, indent = text[2:], indent + 2
            key, _, value = text.partition(":")
            while stack and stack[-1][0] >= indent:
                stack.pop()
            if value.strip():
                values[".".join([k for _, k in stack] + [key])] = value.strip()
            else:
                stack.append((indent, key))
    return values


# --------------------------------------------------------------------------
# Formatting
# --------------------------------------------------------------------------

def fmt_tokens(value):
    return f"{value:,.0f}"


def fmt_s(value):
    if value >= 100:
        return f"{value:,.0f} s"
    if value >= 1:
        return f"{value:.2f} s"
    if value >= 1e-3:
        return f"{value * 1e3:.1f} ms"
    return f"{value * 1e6:.0f} us"


def exposed_total(r):
    return sum(r.get(f"exposed-{k}-s", 0.0) for k in
               ("dma", "p2p", "all-reduce", "reduce-scatter", "all-gather"))


def exposed_breakdown(r):
    parts = []
    for kind in ("p2p", "all-reduce", "reduce-scatter", "all-gather", "dma"):
        value = r.get(f"exposed-{kind}-s", 0.0)
        if value > 0.0005:
            parts.append(f"{kind} {fmt_s(value)}")
    return ", ".join(parts) if parts else "none"


# --------------------------------------------------------------------------
# SVG plots
# --------------------------------------------------------------------------

COLORS = {"ratrain": "#4e79a7", "gpu-style": "#f28e2b", "ideal": "#999999"}


def svg_header(width, height, title):
    return [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" '
            f'height="{height}" viewBox="0 0 {width} {height}" '
            'font-family="Helvetica, Arial, sans-serif" font-size="12">',
            f'<rect width="{width}" height="{height}" fill="white"/>',
            f'<text x="{width / 2}" y="22" text-anchor="middle" font-size="15" '
            f'font-weight="bold">{title}</text>']


def legend(items, x, y):
    out = []
    for name, color in items:
        out.append(f'<rect x="{x}" y="{y - 10}" width="12" height="12" fill="{color}"/>')
        out.append(f'<text x="{x + 16}" y="{y}">{name}</text>')
        x += 30 + 7 * len(name)
    return out


def bar_chart(path, groups):
    """groups: [(label, {policy: tokens/s}, speedup)]: tokens/s normalised to
    the gpu-style policy of each model, absolute values as labels."""
    width, height = 760, 360
    left, right, top, bottom = 70, 20, 50, 60
    plot_w, plot_h = width - left - right, height - top - bottom
    ymax = max(max(v.get("ratrain", 0), v.get("gpu-style", 0)) /
               max(v.get("gpu-style", 1), 1e-9) for _, v, _ in groups)
    ymax = max(1.4, ymax * 1.1)
    out = svg_header(width, height,
                     "Throughput relative to gpu-style, 1024 MT-3000 clusters (simulated)")
    for i in range(0, int(ymax / 0.2) + 1):
        value = i * 0.2
        y = top + plot_h - value / ymax * plot_h
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + plot_w}" y2="{y:.1f}" stroke="#e5e5e5"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{value:.1f}x</text>')
    group_w = plot_w / len(groups)
    bar_w = group_w * 0.32
    for i, (label, values, speedup) in enumerate(groups):
        x0 = left + i * group_w + group_w * 0.16
        base = values.get("gpu-style", 1)
        for j, policy in enumerate(["gpu-style", "ratrain"]):
            if policy not in values:
                continue
            rel = values[policy] / base
            h = rel / ymax * plot_h
            x = x0 + j * bar_w
            out.append(f'<rect x="{x:.1f}" y="{top + plot_h - h:.1f}" width="{bar_w - 4:.1f}" '
                       f'height="{h:.1f}" fill="{COLORS[policy]}"/>')
            out.append(f'<text x="{x + bar_w / 2 - 2:.1f}" y="{top + plot_h - h - 4:.1f}" '
                       f'text-anchor="middle" font-size="10">{fmt_tokens(values[policy])}</text>')
        out.append(f'<text x="{x0 + bar_w:.1f}" y="{top + plot_h + 18}" text-anchor="middle">{label}</text>')
        if speedup:
            out.append(f'<text x="{x0 + bar_w:.1f}" y="{top + plot_h + 34}" text-anchor="middle" '
                       f'fill="#444">{speedup:.3f}x</text>')
    out.append(f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" stroke="#333"/>')
    out += legend([("gpu-style", COLORS["gpu-style"]), ("ratrain", COLORS["ratrain"]),
                   ("(labels: tokens/s)", "white")], left, 44)
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def scaling_chart(path, series):
    """series: {name: [(clusters, tokens/s, efficiency %)]}; log-log
    throughput with the ideal line of the first series, efficiency (dotted)
    on the right axis."""
    import math
    palette = ["#4e79a7", "#b07aa1", "#59a14f", "#e15759"]
    width, height = 780, 400
    left, right, top, bottom = 80, 70, 62, 50
    plot_w, plot_h = width - left - right, height - top - bottom
    first = next(iter(series.values()))
    xs = [c for c, _, _ in first]
    lo, hi = math.log2(xs[0]), math.log2(xs[-1])
    all_t = [t for rows in series.values() for _, t, _ in rows]
    all_e = [e for rows in series.values() for _, _, e in rows]
    ymin = min(all_t) / 2
    ymax = max(max(all_t), first[0][1] / first[0][0] * first[-1][0]) * 2
    ly0, ly1 = math.log10(ymin), math.log10(ymax)
    e_lo = min(80, math.floor((min(all_e) - 5) / 10) * 10)
    e_hi = max(110, math.ceil((max(all_e) + 5) / 10) * 10)

    def px(c):
        return left + (math.log2(c) - lo) / (hi - lo) * plot_w

    def py(t):
        return top + plot_h - (math.log10(t) - ly0) / (ly1 - ly0) * plot_h

    def pe(e):
        return top + plot_h - (e - e_lo) / (e_hi - e_lo) * plot_h

    out = svg_header(width, height, "LLaMA-2-7B weak scaling on MT-3000 (simulated, ratrain policy)")
    for decade in range(math.ceil(ly0), math.floor(ly1) + 1):
        for m in (1, 2, 5):
            t = m * 10 ** decade
            if ymin <= t <= ymax:
                y = py(t)
                out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + plot_w}" y2="{y:.1f}" stroke="#eee"/>')
                out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{t:,.0f}</text>')
    for c in xs:
        out.append(f'<line x1="{px(c):.1f}" y1="{top}" x2="{px(c):.1f}" y2="{top + plot_h}" stroke="#eee"/>')
        out.append(f'<text x="{px(c):.1f}" y="{top + plot_h + 16}" text-anchor="middle">{c}</text>')
    for e in range(e_lo, e_hi + 1, 10):
        out.append(f'<text x="{left + plot_w + 6}" y="{pe(e) + 4:.1f}" fill="#555">{e}%</text>')
    out.append(f'<line x1="{left}" y1="{pe(100):.1f}" x2="{left + plot_w}" y2="{pe(100):.1f}" '
               'stroke="#bbb" stroke-dasharray="1,3"/>')
    ideal = [(c, first[0][1] / first[0][0] * c) for c in xs]
    out.append('<polyline fill="none" stroke="#999" stroke-dasharray="5,4" points="' +
               " ".join(f"{px(c):.1f},{py(t):.1f}" for c, t in ideal) + '"/>')
    items = []
    for (name, rows), color in zip(series.items(), palette):
        out.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" points="' +
                   " ".join(f"{px(c):.1f},{py(t):.1f}" for c, t, _ in rows) + '"/>')
        out.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" '
                   'stroke-dasharray="2,3" points="' +
                   " ".join(f"{px(c):.1f},{pe(e):.1f}" for c, _, e in rows) + '"/>')
        for c, t, e in rows:
            out.append(f'<circle cx="{px(c):.1f}" cy="{py(t):.1f}" r="3" fill="{color}"/>')
            out.append(f'<rect x="{px(c) - 2.5:.1f}" y="{pe(e) - 2.5:.1f}" width="5" height="5" fill="{color}"/>')
        items.append((f"{name}", color))
    out.append(f'<text x="{left + plot_w / 2}" y="{height - 10}" text-anchor="middle">clusters</text>')
    out.append(f'<text x="18" y="{top + plot_h / 2}" transform="rotate(-90 18 {top + plot_h / 2})" '
               'text-anchor="middle">tokens/s (solid, log)</text>')
    out.append(f'<text x="{width - 12}" y="{top + plot_h / 2}" transform="rotate(90 {width - 12} '
               f'{top + plot_h / 2})" text-anchor="middle">scaling efficiency (dotted)</text>')
    out.append(f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" stroke="#333"/>')
    out += legend(items + [("ideal (linear from 8)", "#999999")], left, 46)
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


# --------------------------------------------------------------------------
# The report
# --------------------------------------------------------------------------

def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=os.environ.get("BUILD_DIR", os.path.join(ROOT, "build")))
    parser.add_argument("--out", default=os.path.join(ROOT, "docs"))
    args = parser.parse_args()
    tool = find_tool(os.path.abspath(args.build))
    plots = os.path.join(args.out, "evaluation")
    os.makedirs(plots, exist_ok=True)
    machine = read_machine(os.path.join(ROOT, MACHINE))

    # 1. Models x policies at 1024 clusters.
    comparison = []
    for name, model_file in MODELS:
        runs = {p: simulate(tool, model_file, CLUSTERS, GLOBAL_BATCH, p) for p in POLICIES}
        # The ratrain plan with the lifecycle placed gpu-style: the placement
        # alone.
        runs["placement-only"] = simulate(tool, model_file, CLUSTERS, GLOBAL_BATCH, "ratrain",
                                          ["--schedule-policy", "gpu-style"])
        comparison.append((name, model_file, runs))
        print(f"{name}: " + ", ".join(
            f"{p} {r.get('tokens-per-s', 0):,.0f} tokens/s" for p, r in runs.items()),
            file=sys.stderr)
    # 1c. Pipeline schedules at 1024 clusters, ratrain policy.
    schedules = []
    for name, model_file in MODELS:
        runs = {k: simulate(tool, model_file, CLUSTERS, GLOBAL_BATCH, "ratrain", ["--schedule", k])
                for k in SCHEDULES}
        schedules.append((name, model_file, runs))
        print(f"{name}: " + ", ".join(
            f"{k} {r.get('tokens-per-s', 0):,.0f} tokens/s "
            f"(bubble {r.get('bubble-mean-percent', 0):.1f}%)" for k, r in runs.items()),
            file=sys.stderr)
    # 1d. Gradient clipping at 1024 clusters, ratrain policy: the planner's
    # best plan without and with the global-norm barrier.
    clipping = []
    for name, model_file in MODELS:
        runs = {"none": simulate(tool, model_file, CLUSTERS, GLOBAL_BATCH, "ratrain"),
                "exact": simulate(tool, model_file, CLUSTERS, GLOBAL_BATCH, "ratrain",
                                  ["--max-grad-norm", "1.0"])}
        clipping.append((name, runs))
        print(f"{name}: clipping " + ", ".join(
            f"{k} {r.get('tokens-per-s', 0):,.0f} tokens/s" for k, r in runs.items()),
            file=sys.stderr)
    # One timeline per kind: LLaMA-2-70B, or Baichuan2-13B where the 70B has
    # no plan of that kind under the cap.
    schedule_timelines = {}
    for kind in TIMELINE_SCHEDULES:
        for label, model_file, clusters, batch, seq_len in TIMELINE_MODELS:
            stem = model_file.replace(".json", "")
            if clusters != CLUSTERS:
                stem += f"-{clusters}"
            svg = os.path.join(plots, f"timeline-{stem}-{kind}.svg")
            r = simulate(tool, model_file, clusters, batch, "ratrain",
                         ["--schedule", kind, "--svg", svg, "--trace-iterations", "1",
                          "--iterations", "2"], seq_len=seq_len)
            r["model"], r["svg"] = label, os.path.basename(svg)
            schedule_timelines.setdefault(kind, []).append(r)
            if "error" not in r:
                break

    sweep = []
    for name, model_file in MODELS:
        row = []
        for batch in BATCH_SWEEP:
            runs = {p: simulate(tool, model_file, CLUSTERS, batch, p) for p in POLICIES}
            row.append((batch, runs))
        sweep.append((name, row))

    import tempfile
    build_dir = os.path.abspath(args.build)
    network = []
    transfers = []
    in_network = []
    partial_sync = []
    act_offload = []
    with tempfile.TemporaryDirectory() as tmp:
        for factor in NETWORK_SLOWDOWNS:
            machine_file = MACHINE if factor == 1 else slower_network(MACHINE, factor, tmp)
            row = []
            for name, model_file in MODELS:
                runs = {p: simulate(tool, model_file, CLUSTERS, GLOBAL_BATCH, p, machine=machine_file)
                        for p in POLICIES}
                row.append(runs)
            network.append((factor, row))
        # 1e. Pipeline transfers: the same plan with two-sided and one-sided
        # messages, per network slowdown.
        for factor in NETWORK_SLOWDOWNS:
            machine_file = MACHINE if factor == 1 else slower_network(MACHINE, factor, tmp)
            row = []
            for name, model_file in MODELS:
                runs = {t: simulate(tool, model_file, CLUSTERS, GLOBAL_BATCH, "ratrain",
                                    ["--transfers", t], machine=machine_file)
                        for t in TRANSFERS}
                row.append((name, runs))
                print(f"{name} network /{factor}: " + ", ".join(
                    f"{t} {r.get('step-time-s', 0):.4f} s" for t, r in runs.items()),
                    file=sys.stderr)
            transfers.append((factor, row))
        # 1g. Partial synchronization: per-step sync (planner free, and on
        # the layout of the partial plan) vs each layer averaged every H
        # steps.
        for factor in NETWORK_SLOWDOWNS:
            machine_file = MACHINE if factor == 1 else slower_network(MACHINE, factor, tmp)
            row = []
            for name, model_file in PARTIAL_SYNC_MODELS:
                runs = {"sync": simulate(tool, model_file, CLUSTERS, GLOBAL_BATCH, "ratrain",
                                         machine=machine_file)}
                for h in SYNC_PERIODS:
                    runs[h] = simulate(tool, model_file, CLUSTERS, GLOBAL_BATCH, "ratrain",
                                       ["--sync-period", str(h)], machine=machine_file)
                partial_plan = runs[SYNC_PERIODS[0]].get("plan", "")
                pp = re.search(r"\bpp=(\d+)", partial_plan)
                offload = re.search(r"\boffload=(\w+)", partial_plan)
                if pp:
                    layout = (f"pp={pp.group(1)} zero=0 "
                              f"offload={offload.group(1) if offload else 'none'}")
                    runs["sync-same-layout"] = compile_and_simulate(
                        build_dir, model_file, CLUSTERS, GLOBAL_BATCH, "ratrain", layout,
                        machine=machine_file)
                    for h in SYNC_PERIODS:
                        runs[f"compiled-{h}"] = compile_and_simulate(
                            build_dir, model_file, CLUSTERS, GLOBAL_BATCH, "ratrain",
                            f"{layout} sync-period={h}", machine=machine_file)
                row.append((name, runs))
                print(f"{name} network /{factor}: " + ", ".join(
                    f"{k} {r.get('step-time-s', 0):.3f} s" for k, r in runs.items()),
                    file=sys.stderr)
            partial_sync.append((factor, row))
        # 1h. Activation offload: the planner's best plan without it and with
        # it searched, per tier; the searched plan also compiled.
        for label, machine_file in ACT_OFFLOAD_MACHINES:
            row = []
            for name, model_file in MODELS:
                runs = {k: simulate(tool, model_file, CLUSTERS, GLOBAL_BATCH, "ratrain",
                                    ["--act-offload", k], machine=machine_file)
                        for k in ("none", "")}
                plan = runs[""].get("plan", "")
                if "act-offload=" in plan:
                    runs["compiled"] = compile_and_simulate(
                        build_dir, model_file, CLUSTERS, GLOBAL_BATCH, "ratrain",
                        "act-offload=", machine=machine_file)
                row.append((name, runs))
                print(f"{name} activation offload to {label}: " + ", ".join(
                    f"{k or 'searched'} {r.get('step-time-s', 0):.2f} s" for k, r in runs.items()),
                    file=sys.stderr)
            act_offload.append((label, machine_file, row))
        # 1f. In-network collectives on the chip level, planner free.
        for level, reduce, multicast in IN_NETWORK:
            machine_file = (MACHINE if reduce == multicast == 1
                            else in_network_machine(MACHINE, level, reduce, multicast, tmp))
            row = []
            for name, model_file in MODELS:
                r = simulate(tool, model_file, CLUSTERS, GLOBAL_BATCH, "ratrain",
                             machine=machine_file)
                row.append((name, r))
                print(f"{name} in-network level {level} {reduce}/{multicast}: "
                      f"{r.get('tokens-per-s', 0):,.0f} tokens/s", file=sys.stderr)
            in_network.append(((level, reduce, multicast), row))

    # 2. LLaMA-2-7B weak scaling, per series.
    scaling = {}
    for series, extra in SCALING_SERIES:
        scaling[series] = []
        for clusters in SCALING_CLUSTERS:
            r = simulate(tool, "llama-2-7b.json", clusters,
                         clusters * SEQUENCES_PER_CLUSTER, "ratrain", extra)
            scaling[series].append((clusters, r))
            print(f"LLaMA-2-7B @{clusters} ({series}): {r.get('tokens-per-s', 0):,.0f} tokens/s",
                  file=sys.stderr)

    # 1b. The same comparison through the compiler: scheduled modules.
    compiled = []
    build_dir = os.path.abspath(args.build)
    if has_compiler_path(build_dir):
        for name, model_file in MODELS:
            runs = {p: compile_and_simulate(build_dir, model_file, CLUSTERS, GLOBAL_BATCH, p)
                    for p in POLICIES}
            compiled.append((name, runs))
            print(f"{name} (compiled): " + ", ".join(
                f"{p} {r.get('tokens-per-s', 0):,.0f} tokens/s" for p, r in runs.items()),
                file=sys.stderr)

    # 3. Timelines of one small configuration under both policies.
    timelines = {}
    for policy in POLICIES:
        svg = os.path.join(plots, f"timeline-llama-2-7b-32-{policy}.svg")
        r = simulate(tool, "llama-2-7b.json", 32, 64, policy,
                     ["--pp", "4", "--dp", "8", "--svg", svg, "--trace-iterations", "2"])
        timelines[policy] = r

    speedups = []
    for name, _, runs in comparison:
        a, b = runs["ratrain"], runs["gpu-style"]
        if "tokens-per-s" in a and "tokens-per-s" in b:
            speedups.append(a["tokens-per-s"] / b["tokens-per-s"])
        else:
            speedups.append(None)
    bar_chart(os.path.join(plots, "policies.svg"),
              [(name, {p: runs[p].get("tokens-per-s", 0) for p in POLICIES}, s)
               for (name, _, runs), s in zip(comparison, speedups)])
    scaling_rows = {}
    for series, runs in scaling.items():
        base = runs[0][1].get("tokens-per-s", 0) / runs[0][0]
        scaling_rows[series] = [
            (c, r.get("tokens-per-s", 0),
             100 * r.get("tokens-per-s", 0) / c / base if base else 0) for c, r in runs]
    if all(t > 0 for rows in scaling_rows.values() for _, t, _ in rows):
        scaling_chart(os.path.join(plots, "scaling.svg"), scaling_rows)

    write_report(args.out, machine, comparison, speedups, sweep, network, scaling,
                 scaling_rows, timelines, compiled, schedules, schedule_timelines, clipping, transfers,
                 in_network, partial_sync, act_offload)


def write_schedules(w, schedules, schedule_timelines):
    """The schedule section: each kind's best plan per model, auto, the
    acceptance figures of issue 12 and the LLaMA-2-70B timelines."""
    w("## Pipeline schedules")
    w("")
    w("The same requests (1024 clusters, global batch 1024, ratrain policy) with the pipeline "
      "schedule fixed (`ratrain-sim --schedule=KIND`: the planner's best plan of that kind) or "
      "free (`--schedule=auto`: the kind searched with pp, dp, micro-batching, recompute, ZeRO and "
      "offload). ZB-H1 and ZBV split each backward into its input-gradient part (I) and its "
      "weight-gradient part (W) and defer the W parts into the bubbles; interleaved 1F1B runs "
      "v model chunks per cluster (v = 2 or 4, the planner's choice). Bubble is the mean over "
      "the stages of the time the compute stream is neither busy nor waiting on communication.")
    w("")
    w("| model | schedule | plan | step | tokens/s | MFU | bubble (mean) | peak DDR | vs best 1F1B |")
    w("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    verdicts = []
    for name, _, runs in schedules:
        base = runs["1f1b"].get("tokens-per-s")
        for kind in SCHEDULES:
            r = runs[kind]
            if "error" in r:
                w(f"| {name} | {kind} | no plan: {r['error'][:120]} | | | | | | |")
                continue
            ratio = f"{r['tokens-per-s'] / base:.3f}x" if base else ""
            if kind == "auto":
                ratio = f"**{ratio}**"
            w(f"| {name} | {kind} | `{r.get('plan', '?')}` | {fmt_s(r['step-time-s'])} | "
              f"{fmt_tokens(r['tokens-per-s'])} | {r['mfu-percent']:.1f}% | "
              f"{r['bubble-mean-percent']:.1f}% | {r['peak-ddr-max-gib']:.1f} GiB | {ratio} |")
        auto = runs["auto"]
        if base and "tokens-per-s" in auto:
            verdicts.append((name, auto["tokens-per-s"] / base, auto["bubble-mean-percent"]))
    w("")
    for name, speedup, bubble in verdicts:
        if name != "LLaMA-2-70B":
            continue
        ok = bubble < TARGET_BUBBLE_PERCENT and speedup >= TARGET_SPEEDUP
        w(f"**Target (issue 12): LLaMA-2-70B with the planner free: mean bubble {bubble:.1f}% "
          f"(target < {TARGET_BUBBLE_PERCENT:.0f}%), {speedup:.3f}x the tokens/s of the best 1F1B "
          f"plan (target >= {TARGET_SPEEDUP}x): {'met' if ok else 'NOT met'}.**")
    slower = [n for n, s, _ in verdicts if s < 1 - 1e-3]
    w(f"No model slower than with 1F1B: {'yes' if not slower else 'no (' + ', '.join(slower) + ')'} "
      "(the planner's auto choice is ranked by its predicted step time; the table's figures are "
      "simulated).")
    w("")
    w("**What limits the schedules here.** These are the figures of the cost and memory models "
      "as they are (`docs/planner.md`, \"Pipeline schedules\"), nothing tuned for the target:")
    w("")
    w(f"- With the global batch equal to the cluster count ({GLOBAL_BATCH} sequences on "
      f"{CLUSTERS} clusters), d = {CLUSTERS} / p and d x b x m = {GLOBAL_BATCH} give m = p / b: "
      "every plan has at most as many micro-batches as pipeline stages. Fill and drain are then "
      "a large part of the step under any schedule; interleaving divides them by v only where a "
      "rank can hold v chunks of at least one layer and their extra in-flight activations.")
    w("- With ZeRO-3 (views, gradients and states sharded over all 1024 clusters) every model "
      "but Baichuan2-13B fits on one pipeline stage: the best plan is then pp = 1 with no "
      "bubble at all, and no pipeline schedule can beat it; the bubble target only applies to "
      "pipelined plans. Without ZeRO-3, LLaMA-2-70B needs p >= 32 to fit its model states in "
      "20 GB (2 B/param 16-bit views and "
      "2 B/param gradients on every rank, only the master and Adam states shard with ZeRO-1 "
      "while m > 1), and 80 layers on 32 ranks leave 2 or 3 layers per rank and full recompute "
      "on most. Interleaved 1F1B (v = 2) holds about twice the first-stage 1F1B activations on "
      "every rank: its 3-layer ranks need 20.0-21.7 GB and do not fit (with a 24 GB cap it is "
      "the fastest kind, predicted 1.2x the 1F1B plan at a 32% bubble); v = 4 at p = 32, and "
      "ZBV or interleaving at p = 64, would need 128 virtual stages for 80 layers.")
    w("- The split backward defers each W with its I's deferred buffer (the linear layers' output "
      "gradients, ~0.8 GB per 70B layer and micro-batch) and, under full recompute, the "
      "recomputed activations until the W (another ~1.1 GB): ~28x the 2sbh a fully recomputed "
      "layer otherwise keeps. ZB-H1 defers one per rank, which pushes the 70B to p = 64 "
      "(m = 64, more fill and drain) and costs it 6%. ZBV with m <= p (every plan here) is "
      "`ratrain/Schedule`'s list-scheduled ZBV, which keeps every micro-batch of both chunks "
      "live on each rank (2m chunk activations, and up to m deferred W parts of its second "
      "chunk): its bubble is small (13.9% at p = m = 32 with unit costs) but it fits none of "
      "the four models in 20 GB.")
    w("- The ZB-H1 generated by `ratrain/Schedule` keeps each W right after its I (the split "
      "only lets the I's gradient leave before the W), a conservative form of ZB-H1.")
    w("")
    w("Timelines, one iteration of each kind's best plan for LLaMA-2-70B (where the 70B has no "
      "plan of that kind under the cap, Baichuan2-13B, else LLaMA-2-7B on 128 clusters with 512 "
      "sequences of 2048 tokens); compute stream on top of each stage lane, the I and W parts "
      "show as backward:")
    w("")
    for kind in TIMELINE_SCHEDULES:
        for r in schedule_timelines.get(kind, []):
            if "error" in r:
                w(f"- {kind}, {r['model']}: no plan ({r['error'][:160]})")
                continue
            w(f"**{kind}, {r['model']}** (`{r.get('plan', '?')}`, step "
              f"{fmt_s(r.get('step-time-s', 0))}, bubble {r.get('bubble-mean-percent', 0):.1f}%):")
            w("")
            w(f"![{kind} timeline](evaluation/{r['svg']})")
            w("")


def write_clipping(w, clipping):
    """The cost of exact global gradient-norm clipping (issue 16)."""
    w("## Gradient clipping")
    w("")
    w("Global gradient-norm clipping (`--max-grad-norm`, docs/schedule.md, \"Gradient "
      "clipping\") needs the norm over every gradient of the step before any update. RATrain "
      "computes it exactly: each stage still syncs each layer's gradient as soon as its last "
      "backward is done, but holds every update until the sum of squares of its synced gradients "
      "has been all-reduced over all clusters. The cost is the update overlap that is lost (a "
      "stage's updates no longer run while the stages behind it drain the pipeline), the sum of "
      "squares (one read of the gradients) and the latency of a 4-byte all-reduce over "
      f"{CLUSTERS} clusters. Same requests as above (ratrain policy, 1F1B, planner free); "
      "`--max-grad-norm 1.0` makes the planner price the barrier too:")
    w("")
    w("| model | clipping | plan | step | tokens/s | cost of clipping |")
    w("| --- | --- | --- | --- | --- | --- |")
    for name, runs in clipping:
        base = runs["none"].get("step-time-s")
        for kind in ("none", "exact"):
            r = runs[kind]
            if "error" in r:
                w(f"| {name} | {kind} | no plan: {r['error'][:120]} | | | |")
                continue
            cost = ""
            if kind == "exact" and base:
                cost = f"{100 * (r['step-time-s'] / base - 1):+.3f}%"
            w(f"| {name} | {kind} | `{r.get('plan', '?')}` | {fmt_s(r['step-time-s'])} | "
              f"{fmt_tokens(r['tokens-per-s'])} | {cost} |")
    w("")
    w("Why exact and not a one-step-stale norm (clipping step t's gradients with step t - 1's "
      "norm, which keeps the early updates): at paper scale the exact barrier costs the "
      "fraction above, while a stale norm changes the optimizer's arithmetic against every "
      "reference trainer (PyTorch's `clip_grad_norm_`, Megatron, DeepSpeed), exactly on the "
      "steps where clipping matters (loss spikes). The host runs and the float64 gradcheck "
      "(`test/Conversion/lower-to-mt3k-clip-gradcheck.test`) check the exact form.")
    w("")


def write_transfers(w, transfers):
    """Two-sided vs one-sided pipeline messages (issue 14)."""
    w("## Pipeline transfers: two-sided vs one-sided")
    w("")
    w("How the pipeline's activations and gradients travel (docs/schedule.md, \"One-sided "
      "transfers\"): **two-sided**, MPI send and receive, whose data moves only once the receiver "
      "has posted its receive (the rendezvous protocol of large messages; the lowering posts it "
      "where the schedule receives, right before the consumer), or **one-sided**, a put into the "
      "receiver's reserved buffer that moves when sent. Same requests as above (ratrain policy, "
      "1F1B, planner free: the planner prices both modes alike, so both rows run the same plan), "
      "every network bandwidth of the machine file divided by the slowdown. `exposed p2p` is the "
      "largest stage's time per step blocked on a message in flight.")
    w("")
    w("| network | model | plan | two-sided step | one-sided step | speedup | exposed p2p two-sided | one-sided |")
    w("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for factor, row in transfers:
        for name, runs in row:
            two, one = runs["two-sided"], runs["one-sided"]
            if "error" in two or "error" in one:
                w(f"| /{factor} | {name} | no plan: {(two.get('error') or one.get('error'))[:120]} "
                  "| | | | | |")
                continue
            w(f"| /{factor} | {name} | `{two.get('plan', '?')}` | {fmt_s(two['step-time-s'])} | "
              f"{fmt_s(one['step-time-s'])} | {two['step-time-s'] / one['step-time-s']:.4f}x | "
              f"{fmt_s(two.get('exposed-p2p-s', 0))} | {fmt_s(one.get('exposed-p2p-s', 0))} |")
    w("")
    w("Where the best plan has no pipeline (pp 1, ZeRO data parallelism) there are no messages "
      "to compare. Where it has one, one-sided puts hide the transfers whose receiver is busy "
      "when they are sent, and the exposed message time drops by a third or more; on the 1F1B "
      "critical path (a stage waiting for its neighbour's output) a transfer stays exposed "
      "either way, and each message is one micro-batch's boundary activation, so the step "
      "itself moves by a fraction of a percent even on a 16x slower network.")
    w("")


def write_in_network(w, in_network):
    """Collective-capable network (issue 14)."""
    w("## In-network collectives")
    w("")
    w("A what-if: MT-3000 with seed 001's collective-capable network, whose switches reduce and "
      "multicast while the data passes (docs/machine-model.md, \"In-network collectives\"). "
      "The machine file's `network.in_network` makes every reduction step of a collective on one "
      "network level `reduce` times faster and every all-gather and broadcast step `multicast` "
      "times faster; the planner prices it and the simulator runs it. Level 0 is the chip (the "
      "4 clusters of an MT-3000), level 1 the system network between chips; 1 / 1 is the plain "
      "machine, 2.5 / 2.9 the collective NoC's geomean speedups on 1-32 KiB messages taken at "
      "every size [U]; the 10 / 10 rows ask how far a much faster network could go. The "
      "runtime has no such hardware and runs the ordinary collectives. Same requests as above "
      "(ratrain policy, 1F1B, planner free).")
    w("")
    w("| level | reduce / multicast | model | plan | step | tokens/s | speedup | exposed communication |")
    w("| --- | --- | --- | --- | --- | --- | --- | --- |")
    base = {name: r.get("tokens-per-s") for name, r in in_network[0][1]} if in_network else {}
    for (level, reduce, multicast), row in in_network:
        where = "chip" if level == 0 else "system"
        for name, r in row:
            if "error" in r:
                w(f"| {where} | {reduce:g} / {multicast:g} | {name} | no plan: {r['error'][:120]} "
                  "| | | | |")
                continue
            speedup = r["tokens-per-s"] / base[name] if base.get(name) else 0
            w(f"| {where} | {reduce:g} / {multicast:g} | {name} | `{r.get('plan', '?')}` | "
              f"{fmt_s(r['step-time-s'])} | {fmt_tokens(r['tokens-per-s'])} | {speedup:.3f}x | "
              f"{exposed_breakdown(r)} |")
    w("")
    w("The lifecycle already hides most of the gradient and ZeRO collectives behind compute: "
      "what stays exposed is a few percent of these steps at most, and only that part can "
      "gain. On the chip level only the intra-chip phases of the hierarchical collectives "
      "speed up; the ring between chips (12.5 GB/s per cluster) is left as it was. Where the "
      "exposed time shrinks, the planner keeps the same plans: none of them was bound by the "
      "collectives.")
    w("")


def write_partial_sync(w, partial_sync):
    """Layer-wise partial synchronization, DreamDDP (issue 14)."""
    w("## Partial synchronization (DreamDDP)")
    w("")
    w("Each data-parallel replica updates with its own gradient and every layer's fp32 masters "
      "are averaged over the replicas once every H steps, a 1/H share of the layers in each step "
      "(docs/schedule.md, \"Partial synchronization\"). It keeps whole masters on every replica, "
      "so the planner searches ZeRO-0 plans only (optimizer states may be offloaded; the masters "
      "stay in DDR). Same requests as above (1024 clusters, global batch 1024, ratrain policy, "
      "1F1B), every network bandwidth of the machine file divided by the slowdown. **per-step "
      "sync** is the planner's best plan with the gradient all-reduced (or reduce-scattered) "
      "every step (plan-level program). The other columns are compiled modules (plan, expand, "
      "lifecycle, buffers; `ratrain-sim -`), so the lifecycle pass places every update and "
      "averaging: **same layout** is the per-step plan at the partial plan's pp, ZeRO-0 and "
      "offload, **H = 4 / 16** the partial plans. The simulator runs H + 1 iterations, so the "
      "step is the mean over the H phases; `exposed` is the time per step blocked on "
      "collectives (gradient, parameter and averaging) and on the offload tier.")
    w("")
    w("| network | model | per-step sync plan | step | exposed | same layout step | exposed | "
      + " | ".join(f"H = {h} step | exposed | vs same layout | vs per-step" for h in SYNC_PERIODS)
      + " |")
    w("| --- | --- | --- | --- | --- | --- | --- | "
      + " | ".join("--- | --- | --- | ---" for _ in SYNC_PERIODS) + " |")

    def coll(r):
        return (r.get("exposed-all-reduce-s", 0) + r.get("exposed-reduce-scatter-s", 0)
                + r.get("exposed-all-gather-s", 0) + r.get("exposed-offload-s", 0))

    for factor, row in partial_sync:
        for name, runs in row:
            sync, same = runs["sync"], runs.get("sync-same-layout", {"error": "none"})
            if "error" in sync:
                w(f"| /{factor} | {name} | no plan: {sync['error'][:120]} |" + " |" * 20)
                continue
            cells = [f"/{factor}", name, f"`{sync.get('plan', '?')}`",
                     fmt_s(sync["step-time-s"]), fmt_s(coll(sync))]
            cells += ([fmt_s(same["step-time-s"]), fmt_s(coll(same))] if "error" not in same
                      else [f"no plan: {same['error'][:80]}", ""])
            for h in SYNC_PERIODS:
                r = runs.get(f"compiled-{h}", {"error": "no partial plan"})
                if "error" in r:
                    cells += [f"no plan: {r['error'][:80]}", "", "", ""]
                    continue
                cells += [fmt_s(r["step-time-s"]), fmt_s(coll(r)),
                          (f"{same['step-time-s'] / r['step-time-s']:.3f}x"
                           if "error" not in same else ""),
                          f"{sync['step-time-s'] / r['step-time-s']:.3f}x"]
            w("| " + " | ".join(cells) + " |")
    w("")
    plans = {name: runs[SYNC_PERIODS[0]].get("plan", "?") for name, runs in partial_sync[0][1]} \
        if partial_sync else {}
    w("Partial plans (the planner's, H = 4; the compiled modules take their pp, ZeRO and "
      "offload): " + "; ".join(f"{name} `{plan}`" for name, plan in plans.items()) + ".")
    w("")
    w(PARTIAL_SYNC_CONCLUSION)
    w("")


def write_act_offload(w, act_offload):
    """Activation offload to host memory or storage, GriNNder (issue 15)."""
    w("## Activation offload (GriNNder)")
    w("")
    w("A stage may keep the full activations of its first k layers in the machine's offload "
      "tier between forward and backward instead of recomputing them (docs/schedule.md, "
      "\"Activation offload\"). Same requests as above (1024 clusters, global batch 1024, "
      "s = 4096, ratrain policy, 1F1B); **without** is the planner's best plan with "
      "`--act-offload none` (what every other section of this report plans), **with** the "
      "planner free to offload (`act-offload` in the plan: offloaded layers per stage). Two "
      "tiers: **host memory**, mt3000.yaml's 16 GB per cluster at 8 GB/s; **storage**, "
      "mt3000-storage.yaml's node-local NVMe, 2 TB per cluster at 2 GB/s (both assumptions, "
      "[U]). **compiled** is the offloading plan compiled (plan, expand, lifecycle, buffers) "
      "and simulated from the module, where the lifecycle pass placed every offload and "
      "reload. `exposed tier` is the time per step blocked on the offload tier.")
    w("")
    w("| tier | model | without: plan | step | with: plan | step | exposed tier | "
      "speedup | compiled step | compiled speedup |")
    w("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for label, _, row in act_offload:
        for name, runs in row:
            none, searched = runs["none"], runs[""]
            if "error" in none or "error" in searched:
                err = none.get("error") or searched.get("error")
                w(f"| {label} | {name} | no plan: {err[:120]} |" + " |" * 7)
                continue
            compiled = runs.get("compiled")
            cells = [label, name, f"`{none.get('plan', '?')}`", fmt_s(none["step-time-s"]),
                     f"`{searched.get('plan', '?')}`", fmt_s(searched["step-time-s"]),
                     fmt_s(searched.get("exposed-offload-s", 0)),
                     f"{none['step-time-s'] / searched['step-time-s']:.3f}x"]
            if compiled and "error" not in compiled:
                cells += [fmt_s(compiled["step-time-s"]),
                          f"{none['step-time-s'] / compiled['step-time-s']:.3f}x"]
            elif compiled:
                cells += [f"error: {compiled['error'][:80]}", ""]
            else:
                cells += ["(same plan)", ""]
            w("| " + " | ".join(cells) + " |")
    w("")
    w("**Where it wins.** The planner trades recompute for tier traffic where the tier holds "
      "the activations and its transfers hide under the layers' computes. The host tier is "
      "small: 16 GB per cluster holds the activations of a few layers of the large models, and "
      "the DDR window of offloaded activations (at most five full layers in DDR) competes with "
      "the model states. The storage tier holds them all: with it every layer of a pp = 1 "
      "plan keeps its activations and nothing is recomputed. **Where it does not.** Plans "
      "that recompute nothing gain nothing, and a stage whose offload stream is slower than its "
      "computes exposes the difference, which the planner weighs per stage.")
    w("")


def write_report(out, machine, comparison, speedups, sweep, network, scaling, scaling_rows,
                 timelines, compiled, schedules, schedule_timelines, clipping, transfers,
                 in_network, partial_sync, act_offload):
    m = machine
    lines = []
    w = lines.append
    w("# Evaluation: simulated paper-scale training on MT-3000")
    w("")
    w("Generated by `bench/evaluation/run.sh` (which runs `bench/evaluation/run.py`); do not edit by "
      "hand. Every number is a **simulation** (`ratrain-sim`, see [simulator.md](simulator.md)) of the "
      "plan the planner picks for each policy, on the machine file "
      "`examples/machines/mt3000.yaml`: no MT-3000 is available here. "
      f"Regenerated {datetime.date.today().isoformat()}.")
    w("")
    w("## Setup")
    w("")
    w(f"- Sequence length {SEQ_LEN} for every model; micro-batch size, pipeline depth, data "
      "parallelism, ZeRO stage and recompute chosen by the planner (`ratrain-plan`) per policy "
      "under the 20 GB usable DDR per cluster.")
    w(f"- Policy comparison: {CLUSTERS} clusters, global batch {GLOBAL_BATCH} sequences "
      f"({GLOBAL_BATCH * SEQ_LEN:,} tokens) per iteration; sweep over {', '.join(map(str, BATCH_SWEEP))} sequences.")
    w(f"- Scaling: LLaMA-2-7B, {SCALING_CLUSTERS[0]} to {SCALING_CLUSTERS[-1]} clusters, weak scaling "
      f"with {SEQUENCES_PER_CLUSTER} sequence per cluster per iteration; efficiency = (tokens/s per "
      f"cluster) / (tokens/s per cluster at {SCALING_CLUSTERS[0]}).")
    w(f"- Each run simulates {ITERATIONS} consecutive iterations; figures are steady state "
      "(iterations 2..N).")
    w("- Machine (every network number is an assumption [U] of the machine file; see its comments "
      "and `shared/reference/facts.md`):")
    w("")
    w("| quantity | value |")
    w("| --- | --- |")
    def g(key, unit="", scale=1.0, fmt="{:g}"):
        try:
            return fmt.format(float(m[key]) / scale) + unit
        except (KeyError, ValueError):
            return m.get(key, "?")
    w(f"| clusters per node (MT-3000 chip) | {m.get('clusters_per_node', '?')} |")
    w(f"| peak FP16 per cluster | {g('cluster.peak_flops_f16', ' TFLOP/s', 1e12)} |")
    w(f"| GEMM / attention fwd / bwd efficiency | {m.get('cluster.efficiency.gemm', '?')} / "
      f"{m.get('cluster.efficiency.attention_forward', '?')} / {m.get('cluster.efficiency.attention_backward', '?')} |")
    w(f"| usable DDR per cluster | {g('cluster.ddr_bytes', ' GB', 1e9)} |")
    w(f"| DDR bandwidth per cluster | {g('cluster.ddr_bandwidth', ' GB/s', 1e9)} |")
    if "network.levels.0.bandwidth" in m:
        # Network levels, innermost first.
        level = 0
        while f"network.levels.{level}.bandwidth" in m:
            k = f"network.levels.{level}"
            injection = (f", injection {g(k + '.injection_bandwidth', ' GB/s', 1e9)} per group"
                         if k + ".injection_bandwidth" in m else "")
            w(f"| network level {level} ({m.get(k + '.name', '?')}, {m.get(k + '.size', 'rest')}) | "
              f"{g(k + '.bandwidth', ' GB/s', 1e9)} per cluster, {g(k + '.latency', ' us', 1e-6)}"
              f"{injection} |")
            level += 1
    else:
        w(f"| intra-node link | {g('network.intra_node.bandwidth', ' GB/s', 1e9)}, "
          f"{g('network.intra_node.latency', ' us', 1e-6)} |")
        w(f"| inter-node link per cluster | {g('network.inter_node.bandwidth', ' GB/s', 1e9)}, "
          f"{g('network.inter_node.latency', ' us', 1e-6)} |")
        w(f"| node injection | {g('network.node_injection_bandwidth', ' GB/s', 1e9)} |")
    w(f"| gradient-sync algorithm | {m.get('network.collective', '?')} |")
    w("")

    w("## RATrain vs gpu-style policy")
    w("")
    w("`ratrain`: layer-level lifecycle (each layer's gradient sync issued when its last backward "
      "finishes, update and view cast as soon as it completes, ZeRO all-gathers awaited only by the "
      "layer's next forward). `gpu-style`: the same stages, but gradient sync, update, view cast "
      "and all-gather as whole-stage phases at the iteration boundary. Each policy gets the plan the "
      "planner ranks best for it.")
    w("")
    w("![throughput by policy](evaluation/policies.svg)")
    w("")
    w("| model | policy | plan | step | tokens/s | MFU | bubble (mean) | exposed comm (worst stage) | peak DDR | speedup |")
    w("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for (name, _, runs), speedup in zip(comparison, speedups):
        for policy in POLICIES:
            r = runs[policy]
            if "error" in r:
                w(f"| {name} | {policy} | no plan: {r['error'][:120]} | | | | | | | |")
                continue
            s = f"**{speedup:.3f}x**" if policy == "ratrain" and speedup else ""
            w(f"| {name} | {policy} | `{r.get('plan', '?')}` | {fmt_s(r['step-time-s'])} | "
              f"{fmt_tokens(r['tokens-per-s'])} | {r['mfu-percent']:.1f}% | "
              f"{r['bubble-mean-percent']:.1f}% | {exposed_breakdown(r)} | "
              f"{r['peak-ddr-max-gib']:.1f} GiB | {s} |")
    w("")
    w("**The lifecycle placement alone.** The same `ratrain` plan, its lifecycle placed "
      "`ratrain` vs `gpu-style` (`ratrain-sim --schedule-policy=gpu-style`); peak DDR is counted "
      "for each runtime's buffers, so a plan that only fits RATrain's layer-level buffers is "
      "flagged:")
    w("")
    w("| model | ratrain placement | gpu-style placement | speedup | exposed lifecycle comm (gpu-style placement) | peak DDR (gpu-style placement) |")
    w("| --- | --- | --- | --- | --- | --- |")
    placement_speedups = []
    for name, _, runs in comparison:
        a, b = runs["ratrain"], runs["placement-only"]
        if "tokens-per-s" not in a or "tokens-per-s" not in b:
            w(f"| {name} | | | no plan | | |")
            continue
        s = a["tokens-per-s"] / b["tokens-per-s"]
        placement_speedups.append(s)
        over = " (over the 20 GB cap)" if any("EXCEEDS-DDR" in d for d in b.get("stages_detail", [])) \
            or b.get("peak-ddr-max-gib", 0) * 2**30 > float(machine.get("cluster.ddr_bytes", "inf")) else ""
        w(f"| {name} | {fmt_tokens(a['tokens-per-s'])} tokens/s | {fmt_tokens(b['tokens-per-s'])} tokens/s | "
          f"{s:.3f}x | {exposed_breakdown(b)} | {b['peak-ddr-max-gib']:.1f} GiB{over} |")
    w("")
    w("**Through the compiler.** The same requests compiled to scheduled `ratrain` modules "
      "(`ratrain-translate --import-hf-config | ratrain-opt --ratrain-plan --ratrain-expand-1f1b "
      "--ratrain-schedule-lifecycle --ratrain-assign-buffers | ratrain-sim -`), durations from the "
      "same cost model, DDR from the assigned buffers; the difference to the plan-level program "
      "above is the compiler's own op order (recompute ahead of the gradient recv, lifecycle "
      "placed by the pass's cost-model walk):")
    w("")
    if not compiled:
        w("_Skipped: this build has no compiler (ratrain-translate / ratrain-opt, or ratrain-sim "
          "without the schedule adapter); configure with RATRAIN_ENABLE_COMPILER=ON._")
    else:
        w("| model | policy | scheduled module | step | tokens/s | vs plan-level program | peak DDR (assigned) | speedup |")
        w("| --- | --- | --- | --- | --- | --- | --- | --- |")
        for (name, runs), (_, _, planned) in zip(compiled, comparison):
            a, b = runs["ratrain"], runs["gpu-style"]
            s = (a["tokens-per-s"] / b["tokens-per-s"]
                 if "tokens-per-s" in a and "tokens-per-s" in b else None)
            for policy in POLICIES:
                r = runs[policy]
                if "error" in r:
                    w(f"| {name} | {policy} | failed: {r['error'][:150]} | | | | | |")
                    continue
                ref = planned[policy]
                diff = (f"{100 * (r['step-time-s'] - ref['step-time-s']) / ref['step-time-s']:+.1f}%"
                        if "step-time-s" in ref else "")
                cell = f"**{s:.3f}x**" if policy == "ratrain" and s else ""
                w(f"| {name} | {policy} | `{r.get('program', '?')}` | {fmt_s(r['step-time-s'])} | "
                  f"{fmt_tokens(r['tokens-per-s'])} | {diff} | {r['peak-ddr-max-gib']:.1f} GiB | {cell} |")
    w("")
    w(f"Speedup of `ratrain` over `gpu-style` (tokens/s, each with its own plan) by global batch, "
      f"{CLUSTERS} clusters:")
    w("")
    w("| model | " + " | ".join(f"{b} seq" for b in BATCH_SWEEP) + " |")
    w("| --- | " + " | ".join("---" for _ in BATCH_SWEEP) + " |")
    for name, row in sweep:
        cells = []
        for batch, runs in row:
            a, b = runs["ratrain"], runs["gpu-style"]
            if "tokens-per-s" in a and "tokens-per-s" in b:
                cells.append(f"{a['tokens-per-s'] / b['tokens-per-s']:.3f}x")
            else:
                cells.append("no plan")
        w(f"| {name} | " + " | ".join(cells) + " |")
    w("")
    w(f"Speedup by network speed (every bandwidth of the machine file divided by the factor), "
      f"{CLUSTERS} clusters, {GLOBAL_BATCH} sequences:")
    w("")
    w("| network | " + " | ".join(name for name, _ in MODELS) + " |")
    w("| --- | " + " | ".join("---" for _ in MODELS) + " |")
    for factor, row in network:
        cells = []
        for runs in row:
            a, b = runs["ratrain"], runs["gpu-style"]
            if "tokens-per-s" in a and "tokens-per-s" in b:
                cells.append(f"{a['tokens-per-s'] / b['tokens-per-s']:.3f}x "
                             f"({fmt_tokens(a['tokens-per-s'])} tokens/s)")
            else:
                cells.append("no plan")
        label = "as in mt3000.yaml" if factor == 1 else f"1/{factor}"
        w(f"| {label} | " + " | ".join(cells) + " |")
    w("")
    valid = [s for s in speedups if s]
    best = max(valid) if valid else 0
    best_model = comparison[speedups.index(best)][0] if valid else "?"
    placement_best = max(placement_speedups) if placement_speedups else 0
    relation = ("above" if best > PAPER_MAX_SPEEDUP * 1.02 else
                "below" if best < PAPER_MAX_SPEEDUP * 0.98 else "close to")
    w(f"**Against the paper.** The paper reports up to {PAPER_MAX_SPEEDUP}x end-to-end over "
      f"MT-3000-adapted GPU-style strategies. Our largest simulated speedup at {GLOBAL_BATCH} "
      f"sequences, each policy on its own best plan, is {best:.3f}x ({best_model}), {relation} "
      f"the paper's; the lifecycle placement alone gives at most {placement_best:.3f}x. Where the "
      "figures come from, and why they differ:")
    w("")
    w("- Most of the system speedup is memory: the `gpu-style` runtime modelled by the planner "
      "(`docs/planner.md`) keeps a whole-stage FP32 gradient buffer and an FP32 optimizer "
      "workspace, so under the 20 GB cap its best plans need deeper pipelines or more recompute "
      "(compare the plan columns), which cost bubble and compute. RATrain's layer-level lifecycle "
      "needs only 16-bit gradients and in-flight layers' buffers, so shallower, faster plans fit. "
      "How pessimistic that baseline is decides the headline number; a GPU-style runtime that "
      "reduced gradients in 16-bit would narrow it.")
    w("- The placement alone (same plan) hides the gradient sync behind the last backward sweep "
      "and the view re-materialization and all-gathers behind the other layers' lifecycle; at "
      "paper scale the step is dominated by the 1F1B forward/backward, so this is a few percent "
      "under the assumed network (see the exposed-communication columns), more with a slower one "
      "or a smaller batch per cluster (sweeps above).")
    w("- The planner ranks plans with closed forms; the simulator runs them event by event "
      "(`simulated-vs-planner-percent` is typically within 1-3%), so the simulated speedup of the "
      "planner's choices can differ slightly from the planner's predicted one.")
    w("- The network numbers of the MT-3000 system are not published; the machine file's values "
      "are assumptions, as are the FP16 peak and kernel efficiencies.")
    w("")

    write_schedules(w, schedules, schedule_timelines)
    write_clipping(w, clipping)
    write_transfers(w, transfers)
    write_in_network(w, in_network)
    write_partial_sync(w, partial_sync)
    write_act_offload(w, act_offload)

    w("## LLaMA-2-7B scaling, 8 to 1024 clusters")
    w("")
    if os.path.exists(os.path.join(out, "evaluation", "scaling.svg")):
        w("![LLaMA-2-7B scaling](evaluation/scaling.svg)")
        w("")
    for series, _ in SCALING_SERIES:
        w(f"**{series}**:")
        w("")
        w("| clusters | global batch | plan | step | tokens/s | tokens/s per cluster | MFU | scaling efficiency |")
        w("| --- | --- | --- | --- | --- | --- | --- | --- |")
        for (clusters, r), (_, t, eff) in zip(scaling[series], scaling_rows[series]):
            if "error" in r:
                w(f"| {clusters} | {clusters * SEQUENCES_PER_CLUSTER} | no plan: {r['error'][:120]} | | | | | |")
                continue
            w(f"| {clusters} | {clusters * SEQUENCES_PER_CLUSTER} | `{r.get('plan', '?')}` | "
              f"{fmt_s(r['step-time-s'])} | {fmt_tokens(t)} | {t / clusters:.1f} | "
              f"{r['mfu-percent']:.1f}% | {eff:.1f}% |")
        w("")
    rows = scaling_rows[SCALING_SERIES[0][0]]
    fixed = scaling_rows[SCALING_SERIES[-1][0]]
    if rows and rows[-1][1] > 0:
        t, eff = rows[-1][1], rows[-1][2]
        w(f"**Against the paper.** At 1024 clusters the paper measures {PAPER_7B_TOKENS:,.2f} "
          f"tokens/s and {PAPER_7B_EFFICIENCY}% scaling efficiency; we simulate {t:,.0f} tokens/s "
          f"({100 * (t - PAPER_7B_TOKENS) / PAPER_7B_TOKENS:+.1f}%) with the planner's choice "
          f"({eff:.1f}% efficiency against 8 clusters) and {fixed[-1][1]:,.0f} tokens/s "
          f"({fixed[-1][2]:.1f}%) without ZeRO. Why they differ:")
        w("")
        first_run = scaling[SCALING_SERIES[0][0]][0][1]
        last_run = scaling[SCALING_SERIES[0][0]][-1][1]
        w("- With the planner free, per-cluster throughput may grow with the cluster count (an "
          "efficiency above 100% is real in the model, not an artefact): ZeRO shards the "
          "optimizer states over more replicas, so larger configurations fit shallower pipelines "
          f"and less recompute in 20 GB (at {SCALING_CLUSTERS[0]} clusters the planner picks "
          f"`{first_run.get('plan', '?')}`, at {SCALING_CLUSTERS[-1]} `{last_run.get('plan', '?')}`). "
          "Without ZeRO the layout is pinned by memory at every size, and the efficiency measures "
          "what the paper's figure measures: what data-parallel synchronization costs as the "
          "cluster count grows; little of it is exposed, because the per-layer syncs hide behind "
          "the last backward sweep and the pipeline drain.")
        w("- The absolute figure rests on assumed numbers: FP16 peak (4x the published FP64 peak), "
          "the 0.7 GEMM and 0.6/0.5 attention efficiencies, the DDR bandwidth per cluster; the paper "
          "does not state its batch size or sequence length (we assume 4096 tokens and "
          f"{SEQUENCES_PER_CLUSTER} sequences per cluster per iteration). A real run's attained "
          "efficiencies would move it (`ratrain-sim --measured-step` reports the error against a "
          "measured step once one exists).")
        w("")

    w("## Timelines")
    w("")
    w("LLaMA-2-7B on 32 clusters (pp=4, dp=8, 64 sequences), two iterations; compute stream on top "
      "of each stage lane, network and DMA below, hatched where the stream waits on communication. "
      "Open the SVGs in a browser; `ratrain-sim ... --trace=FILE.json` writes the same run as a "
      "Chrome/Perfetto trace.")
    w("")
    for policy in POLICIES:
        r = timelines.get(policy, {})
        if "error" in r:
            w(f"- {policy}: {r['error']}")
            continue
        w(f"**{policy}** (step {fmt_s(r.get('step-time-s', 0))}, "
          f"{fmt_tokens(r.get('tokens-per-s', 0))} tokens/s, exposed: {exposed_breakdown(r)}):")
        w("")
        w(f"![{policy} timeline](evaluation/timeline-llama-2-7b-32-{policy}.svg)")
        w("")

    w("## Reproduce")
    w("")
    w("```")
    w("bench/evaluation/run.sh            # builds ratrain-sim if needed, regenerates this file")
    w("```")
    w("")
    w("One run by hand, e.g. the first row of the policy table:")
    w("")
    w("```")
    first = comparison[0][2]["ratrain"].get("command", "")
    w(first)
    w("```")
    with open(os.path.join(out, "evaluation.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {os.path.join(out, 'evaluation.md')}", file=sys.stderr)


if __name__ == "__main__":
    main()
