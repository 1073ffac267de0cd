#!/usr/bin/env python3
"""Summarizes training-benchmark runs of the emitted tiny LLaMA programs.

report.py WARMUP NAME:RANKS:STEPS.jsonl:SIM.txt ...

For each run: tokens/s over the measured steps (those after WARMUP), the mean
step time, and per rank the split of its step into kernels, blocking waits
and the rest ("other": runtime and helper overhead) from the step log's
kernel_s / wait_s / other_s / rank_step_s, plus the simulator's predicted
step time and its error (ratrain-sim --measured-log, SIM.txt). Then checks
the target "time outside kernels < 10% of the step": on the single-rank run
everything outside kernels is overhead; on multi-rank runs the waits hold the
pipeline bubble and the collectives, so the target is checked on "other" and
the waits are reported beside it. Exits 1 when a run's log is unusable.
"""
import json
import statistics
import sys

TARGET_PERCENT = 10.0


def fail(message):
    print(f"error: {message}", file=sys.stderr)
    sys.exit(1)


def load_steps(path, warmup):
    steps = []
    try:
        with open(path) as f:
            for number, line in enumerate(f, 1):
                line = line.strip()
                if not line:
                    continue
                try:
                    steps.append(json.loads(line))
                except json.JSONDecodeError as e:
                    fail(f"{path}:{number}: not JSON: {e}")
    except OSError as e:
        fail(f"{path}: {e.strerror}")
    measured = [s for s in steps if s.get("step", 0) > warmup]
    if not measured:
        fail(f"{path}: no steps after the {warmup} warm-up steps")
    for s in measured:
        for key in ("step_s", "tokens", "elapsed_s", "rank_step_s",
                    "kernel_s", "wait_s", "other_s"):
            if key not in s:
                fail(f"{path}: step {s.get('step')} has no \"{key}\" (a "
                     "program built before the runtime measured it?)")
    return steps, measured


def load_sim(path):
    values = {}
    try:
        with open(path) as f:
            for line in f:
                key, _, value = line.partition(":")
                values[key.strip()] = value.strip()
    except OSError as e:
        fail(f"{path}: {e.strerror}")
    for key in ("step-time-s", "measured-step-s", "error-percent"):
        if key not in values:
            fail(f"{path}: ratrain-sim printed no \"{key}\"")
    return values


def summarize(name, ranks, log, sim_path, warmup):
    steps, measured = load_steps(log, warmup)
    step_s = [s["step_s"] for s in measured]
    tokens = measured[0]["tokens"]
    mean_step = statistics.mean(step_s)
    # Wall time per step, logging and step boundaries included: the elapsed
    # time from the last warm-up step's end to the last step's end.
    before = [s for s in steps if s.get("step", 0) == warmup]
    wall = None
    if before:
        wall = (measured[-1]["elapsed_s"] - before[0]["elapsed_s"]) / len(measured)
    sim = load_sim(sim_path)
    result = {"name": name, "ranks": ranks, "steps": len(measured),
              "tokens": tokens, "mean_step": mean_step,
              "median_step": statistics.median(step_s),
              "tokens_per_s": tokens / mean_step, "wall_step": wall,
              "sim_step": float(sim["step-time-s"]),
              "sim_measured": float(sim["measured-step-s"]),
              "sim_error": float(sim["error-percent"]), "rank": []}
    for r in range(ranks):
        def mean(key):
            return statistics.mean(s[key][r] for s in measured)
        own = mean("rank_step_s")
        result["rank"].append({
            # Progress passes between kernels (assist_s, when logged) are
            # communication time like the waits.
            "step": own, "kernel": mean("kernel_s"),
            "wait": mean("wait_s") + (mean("assist_s")
                                      if "assist_s" in measured[0] else 0.0),
            "other": mean("other_s"),
            # The rank was done while the step (rank 0's) went on: the
            # pipeline's drain, seen from a later stage.
            "idle_after": max(0.0, mean_step - own) if r else 0.0})
    return result


def percent(part, whole):
    return 100.0 * part / whole if whole > 0 else 0.0


def main():
    if len(sys.argv) < 3:
        fail("usage: report.py WARMUP NAME:RANKS:STEPS.jsonl:SIM.txt ...")
    warmup = int(sys.argv[1])
    results = []
    for spec in sys.argv[2:]:
        parts = spec.split(":")
        if len(parts) != 4:
            fail(f"'{spec}' is not NAME:RANKS:STEPS.jsonl:SIM.txt")
        results.append(summarize(parts[0], int(parts[1]), parts[2], parts[3],
                                 warmup))
    print(f"{'run':<12} {'ranks':>5} {'steps':>5} {'tokens/s':>9} "
          f"{'step ms':>8} {'wall ms':>8} {'sim ms':>7} {'sim err':>8}")
    for r in results:
        wall = f"{1e3 * r['wall_step']:8.1f}" if r["wall_step"] else f"{'-':>8}"
        print(f"{r['name']:<12} {r['ranks']:>5} {r['steps']:>5} "
              f"{r['tokens_per_s']:9.0f} {1e3 * r['mean_step']:8.1f} {wall} "
              f"{1e3 * r['sim_step']:7.1f} {r['sim_error']:+7.1f}%")
    print()
    print("step split per rank, percent of the rank's own step time "
          "(means over the measured steps)")
    print(f"{'run':<12} {'rank':>4} {'step ms':>8} {'kernels':>8} "
          f"{'waits':>8} {'other':>8} {'idle after':>10}")
    for r in results:
        for i, t in enumerate(r["rank"]):
            print(f"{r['name']:<12} {i:>4} {1e3 * t['step']:8.1f} "
                  f"{percent(t['kernel'], t['step']):7.1f}% "
                  f"{percent(t['wait'], t['step']):7.1f}% "
                  f"{percent(t['other'], t['step']):7.1f}% "
                  f"{1e3 * t['idle_after']:8.1f}ms")
    print()
    print(f"target: time outside kernels < {TARGET_PERCENT:.0f}% of the step")
    for r in results:
        if r["ranks"] == 1:
            t = r["rank"][0]
            outside = percent(t["wait"] + t["other"], t["step"])
            verdict = "met" if outside < TARGET_PERCENT else "NOT met"
            print(f"  {r['name']}: outside kernels {outside:.1f}% "
                  f"(waits {percent(t['wait'], t['step']):.1f}%, other "
                  f"{percent(t['other'], t['step']):.1f}%): {verdict}")
        else:
            other = max(percent(t["other"], t["step"]) for t in r["rank"])
            waits = ", ".join(f"rank {i} {percent(t['wait'], t['step']):.1f}%"
                              for i, t in enumerate(r["rank"]))
            outside = max(percent(t["wait"] + t["other"], t["step"])
                          for t in r["rank"])
            verdict = "met" if other < TARGET_PERCENT else "NOT met"
            print(f"  {r['name']}: other (runtime overhead) at most "
                  f"{other:.1f}%: {verdict}; waits (communication and the "
                  f"pipeline bubble) {waits}; outside kernels at most "
                  f"{outside:.1f}%")


if __name__ == "__main__":
    main()
