#!/usr/bin/env python3
"""A reference interpreter of lowered mt3k programs, for a gradient check.

Runs every program of an mt3k module (one per pipeline stage, dp replicas
of each) for one training step, with the kernels implemented in plain
Python (float64), pipeline messages delivered between the programs of a
replica, collectives combined across the replicas of a stage, and the data
loader replaced by pseudo-random token ids (different per replica). It
records the loss the programs report and the gradient each `mt3k.adamw`
receives (this rank's shard under ZeRO-1), then checks that gradient
against central finite differences of the reported loss (the mean over
micro-batches and replicas), for a sample of elements of every parameter
tensor, and checks the parameter view after the step against one AdamW
step from the initial value with that gradient. A wrong operand, transpose,
missing accumulation, pipeline or shard wiring in the lowering makes them
disagree.

Usage: mt3k-gradcheck.py MODULE.mlir [--drop-normhead-jacobian]  (prints
one line per checked element and 'gradcheck: N elements OK'; exits 1 on a
mismatch). --drop-normhead-jacobian runs the NormHead Jacobian (the
rmsnorm_bwd that writes into the buffer "scratch.normhead") as the identity,
so the LM head's weight receives the gradient of its normalized copy: a
lowering without the Jacobian, which the check must reject.
"""

import functools
import math
import operator
import random
import re
import sys

DROP_NORMHEAD_JACOBIAN = False

SIZES = {"f32": 4, "f16": 2, "bf16": 2, "i32": 4, "i64": 8, "i8": 1}


@functools.lru_cache(maxsize=None)
def parse_type(text):
    """'!mt3k.buffer<ddr, 4x8xf32>' -> (space, shape, dtype)."""
    m = re.match(r"!mt3k\.buffer<(\w+), (.*)>", text.strip())
    space, rest = m.group(1), m.group(2)
    parts = rest.split("x")
    return space, tuple(int(p) for p in parts[:-1]), parts[-1]


def parse_rope_scaling(text):
    """'method = llama3, factor = 8.0, ...' -> dict of the fields."""
    fields = {}
    for part in text.split(","):
        key, value = (x.strip() for x in part.split("="))
        fields[key] = value if key == "method" else float(value)
    return fields


def rope_inv_freq(i, D, theta, scaling):
    """transformers' default, linear and llama3 rope inverse frequencies."""
    inv_freq = 1.0 / (theta ** (2.0 * i / D))
    if scaling is None:
        return inv_freq
    factor = scaling["factor"]
    if scaling["method"] == "linear":
        return inv_freq / factor
    low, high = scaling["low_freq_factor"], scaling["high_freq_factor"]
    old_context = scaling["original_max_positions"]
    wavelen = 2 * math.pi / inv_freq
    if wavelen > old_context / low:
        return inv_freq / factor
    if wavelen < old_context / high:
        return inv_freq
    smooth = (old_context / wavelen - low) / (high - low)
    return (1 - smooth) * inv_freq / factor + smooth * inv_freq


class Ref:
    """A typed reference to memory: space, absolute byte offset, shape."""

    def __init__(self, space, offset, shape, dtype, name=""):
        self.space, self.offset, self.shape, self.dtype = space, offset, shape, dtype
        self.name = name  # of the mt3k.buffer it is (a view of)

    def numel(self):
        n = 1
        for d in self.shape:
            n *= d
        return n

    def offsets(self):
        """The byte offset of each element, in order."""
        step = SIZES[self.dtype]
        return range(self.offset, self.offset + self.numel() * step, step)


class Machine:
    """Memory of one rank: space -> {byte offset -> element value}."""

    def __init__(self):
        self.mem = {}

    def read(self, ref):
        get = self.mem.setdefault(ref.space, {}).get
        return [get(offset, 0.0) for offset in ref.offsets()]

    def write(self, ref, values):
        assert len(values) == ref.numel()
        self.mem.setdefault(ref.space, {}).update(zip(ref.offsets(), values))


@functools.lru_cache(maxsize=None)
def init_value(param, index, kind, std):
    """The initial value of element `index` of a parameter (the same in
    every run: each finite-difference run adds its perturbation after)."""
    if kind == "zeros":
        return 0.0
    if kind == "ones":
        return 1.0
    rng = random.Random(f"{param}:{index}")
    return rng.gauss(0.0, std)


def token_ids(field, mb, count, vocab):
    rng = random.Random(f"{field}:{mb}")
    return [rng.randrange(vocab) for _ in range(count)]


OPERAND = r"%[\w#]+"


# Every run of a program matches the same lines against the same patterns:
# the matches are kept (a finite-difference check runs the module hundreds
# of times).
@functools.lru_cache(maxsize=None)
def match(pattern, line):
    return re.match(pattern, line)


@functools.lru_cache(maxsize=None)
def search(pattern, line):
    return re.search(pattern, line)


class Program:
    def __init__(self, stage, lines):
        self.stage = stage
        self.lines = lines


def parse_module(text):
    """The programs of a module, with every call of an outlined layer body
    (`func.func` shared by layers and micro-batches) replaced by the body's
    lines, its arguments renamed to the call's operands and its own values to
    names unique to the call."""
    programs, functions = [], {}
    current = None  # the lines being collected: a program's or a function's
    for line in text.splitlines():
        m = re.match(r"  mt3k\.program @\w+ stage (\d+)", line)
        if m:
            program = Program(int(m.group(1)), [])
            programs.append(program)
            current = program.lines
            continue
        m = re.match(r"  func\.func private @(\w+)\((.*)\)", line)
        if m:
            current = []
            functions[m.group(1)] = (re.findall(r"(%[\w#]+):", m.group(2)), current)
            continue
        if line.startswith("  }"):
            current = None
            continue
        stripped = line.strip()
        if current is not None and stripped and not stripped.startswith("return"):
            current.append(stripped)
    calls = 0
    for program in programs:
        lines = []
        for line in program.lines:
            m = re.match(r"(?:func\.)?call @(\w+)\(([^)]*)\)", line)
            if not m:
                lines.append(line)
                continue
            calls += 1
            params, body = functions[m.group(1)]
            mapping = dict(zip(params, split_operands(m.group(2))))
            rename = lambda v: mapping.get(v.group(0), f"{v.group(0)}_call{calls}")
            lines.extend(re.sub(OPERAND, rename, body_line) for body_line in body)
        program.lines = lines
    vocab = int(re.search(r"vocab = (\d+)", text).group(1))
    return programs, vocab


@functools.lru_cache(maxsize=None)
def split_operands(text):
    return tuple(re.findall(OPERAND, text))


class Runner:
    """Runs all programs of a module for one step."""

    def __init__(self, programs, vocab, dp, perturb=None, std_override=0.5):
        self.programs = programs
        self.vocab = vocab
        self.dp = dp
        self.perturb = perturb
        self.std = std_override
        self.ranks = [(p.stage, r) for p in programs for r in range(dp)]
        self.machines = {rank: Machine() for rank in self.ranks}
        self.refs = {rank: {} for rank in self.ranks}
        self.mailbox = {}
        self.arrived = {}  # one-sided puts landed and not yet waited for
        self.collectives = {}  # (stage, index) -> {replica: contribution}
        self.done = {}  # (stage, index) -> results per replica
        self.issued = {rank: 0 for rank in self.ranks}
        self.losses = {}
        self.grads = {}  # (rank, master offset) -> gradient values
        self.params = {}  # name -> (stage, Ref) of the fp32 view
        self.shards = {}  # (rank, master offset) -> (shard size, tensors)
        # ZeRO-3 (FP32): the view is the master shard; name -> (stage, numel)
        # of each tensor, and (rank, offset) -> its Ref for the view check.
        self.zero3_params = {}
        self.shard_refs = {}
        self.adam = {}  # the hyper-parameters of the adamw ops
        self.tier = {}  # (rank, tier, key) -> offloaded bytes (mt3k.offload)
        # Gradient clipping: the all-reduces over @world in flight, and the
        # squared global norm and max_grad_norm each rank's adamw read.
        self.world = {}  # index -> {rank: contribution}
        self.world_done = {}  # index -> {rank: result}
        self.world_issued = {rank: 0 for rank in self.ranks}
        self.clip = {}  # rank -> (squared norm, max_grad_norm)

    # Kernels ---------------------------------------------------------------

    def run_op(self, rank, line):
        stage, replica = rank
        mach, refs = self.machines[rank], self.refs[rank]
        R = lambda name: refs[name]

        m = match(r"(%\w+) = mt3k\.buffer \"[^\"]*\" at (\d+) : (.*)$", line)
        if m:
            space, shape, dtype = parse_type(m.group(3))
            name = match(r"(%\w+) = mt3k\.buffer \"([^\"]*)\"", line).group(2)
            refs[m.group(1)] = Ref(space, int(m.group(2)), shape, dtype, name)
            return True
        m = match(r"(%\w+) = mt3k\.view (%\w+)\[(\d+)\] : .* to (.*)$", line)
        if m:
            src = R(m.group(2))
            space, shape, dtype = parse_type(m.group(4))
            refs[m.group(1)] = Ref(space, src.offset + int(m.group(3)), shape, dtype,
                                   src.name)
            return True
        m = match(r"(%\w+) = mt3k\.group_slot (%\w+) on @dp : .* to (.*)$", line)
        if m:
            # This replica's block of the source (ZeRO: its shard of a view).
            src = R(m.group(2))
            space, shape, dtype = parse_type(m.group(3))
            slot = Ref(space, 0, shape, dtype, src.name)
            slot.offset = src.offset + replica * slot.numel() * SIZES[dtype]
            refs[m.group(1)] = slot
            return True
        m = match(r"mt3k\.init_param (\w+) (%\w+) \"([^\"]+)\"(?: std (\S+))?", line)
        if m:
            kind, ref, name = m.group(1), R(m.group(2)), m.group(3)
            std = self.std if m.group(4) else 0.0
            shard = search(r"\bdp_shard = (\d+)", line)
            pieces = search(r"\bdp_shard_tensors = \[(.*?)\]", line)
            if pieces:
                # A ZeRO-1 master shard: element i is element r * n + i of
                # the layer, valued as the tensor piece that holds it.
                n = int(shard.group(1))
                tensors = []
                for piece in re.findall(r'"([^"]+)"', pieces.group(1)):
                    tname, off, numel, tkind = piece.rsplit(":", 3)
                    tensors.append((tname, int(off), int(numel), tkind))
                values = []
                for i in range(ref.numel()):
                    g = replica * n + i
                    tname, off, numel, tkind = next(
                        t for t in tensors if t[1] <= g < t[1] + t[2])
                    v = init_value(tname, g - off, tkind, self.std)
                    if self.perturb and self.perturb[0] == tname and self.perturb[1] == g - off:
                        v += self.perturb[2]
                    values.append(v)
                mach.write(ref, values)
                self.shards[(rank, ref.offset)] = (n, tensors)
                self.shard_refs[(rank, ref.offset)] = ref
                if ref.name.endswith(".view") and ref.dtype == "f32":
                    for tname, off, numel, tkind in tensors:
                        self.zero3_params[tname] = (stage, numel)
                return True
            values = [init_value(name, i, kind, std) for i in range(ref.numel())]
            if shard:  # zeros of a ZeRO-1 m / v shard
                mach.write(ref, values)
                return True
            if self.perturb and self.perturb[0] == name and not name.endswith(
                    (".exp_avg", ".exp_avg_sq")):
                values[self.perturb[1]] += self.perturb[2]
            mach.write(ref, values)
            if not name.endswith((".exp_avg", ".exp_avg_sq")) and ref.dtype == "f32":
                self.params[name] = (stage, ref)
            return True
        m = match(r"mt3k\.load_batch (\w+) (%\w+) micro_batch (\d+)", line)
        if m:
            ref = R(m.group(2))
            mach.write(ref, token_ids(f"{m.group(1)}:{replica}", int(m.group(3)),
                                      ref.numel(), self.vocab))
            return True
        m = match(r"mt3k\.report_loss (%\w+) micro_batch (\d+)", line)
        if m:
            self.losses[(rank, int(m.group(2)))] = mach.read(R(m.group(1)))[0]
            return True
        m = match(r"mt3k\.fill (%\w+), (\S+) :", line)
        if m:
            ref = R(m.group(1))
            mach.write(ref, [float(m.group(2))] * ref.numel())
            return True
        m = match(r"mt3k\.sum_squares (%\w+) -> (%\w+) weight (\S+) :", line)
        if m:
            acc = R(m.group(2))
            total = mach.read(acc)[0] + float(m.group(3)) * sum(
                x * x for x in mach.read(R(m.group(1))))
            mach.write(acc, [total])
            return True
        m = match(r"%\w+ = mt3k\.all_reduce sum (%\w+) -> (%\w+) on @world", line)
        if m:
            return self.world_sum(rank, R(m.group(1)), R(m.group(2)))
        m = match(r"mt3k\.gemm (%\w+), (%\w+) -> (%\w+)(.*?) :", line)
        if m:
            self.gemm(mach, R(m.group(1)), R(m.group(2)), R(m.group(3)), m.group(4))
            return True
        m = match(r"mt3k\.rmsnorm_fwd (%\w+), (%\w+) -> (%\w+), (%\w+) eps (\S+)", line)
        if m:
            self.rmsnorm_fwd(mach, *[R(m.group(i)) for i in range(1, 5)], float(m.group(5)))
            return True
        m = match(r"mt3k\.rmsnorm_bwd (%\w+), (%\w+), (%\w+), (%\w+) -> (%\w+), (%\w+)( accumulate)?", line)
        if m:
            self.rmsnorm_bwd(mach, *[R(m.group(i)) for i in range(1, 7)], bool(m.group(7)))
            return True
        m = match(r"mt3k\.attention_fwd (%\w+), (%\w+), (%\w+) -> (%\w+), (%\w+) causal( alibi)?(?: window (\d+))? scale (\S+)", line)
        if m:
            self.attention_fwd(mach, *[R(m.group(i)) for i in range(1, 6)], float(m.group(8)),
                               bool(m.group(6)), int(m.group(7) or 0))
            return True
        m = match(r"mt3k\.attention_bwd (%\w+), (%\w+), (%\w+), (%\w+), (%\w+), (%\w+) -> (%\w+), (%\w+), (%\w+) causal( alibi)?(?: window (\d+))? scale (\S+)", line)
        if m:
            self.attention_bwd(mach, *[R(m.group(i)) for i in range(1, 10)], float(m.group(12)),
                               bool(m.group(10)), int(m.group(11) or 0))
            return True
        m = match(r"mt3k\.elementwise (\w+) ins\((.*?) :.*?\) outs\((.*?) :.*?\)(?: theta (\S+))?"
                  r"(?: rope_scaling #mt3k\.rope_scaling<(.*?)>)?(?: scale (\S+))?$", line)
        if m:
            ins = [R(n) for n in split_operands(m.group(2))]
            outs = [R(n) for n in split_operands(m.group(3))]
            self.rope_scaling = parse_rope_scaling(m.group(5)) if m.group(5) else None
            self.elementwise(mach, m.group(1), ins, outs,
                             float(m.group(4)) if m.group(4) else None,
                             float(m.group(6)) if m.group(6) else None)
            return True
        # (With `plus %own : type over N` the gradient arrives in two parts,
        # a reduce-scatter with leave_own's: the others' sum and the own one.)
        m = match(r"mt3k\.adamw (%\w+)(?: plus (%\w+) : !mt3k\.buffer<[^>]*> over (\d+))?, "
                  r"(%\w+), (%\w+), (%\w+) -> (%\w+) lr (\S+) beta1 (\S+) "
                  r"beta2 (\S+) eps (\S+) weight_decay (\S+)", line)
        if m:
            grad, master, mm, vv, view = (R(m.group(i)) for i in (1, 4, 5, 6, 7))
            lr, b1, b2, eps, wd = (float(m.group(i)) for i in range(8, 13))
            self.adam = dict(lr=lr, b1=b1, b2=b2, eps=eps, wd=wd)
            g, p, m1, v1 = (mach.read(r) for r in (grad, master, mm, vv))
            if m.group(2):
                own, members = mach.read(R(m.group(2))), int(m.group(3))
                g = [(a + b) / members for a, b in zip(g, own)]
            self.grads[(rank, master.offset)] = g
            clip = search(r" clip\((%\w+) : [^)]*\) max_grad_norm (\S+)", line)
            if clip:
                # PyTorch's clip_grad_norm_: the gradient times
                # min(1, max_norm / (norm + 1e-6)).
                squared, max_norm = mach.read(R(clip.group(1)))[0], float(clip.group(2))
                self.clip[rank] = (squared, max_norm)
                factor = min(1.0, max_norm / (math.sqrt(squared) + 1e-6))
                g = [x * factor for x in g]
            m1 = [b1 * a + (1 - b1) * x for a, x in zip(m1, g)]
            v1 = [b2 * a + (1 - b2) * x * x for a, x in zip(v1, g)]
            # The elements without weight decay: layer elements
            # first (+ replica * shard) + i inside a no_decay range.
            decay = [wd] * len(p)
            nd = search(r" no_decay \[([^\]]*)\] first_element (\d+)(?: shard_elements (\d+))?", line)
            if nd:
                bounds = [int(x) for x in nd.group(1).split(",")]
                base = int(nd.group(2)) + (replica * int(nd.group(3)) if nd.group(3) else 0)
                for i in range(len(p)):
                    if any(b <= base + i < e for b, e in zip(bounds[::2], bounds[1::2])):
                        decay[i] = 0.0
            # Step 1: bias corrections 1 - beta^1.
            p = [w - lr * ((a / (1 - b1)) / (math.sqrt(c / (1 - b2)) + eps) + d * w)
                 for w, a, c, d in zip(p, m1, v1, decay)]
            mach.write(master, p)
            mach.write(mm, m1)
            mach.write(vv, v1)
            mach.write(view, p)
            return True
        m = match(r"%\w+ = mt3k\.(all_reduce \w+|reduce_scatter \w+|all_gather) (%\w+) -> (%\w+) on @dp", line)
        if m:
            return self.collective(rank, m.group(1).split()[0], R(m.group(2)), R(m.group(3)),
                                   leave_own=" leave_own" in line)
        m = match(r"%\w+ = mt3k\.dma (%\w+) -> (%\w+)", line)
        if m:
            mach.write(R(m.group(2)), mach.read(R(m.group(1))))
            return True
        m = match(r"%\w+ = mt3k\.send (%\w+) to (\d+) on @pp tag (\d+)(?: put at (\d+))?", line)
        if m:
            key = (stage, int(m.group(2)), int(m.group(3)), replica)
            if m.group(4):
                # One-sided: the data lands in the peer's arena now, whatever
                # the peer is doing (the scheduler runs each rank as far as it
                # can, so puts land as early as they can).
                src = R(m.group(1))
                dst = Ref("ddr", int(m.group(4)), src.shape, src.dtype)
                self.machines[(int(m.group(2)), replica)].write(dst, mach.read(src))
                self.arrived[key] = self.arrived.get(key, 0) + 1
                return True
            self.mailbox[key] = mach.read(R(m.group(1)))
            return True
        m = match(r"%\w+ = mt3k\.recv (%\w+) from (\d+) on @pp tag (\d+)( one_sided)?", line)
        if m:
            key = (int(m.group(2)), stage, int(m.group(3)), replica)
            if m.group(4):
                if not self.arrived.get(key):
                    return False  # blocked until the put has landed
                self.arrived[key] -= 1
                return True
            if key not in self.mailbox:
                return False  # blocked until the sender gets there
            mach.write(R(m.group(1)), self.mailbox.pop(key))
            return True
        m = match(r"%\w+ = mt3k\.(offload|reload) (%\w+) (?:to|from) (\w+) \"([^\"]+)\"", line)
        if m:
            # The offload tier: one copy per rank, tier and key (taken at once;
            # the element values at their byte addresses in the buffer).
            ref, key = R(m.group(2)), (rank, m.group(3), m.group(4))
            if m.group(1) == "offload":
                self.tier[key] = mach.read(ref)
            else:
                mach.write(ref, self.tier[key])
            return True
        if line.startswith(("mt3k.wait", "mt3k.trace_begin", "mt3k.trace_end")):
            return True
        raise RuntimeError(f"stage {stage}: cannot interpret: {line}")

    def collective(self, rank, kind, src, dst, leave_own=False):
        """Blocks until every replica of the stage has contributed. A
        reduce-scatter with `leave_own` gives each replica the sum of the
        others' contributions to its block (the update adds its own)."""
        stage, replica = rank
        key = (stage, self.issued[rank])
        if key in self.done:
            if replica in self.done[key]:
                self.machines[rank].write(dst, self.done[key].pop(replica))
                self.issued[rank] += 1
                return True
            return False
        parts = self.collectives.setdefault(key, {})
        parts[replica] = self.machines[rank].read(src)
        if len(parts) < self.dp:
            return False  # blocked; a retry re-records the same contribution
        data = [parts[r] for r in range(self.dp)]
        if kind == "all_gather":
            whole = [x for part in data for x in part]
            results = {r: whole for r in range(self.dp)}
        else:
            mean = [sum(col) / self.dp for col in zip(*data)]
            if kind == "all_reduce":
                results = {r: mean for r in range(self.dp)}
            elif leave_own:
                n = len(mean) // self.dp
                results = {r: [sum(col) for col in zip(*(data[s][r * n:(r + 1) * n]
                                                         for s in range(self.dp) if s != r))]
                           for r in range(self.dp)}
            else:
                n = len(mean) // self.dp
                results = {r: mean[r * n:(r + 1) * n] for r in range(self.dp)}
        self.done[key] = results
        del self.collectives[key]
        self.machines[rank].write(dst, results.pop(replica))
        self.issued[rank] += 1
        return True

    def world_sum(self, rank, src, dst):
        """An all-reduce (sum) over every rank of the job: blocks until all
        have contributed."""
        index = self.world_issued[rank]
        if index in self.world_done:
            results = self.world_done[index]
            if rank not in results:
                return False
            self.machines[rank].write(dst, results.pop(rank))
            self.world_issued[rank] += 1
            return True
        parts = self.world.setdefault(index, {})
        parts[rank] = self.machines[rank].read(src)
        if len(parts) < len(self.ranks):
            return False
        total = [sum(col) for col in zip(*parts.values())]
        self.world_done[index] = {r: list(total) for r in self.ranks}
        del self.world[index]
        return self.world_sum(rank, src, dst)

    def gemm(self, mach, a, b, c, flags):
        A, B = mach.read(a), mach.read(b)
        ta, tb, acc = "transpose_a" in flags, "transpose_b" in flags, "accumulate" in flags
        ar, ac = a.shape
        br, bc = b.shape
        M, K = (ac, ar) if ta else (ar, ac)
        N = br if tb else bc
        # Row i of op(A) and column j of op(B), each over k in order (the
        # same sums, in the same order, as element by element).
        rows = [A[i::ac] if ta else A[i * ac:(i + 1) * ac] for i in range(M)]
        cols = [B[j * bc:(j + 1) * bc] if tb else B[j::bc] for j in range(N)]
        C = mach.read(c) if acc else [0.0] * (M * N)
        for i, row in enumerate(rows):
            for j, col in enumerate(cols):
                C[i * N + j] += sum(map(operator.mul, row, col))
        mach.write(c, C)

    def rmsnorm_fwd(self, mach, x, w, y, rstd, eps):
        X, W = mach.read(x), mach.read(w)
        T, H = x.shape
        Y, RS = [], []
        for t in range(T):
            row = X[t * H:(t + 1) * H]
            r = 1.0 / math.sqrt(sum(v * v for v in row) / H + eps)
            RS.append(r)
            Y += [row[i] * r * W[i] for i in range(H)]
        mach.write(y, Y)
        mach.write(rstd, RS)

    def rmsnorm_bwd(self, mach, x, w, rstd, dy, dx, dw, acc):
        X, W, RS, DY = mach.read(x), mach.read(w), mach.read(rstd), mach.read(dy)
        if DROP_NORMHEAD_JACOBIAN and dx.name == "scratch.normhead":
            mach.write(dx, DY)  # the gradient of the normalized weight as is
            return
        T, H = x.shape
        DX = []
        DW = mach.read(dw) if acc else [0.0] * H
        for t in range(T):
            row, g = X[t * H:(t + 1) * H], DY[t * H:(t + 1) * H]
            r = RS[t]
            gw = [g[i] * W[i] for i in range(H)]
            dot = sum(gw[i] * row[i] for i in range(H)) / H
            DX += [r * gw[i] - row[i] * r ** 3 * dot for i in range(H)]
            for i in range(H):
                DW[i] += g[i] * row[i] * r
        mach.write(dx, DX)
        mach.write(dw, DW)

    @staticmethod
    def heads(ref):
        b, s, h, d = ref.shape
        return b, s, h, d

    @staticmethod
    def alibi_slopes(heads):
        """Baichuan2's _get_alibi_slopes: _get_interleave(n) for the largest
        power of two n <= heads, then every other slope of 2n heads."""
        def interleave(n):
            start = 2 ** (-(2 ** -(math.log2(n) - 3)))
            return [start * start ** i for i in range(n)]
        n = 2 ** math.floor(math.log2(heads))
        return (interleave(n) + interleave(2 * n)[0::2])[:heads]

    def bias(self, alibi, H):
        """The score bias of head h, query i, key j (ALiBi or none)."""
        slopes = self.alibi_slopes(H) if alibi else [0.0] * H
        return lambda h, i, j: slopes[h] * (j - i)

    @staticmethod
    def keys(i, window):
        """The keys query i sees: causal, within a sliding window when set."""
        return range(max(0, i - window + 1) if window else 0, i + 1)

    def attention_fwd(self, mach, q, k, v, o, lse, scale, alibi=False, window=0):
        Q, K, V = mach.read(q), mach.read(k), mach.read(v)
        B, S, H, D = q.shape
        HK = k.shape[2]
        bias = self.bias(alibi, H)
        O, L = [0.0] * len(Q), [0.0] * (B * H * S)
        qi = lambda b, s, h, d: ((b * S + s) * H + h) * D + d
        ki = lambda b, s, h, d: ((b * S + s) * HK + h) * D + d
        for b in range(B):
            for h in range(H):
                g = h // (H // HK)
                for i in range(S):
                    js = self.keys(i, window)
                    sc = [scale * sum(Q[qi(b, i, h, d)] * K[ki(b, j, g, d)] for d in range(D))
                          + bias(h, i, j) for j in js]
                    mx = max(sc)
                    z = sum(math.exp(x - mx) for x in sc)
                    L[(b * H + h) * S + i] = mx + math.log(z)
                    p = [math.exp(x - mx) / z for x in sc]
                    for d in range(D):
                        O[qi(b, i, h, d)] = sum(pj * V[ki(b, j, g, d)] for pj, j in zip(p, js))
        mach.write(o, O)
        mach.write(lse, L)

    def attention_bwd(self, mach, q, k, v, o, do, lse, dq, dk, dv, scale, alibi=False,
                      window=0):
        Q, K, V, O, DO, L = (mach.read(r) for r in (q, k, v, o, do, lse))
        B, S, H, D = q.shape
        HK = k.shape[2]
        bias = self.bias(alibi, H)
        DQ, DK, DV = [0.0] * len(Q), [0.0] * len(K), [0.0] * len(V)
        qi = lambda b, s, h, d: ((b * S + s) * H + h) * D + d
        ki = lambda b, s, h, d: ((b * S + s) * HK + h) * D + d
        for b in range(B):
            for h in range(H):
                g = h // (H // HK)
                for i in range(S):
                    l = L[(b * H + h) * S + i]
                    js = self.keys(i, window)
                    p = {j: math.exp(scale * sum(Q[qi(b, i, h, d)] * K[ki(b, j, g, d)] for d in range(D))
                                     + bias(h, i, j) - l)
                         for j in js}
                    delta = sum(DO[qi(b, i, h, d)] * O[qi(b, i, h, d)] for d in range(D))
                    for j in js:
                        dp = sum(DO[qi(b, i, h, d)] * V[ki(b, j, g, d)] for d in range(D))
                        ds = p[j] * (dp - delta)
                        for d in range(D):
                            DV[ki(b, j, g, d)] += p[j] * DO[qi(b, i, h, d)]
                            DQ[qi(b, i, h, d)] += scale * ds * K[ki(b, j, g, d)]
                            DK[ki(b, j, g, d)] += scale * ds * Q[qi(b, i, h, d)]
        mach.write(dq, DQ)
        mach.write(dk, DK)
        mach.write(dv, DV)

    def elementwise(self, mach, kind, ins, outs, theta, scale):
        if kind == "cast":
            mach.write(outs[0], mach.read(ins[0]))
        elif kind == "residual_add":
            a, b = mach.read(ins[0]), mach.read(ins[1])
            mach.write(outs[0], [x + y for x, y in zip(a, b)])
        elif kind == "swiglu":
            g, u = mach.read(ins[0]), mach.read(ins[1])
            sig = lambda x: 1.0 / (1.0 + math.exp(-x))
            mach.write(outs[0], [x * sig(x) * y for x, y in zip(g, u)])
        elif kind == "swiglu_bwd":
            g, u, dh = (mach.read(r) for r in ins)
            sig = lambda x: 1.0 / (1.0 + math.exp(-x))
            dg, du = [], []
            for x, y, d in zip(g, u, dh):
                s = sig(x)
                dg.append(d * y * s * (1 + x * (1 - s)))
                du.append(d * x * s)
            mach.write(outs[0], dg)
            mach.write(outs[1], du)
        elif kind in ("rope", "rope_bwd"):
            X = mach.read(ins[0])
            B, S, H, D = ins[0].shape
            Y = [0.0] * len(X)
            half = D // 2
            for b in range(B):
                for s in range(S):
                    for h in range(H):
                        base = ((b * S + s) * H + h) * D
                        for i in range(half):
                            ang = s * rope_inv_freq(i, D, theta, self.rope_scaling)
                            c, sn = math.cos(ang), math.sin(ang)
                            x0, x1 = X[base + i], X[base + i + half]
                            if kind == "rope":
                                Y[base + i] = x0 * c - x1 * sn
                                Y[base + i + half] = x1 * c + x0 * sn
                            else:
                                Y[base + i] = x0 * c + x1 * sn
                                Y[base + i + half] = x1 * c - x0 * sn
            mach.write(outs[0], Y)
        elif kind == "embedding":
            table, ids = mach.read(ins[0]), mach.read(ins[1])
            H = ins[0].shape[1]
            out = []
            for t in ids:
                out += table[int(t) * H:(int(t) + 1) * H]
            mach.write(outs[0], out)
        elif kind == "embedding_bwd":
            ids, dx = mach.read(ins[0]), mach.read(ins[1])
            H = outs[0].shape[1]
            table = mach.read(outs[0])
            for t, tok in enumerate(ids):
                for i in range(H):
                    table[int(tok) * H + i] += dx[t * H + i]
            mach.write(outs[0], table)
        elif kind in ("cross_entropy", "cross_entropy_bwd"):
            logits, labels = mach.read(ins[0]), mach.read(ins[1])
            T, V = ins[0].shape
            total, grad = 0.0, []
            for t in range(T):
                row = logits[t * V:(t + 1) * V]
                mx = max(row)
                z = sum(math.exp(x - mx) for x in row)
                lbl = int(labels[t])
                total += mx + math.log(z) - row[lbl]
                grad += [(math.exp(x - mx) / z - (1.0 if j == lbl else 0.0)) * (scale or 1.0)
                         for j, x in enumerate(row)]
            if kind == "cross_entropy":
                mach.write(outs[0], [total / T])
            else:
                mach.write(outs[0], grad)
        else:
            raise RuntimeError(f"unknown elementwise kind {kind}")

    # Scheduling ------------------------------------------------------------

    def run(self):
        lines = {(p.stage, r): p.lines for p in self.programs for r in range(self.dp)}
        pcs = {rank: 0 for rank in self.ranks}
        while True:
            progressed = False
            for rank in self.ranks:
                while pcs[rank] < len(lines[rank]):
                    line = lines[rank][pcs[rank]]
                    if not self.run_op(rank, line):
                        break
                    pcs[rank] += 1
                    progressed = True
            if all(pcs[rank] == len(lines[rank]) for rank in self.ranks):
                return
            if not progressed:
                raise RuntimeError(f"deadlock at {pcs}")

    def loss(self):
        return sum(self.losses.values()) / len(self.losses)


def main():
    global DROP_NORMHEAD_JACOBIAN
    DROP_NORMHEAD_JACOBIAN = "--drop-normhead-jacobian" in sys.argv[2:]
    text = open(sys.argv[1]).read()
    programs, vocab = parse_module(text)
    dp = int(re.search(r"mt3k.job = #mt3k.job<[^>]*\bdp = (\d+)", text).group(1))
    base = Runner(programs, vocab, dp)
    base.run()
    print(f"loss {base.loss():.6f} over {len(base.losses)} micro-batches of {dp} replicas")
    checked, failed = 0, 0
    eps = 1e-5
    hp = base.adam
    # Gradient clipping: every rank clips with the squared norm of all the
    # gradients the updates receive (each element once: the shards under
    # ZeRO, one replica's whole gradients without).
    factor = 1.0
    if base.clip:
        reference = sum(x * x for (rank, _), g in base.grads.items()
                        if base.shards or rank[1] == 0 for x in g)
        max_norm = next(iter(base.clip.values()))[1]
        factor = min(1.0, max_norm / (math.sqrt(reference) + 1e-6))
        agree = all(abs(sq - reference) <= 1e-9 * reference and mx == max_norm
                    for sq, mx in base.clip.values())
        print(f"{'ok  ' if agree else 'FAIL'} clip: global norm {math.sqrt(reference):.9g} "
              f"max_grad_norm {max_norm:g} factor {factor:.6g} on {len(base.clip)} ranks")
        if len(base.clip) != len(base.ranks):
            print(f"FAIL clip: {len(base.ranks) - len(base.clip)} ranks update unclipped")
            agree = False
        checked += 1
        failed += not agree
    params = {name: (stage, ref.numel(), ref) for name, (stage, ref) in base.params.items()}
    for name, (stage, numel) in base.zero3_params.items():
        params[name] = (stage, numel, None)
    for name, (stage, numel, ref) in sorted(params.items()):
        # Where the gradient of this tensor arrives: the adamw of its layer,
        # the whole layer (ZeRO-0) or the shard holding the element (ZeRO-1).
        shard = next(((key, n, t) for key, (n, tensors) in base.shards.items()
                      for t in tensors if key[0] == (stage, 0) and t[0] == name), None)
        rng = random.Random(name)
        for e in sorted(rng.sample(range(numel), min(3, numel))):
            if shard:
                (rank0, offset), n, tensor = shard
                g = tensor[1] + e
                owner = (stage, g // n)
                offsets = [off for (rk, off) in base.shards if rk == owner]
                master = next(off for off in offsets
                              if any(t[0] == name for t in base.shards[(owner, off)][1]))
                analytic = base.grads[(owner, master)][g % n]
            else:
                # The AdamW call whose master range holds the element (a
                # tensor may span calls: GSM chunks, streamed chunks).
                at = ref.offset + 4 * e
                master = max(off for (rk, off) in base.grads
                             if rk == (stage, 0) and off <= at)
                analytic = base.grads[((stage, 0), master)][(at - master) // 4]
            losses = []
            for sign in (1, -1):
                run = Runner(programs, vocab, dp, perturb=(name, e, sign * eps))
                run.run()
                losses.append(run.loss())
            numeric = (losses[0] - losses[1]) / (2 * eps)
            ok = abs(analytic - numeric) <= 1e-6 + 1e-4 * max(abs(analytic), abs(numeric))
            # The view every replica computes with next step: one AdamW step.
            kind = ("ones" if name.endswith("norm.weight")
                    else "zeros" if name.endswith(".bias") else "normal")
            p0 = init_value(name, e, kind, 0.5)
            clipped = factor * analytic
            # Weight decay on matrices only (the lowering's default): not on
            # the norm weights and biases.
            wd = 0.0 if kind in ("ones", "zeros") else hp["wd"]
            expected = p0 - hp["lr"] * (clipped / (abs(clipped) + hp["eps"]) + wd * p0)
            if ref is not None:
                views = [base.machines[(stage, r)].read(ref)[e] for r in range(dp)]
            else:
                # ZeRO-3: the element's owner holds it in its view shard.
                views = [base.machines[owner].read(base.shard_refs[(owner, master)])[g % n]]
            updated = all(abs(v - expected) <= 1e-9 + 1e-6 * abs(expected) for v in views)
            checked += 1
            failed += not (ok and updated)
            print(f"{'ok  ' if ok and updated else 'FAIL'} {name}[{e}] program {analytic:.9g} "
                  f"finite-difference {numeric:.9g} updated {views[0]:.9g} expected {expected:.9g}")
    if failed:
        print(f"gradcheck: {failed} of {checked} elements differ")
        sys.exit(1)
    print(f"gradcheck: {checked} elements OK")


if __name__ == "__main__":
    main()
