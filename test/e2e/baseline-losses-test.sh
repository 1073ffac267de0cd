#!/bin/sh
# baseline-losses-test.sh [--needs-cpu-flag FLAG] MPIEXEC NP PROGRAM TOKENS
#                         STEPS SEED BASELINE [PLAN]
# Trains the emitted program PROGRAM for STEPS steps on NP ranks with data
# seed SEED and compares every step's logged loss with the recorded one in
# BASELINE (test/e2e/Inputs/baseline-losses/<name>.txt: '#' comments, then
# one "STEP LOSS" line per step, the loss as the step log printed it). A
# loss matches when its text is the same, or when both texts parse to the
# same double (the same bits in another spelling); anything else fails and
# prints the step, the recorded and the new loss. Exits 1 when the run
# fails, logs other steps than 1..STEPS, or any loss differs.
#
# --needs-cpu-flag FLAG: the baseline holds only on CPUs whose
# /proc/cpuinfo lists FLAG (the bf16 plans: the bf16 GEMM runs vdpbf16ps with
# avx512_bf16, another instruction sequence without it); elsewhere the test
# exits 77 (skipped) without running.
#
# With RATRAIN_BASELINE_RECORD=1 in the environment the run's losses are
# written to BASELINE instead (with a header naming the commit of BASELINE's
# checkout and PLAN); record only when a change is meant to change numerics.
set -eu
cpuFlag=
if [ "${1-}" = --needs-cpu-flag ]; then
  cpuFlag=${2-}
  shift 2
fi
if [ $# -lt 7 ] || [ $# -gt 8 ]; then
  echo "error: baseline-losses-test.sh: expected MPIEXEC NP PROGRAM TOKENS" \
       "STEPS SEED BASELINE [PLAN], got $# arguments" >&2
  exit 2
fi
mpiexec=$1 np=$2 program=$3 tokens=$4 steps=$5 seed=$6 baseline=$7
plan=${8-}
name=$(basename "$baseline" .txt)
if [ -n "$cpuFlag" ] && ! grep -qw -- "$cpuFlag" /proc/cpuinfo 2>/dev/null; then
  echo "SKIP: $name: recorded on a CPU with $cpuFlag, this one lacks it"
  exit 77
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export RATRAIN_PROGRESS_LINE=never
# The bf16 baselines were recorded with the bf16 products on vdpbf16ps; a CPU
# whose kernels would widen them to fp32 by default (kernels::bf16Products)
# runs the dot product here too.
export RATRAIN_BF16_PRODUCTS=dot
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

status=0
timeout 500 "$mpiexec" -np "$np" --oversubscribe "$program" --data "$tokens" \
  --steps "$steps" --seed "$seed" --log "$dir/steps.jsonl" \
  </dev/null >"$dir/out.txt" 2>&1 || status=$?
if [ "$status" -ne 0 ]; then
  cat "$dir/out.txt"
  echo "FAIL: $name: $program exited with status $status"
  exit 1
fi

# "STEP LOSS" of every step record, in log order, whatever the key order;
# records without step and loss (notes) are skipped.
awk '
  function field(key,   at, rest) {
    at = index($0, "\"" key "\":")
    if (at == 0) return ""
    rest = substr($0, at + length(key) + 3)
    sub(/[,}].*/, "", rest)
    return rest
  }
  NF { step = field("step"); loss = field("loss")
       if (step == "" && loss == "") next
       print step, loss }' "$dir/steps.jsonl" >"$dir/got.txt"
expected=$(seq 1 "$steps" | tr '\n' ' ')
logged=$(cut -d' ' -f1 "$dir/got.txt" | tr '\n' ' ')
if [ "$logged" != "$expected" ]; then
  cat "$dir/out.txt" "$dir/steps.jsonl"
  echo "FAIL: $name: logged steps '$logged', expected 1..$steps"
  exit 1
fi

if [ "${RATRAIN_BASELINE_RECORD-}" = 1 ]; then
  src=$(dirname "$baseline")
  commit=$(git -C "$src" log -1 --format='%H (%cs)' 2>/dev/null || echo unknown)
  # Changes outside the baselines (which a recording run itself rewrites).
  if [ -n "$(git -C "$src" status --porcelain --untracked-files=no \
      -- ':/' ':(exclude).' 2>/dev/null)" ]; then
    commit="$commit with uncommitted changes"
  fi
  mkdir -p "$src"
  {
    echo "# Baseline losses of the tiny plan '$name'${plan:+: $plan}."
    echo "# Recorded from commit $commit by"
    echo "# RATRAIN_BASELINE_RECORD=1 test/e2e/baseline-losses-test.sh, i.e."
    echo "#   mpirun -np $np --oversubscribe $(basename "$program")" \
         "--data $(basename "$tokens") --steps $steps --seed $seed --log LOG"
    echo "# One line per step: STEP LOSS, the loss as LOG printed it."
    cat "$dir/got.txt"
  } >"$baseline.tmp"
  mv "$baseline.tmp" "$baseline"
  echo "RECORDED: $name: $steps steps on $np ranks, last loss" \
       "$(tail -n 1 "$dir/got.txt" | cut -d' ' -f2) -> $baseline"
  exit 0
fi

if [ ! -s "$baseline" ]; then
  echo "error: $baseline: no recorded losses" >&2
  exit 1
fi
grep -v '^#' "$baseline" | awk 'NF' >"$dir/want.txt"
if ! awk -v name="$name" -v steps="$steps" '
    FNR == NR { want[$1] = $2; n++; next }
    { got[$1] = $2 }
    END {
      if (n != steps) {
        print "FAIL: " name ": the baseline records " n " steps, the test" \
              " trains " steps
        exit 1
      }
      bad = 0
      for (step = 1; step <= steps; step++) {
        w = want[step]; g = got[step]
        if ((w "") == (g "")) continue
        # The same double in another spelling (e.g. a shortest round-trip
        # printer instead of %.17g) is the same loss.
        num = "^-?[0-9]+(\\.[0-9]*)?([eE][-+]?[0-9]+)?$"
        if (w ~ num && g ~ num && w + 0 == g + 0) continue
        if (!bad)
          print "FAIL: " name ": first differing step " step ": expected " \
                w ", got " g
        else
          print "  step " step ": expected " w ", got " g
        bad++
      }
      if (bad) {
        print "FAIL: " name ": " bad " of " steps " losses differ from the" \
              " baseline"
        exit 1
      }
    }' "$dir/want.txt" "$dir/got.txt"; then
  exit 1
fi
echo "PASS: $name: $steps steps on $np ranks, losses equal the baseline" \
     "(last $(tail -n 1 "$dir/got.txt" | cut -d' ' -f2))"
