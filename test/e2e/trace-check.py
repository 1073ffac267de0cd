#!/usr/bin/env python3
"""trace-check.py TRACE STEPLOG SIMTRACE

Checks a runtime per-op trace (an emitted program's --trace FILE) against
the Chrome trace format Perfetto opens, the program's step log and the
simulator's trace of the same scheduled program:
  - schema: an object with a "traceEvents" array; metadata events name
    every process (with its "stage") and thread; complete events ("X")
    have a string name and category, numeric ts >= 0 and dur >= 0, integer
    pid and tid, and args.step; async events come in begin/end pairs with
    one id, the end not before the begin;
  - every kernel call of a traced step appears once: per rank and step, the
    number of kernel events equals the "kernel_calls" the step log counted
    for that rank (a counter beside the trace, not the trace's buffer), and
    every traced step of a rank runs the same kernel sequence;
  - every span lies inside its step, every kernel inside its step;
  - the spans of a rank's step are the simulator's compute tasks of the
    rank's stage in one iteration: the same names, each once.
Prints a summary; exits 1 with the first problem found.
"""
import collections
import json
import sys


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def main(trace_path, log_path, sim_path):
    with open(trace_path) as f:
        trace = json.load(f)
    if not isinstance(trace, dict) or not isinstance(trace.get("traceEvents"), list):
        fail("not an object with a traceEvents array")
    events = trace["traceEvents"]
    stage_of = {}
    threads = collections.defaultdict(set)
    complete = []
    open_async = {}
    for i, e in enumerate(events):
        if not isinstance(e, dict):
            fail(f"event {i} is not an object")
        ph, pid = e.get("ph"), e.get("pid")
        if ph not in ("M", "X", "b", "e"):
            fail(f"event {i}: phase {ph!r}")
        if not isinstance(pid, int) or not isinstance(e.get("name"), str):
            fail(f"event {i}: pid or name missing: {e}")
        if ph == "M":
            args = e.get("args", {})
            if e["name"] == "process_sort_index":
                continue
            if not isinstance(args.get("name"), str):
                fail(f"metadata event {i} without args.name: {e}")
            if e["name"] == "process_name":
                if not isinstance(args.get("stage"), int):
                    fail(f"process {pid} without its stage: {e}")
                stage_of[pid] = args["stage"]
            elif e["name"] == "thread_name":
                threads[pid].add(e.get("tid"))
            continue
        ts = e.get("ts")
        if not isinstance(ts, (int, float)) or ts < 0:
            fail(f"event {i}: ts {ts!r}")
        if not isinstance(e.get("cat"), str) or not isinstance(e.get("tid"), int):
            fail(f"event {i}: cat or tid missing: {e}")
        if e["tid"] not in threads[pid]:
            fail(f"event {i}: thread {e['tid']} of process {pid} is not named")
        if ph in ("b", "e"):
            key = (pid, e.get("id"))
            if ph == "b":
                if key in open_async:
                    fail(f"event {i}: async id {key} begins twice")
                open_async[key] = ts
            else:
                if key not in open_async:
                    fail(f"event {i}: async end without a begin: {e}")
                if ts < open_async.pop(key):
                    fail(f"event {i}: async end before its begin")
            continue
        dur = e.get("dur")
        if not isinstance(dur, (int, float)) or dur < 0:
            fail(f"event {i}: dur {dur!r}")
        if not isinstance(e.get("args", {}).get("step"), int):
            fail(f"event {i}: no args.step: {e}")
        complete.append(e)
    if open_async:
        fail(f"{len(open_async)} async operations begin without an end")
    for e in complete:
        if e["pid"] not in stage_of:
            fail(f"process {e['pid']} has events but no process_name")

    # Per rank and step: the step span, the spans and the kernels.
    steps = {}
    kernels = collections.defaultdict(list)
    spans = collections.defaultdict(list)
    for e in complete:
        key = (e["pid"], e["args"]["step"])
        if e["cat"] == "step":
            if key in steps:
                fail(f"rank {key[0]} has two spans of step {key[1]}")
            steps[key] = e
        elif e["cat"] == "kernel":
            kernels[key].append(e)
        elif e["tid"] == 0:
            spans[key].append(e)
    if not steps:
        fail("no traced step")
    eps = 0.01  # microseconds: the printed precision is 0.001
    for key, step in steps.items():
        lo, hi = step["ts"] - eps, step["ts"] + step["dur"] + eps
        for e in kernels[key] + spans[key]:
            if e["ts"] < lo or e["ts"] + e["dur"] > hi:
                fail(f"rank {key[0]} step {key[1]}: {e['name']} lies outside its step")

    # Kernel calls against the step log's count.
    calls = {}
    with open(log_path) as f:
        for line in f:
            record = json.loads(line)
            if "kernel_calls" in record:
                for rank, n in enumerate(record["kernel_calls"]):
                    calls[(rank, record["step"])] = n
    sequences = {}
    for key in steps:
        if key not in calls:
            fail(f"the step log has no kernel_calls for rank {key[0]} step {key[1]}")
        names = [e["name"] for e in sorted(kernels[key], key=lambda e: e["ts"])]
        if len(names) != calls[key]:
            fail(f"rank {key[0]} step {key[1]}: {len(names)} kernel events, "
                 f"{calls[key]} kernel calls")
        if key[0] in sequences and sequences[key[0]] != names:
            fail(f"rank {key[0]}: step {key[1]} runs another kernel sequence")
        sequences[key[0]] = names

    # Spans against the simulator's compute tasks of one iteration.
    with open(sim_path) as f:
        sim = json.load(f)["traceEvents"]
    iteration = min(e["args"]["iteration"] for e in sim if e["ph"] == "X")
    expected = collections.defaultdict(collections.Counter)
    for e in sim:
        if (e["ph"] == "X" and e["tid"] == 0 and e["args"]["iteration"] == iteration
                and e["cat"] in ("forward", "backward", "recompute", "update", "other")):
            expected[e["pid"]][e["name"]] += 1
    for key in steps:
        got = collections.Counter(e["name"] for e in spans[key])
        want = expected[stage_of[key[0]]]
        if got != want:
            fail(f"rank {key[0]} step {key[1]}: spans {sorted((got - want).elements())} "
                 f"not simulated, {sorted((want - got).elements())} simulated but missing")
    ranks = sorted({k[0] for k in steps})
    traced = sorted({k[1] for k in steps})
    print(f"PASS: {len(complete)} events; ranks {ranks}, steps {traced}; "
          f"kernel calls per step {[calls[(r, traced[0])] for r in ranks]}; "
          f"spans per step {[len(spans[(r, traced[0])]) for r in ranks]}, "
          f"each a simulated compute task")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print(__doc__)
        sys.exit(2)
    main(*sys.argv[1:])
