#!/bin/sh
# schedule-losses-test.sh MPIEXEC NP TOKENS STEPS REFERENCE PROGRAM...
# Every PROGRAM runs the same model, plan and data as REFERENCE (the 1F1B
# schedule) under another pipeline schedule. Each trains STEPS steps with the
# same seed; every step's loss must equal the reference's within 1e-6
# relative (the schedules reorder work, not arithmetic, so they are expected
# to be equal bit for bit; the tolerance is the issue's acceptance line).
# Exits 1 when a run fails, logs fewer than STEPS steps, or a loss differs.
set -eu
if [ $# -lt 6 ]; then
  echo "error: schedule-losses-test.sh: expected MPIEXEC NP TOKENS STEPS" \
       "REFERENCE PROGRAM..., got $# arguments" >&2
  exit 2
fi
mpiexec=$1 np=$2 tokens=$3 steps=$4 reference=$5
shift 5
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export RATRAIN_PROGRESS_LINE=never
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
run() { # program log
  timeout 900 "$mpiexec" -np "$np" --oversubscribe "$1" --data "$tokens" \
    --steps "$steps" --seed 3 --log "$2" >"$dir/out.txt" 2>&1 ||
    { cat "$dir/out.txt"; echo "FAIL: $1 did not train"; exit 1; }
}
losses() { # "step loss" of every step record
  sed -n 's/.*"loss":\([^,}]*\).*"step":\([0-9]*\).*/\2 \1/p' "$1"
}
run "$reference" "$dir/reference.jsonl"
losses "$dir/reference.jsonl" >"$dir/reference.txt"
echo "1f1b: $(head -1 "$dir/reference.txt") ... $(tail -1 "$dir/reference.txt")"
status=0
for program in "$@"; do
  name=$(basename "$program")
  run "$program" "$dir/$name.jsonl"
  losses "$dir/$name.jsonl" >"$dir/$name.txt"
  n=$(wc -l <"$dir/$name.txt")
  if [ "$n" -ne "$steps" ]; then
    echo "FAIL: $name logged $n steps, expected $steps"
    status=1
    continue
  fi
  if ! paste -d' ' "$dir/reference.txt" "$dir/$name.txt" | awk -v name="$name" '
      { d = $2 - $4; if (d < 0) d = -d; a = $2 < 0 ? -$2 : $2;
        if ($1 != $3 || d > 1e-6 * a) {
          printf "FAIL: %s step %s loss %s, 1f1b %s\n", name, $3, $4, $2; bad = 1; exit }
        if (d > worst) worst = d }
      END { if (!bad) printf "%s: %d steps within 1e-6 relative (largest difference %g)\n", name, NR, worst; exit bad }'; then
    status=1
  fi
done
[ $status -eq 0 ] && echo "PASS: every schedule's losses equal the 1F1B run's"
exit $status
