#!/usr/bin/env python3
"""trace-spans.py MT3K.mlir SIM-TRACE.json

Checks the per-op trace spans the lowering marks (mt3k.trace_begin /
trace_end) against the simulator's trace of the same scheduled module: per
stage program, the spans' labels are the simulator's compute task names of
that stage in one iteration (each once), and each span's phase is the task's
category. Prints one line per stage; exits 1 on the first mismatch.
"""
import collections
import json
import re
import sys

mlir, sim_path = sys.argv[1], sys.argv[2]
spans = collections.defaultdict(collections.Counter)
stage = None
for line in open(mlir):
    m = re.match(r"\s*mt3k\.program @\w+ stage (\d+)", line)
    if m:
        stage = int(m.group(1))
    m = re.match(r'\s*mt3k\.trace_begin "([^"]*)" (\w+)', line)
    if m:
        spans[stage][(m.group(1), m.group(2).replace("_", "-"))] += 1

sim = json.load(open(sim_path))["traceEvents"]
iteration = min(e["args"]["iteration"] for e in sim if e["ph"] == "X")
tasks = collections.defaultdict(collections.Counter)
for e in sim:
    if (e["ph"] == "X" and e["tid"] == 0 and e["args"]["iteration"] == iteration
            and e["cat"] in ("forward", "backward", "recompute", "update", "other")):
        tasks[e["pid"]][(e["name"], e["cat"])] += 1

for s in sorted(set(spans) | set(tasks)):
    if spans[s] != tasks[s]:
        print(f"stage {s}: spans not simulated: {sorted((spans[s] - tasks[s]).elements())}; "
              f"simulated without a span: {sorted((tasks[s] - spans[s]).elements())}")
        sys.exit(1)
    kinds = collections.Counter()
    for (name, phase), n in spans[s].items():
        kinds[phase] += n
    print(f"stage {s}: {sum(spans[s].values())} spans = simulated tasks; "
          + ", ".join(f"{k} {kinds[k]}" for k in sorted(kinds)))
