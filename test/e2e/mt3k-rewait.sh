#!/bin/sh
# mt3k-rewait.sh OPT IN OUT
# The lowered mt3k module IN with every mt3k.wait removed, and the waits put
# back by --mt3k-insert-waits alone (then checked by --mt3k-verify): the
# waits the async-hazard analysis derives from the ops' memory effects.
set -eu
if [ $# -ne 3 ]; then
  echo "error: mt3k-rewait.sh: expected OPT IN OUT, got $# arguments" >&2
  exit 2
fi
opt=$1 in=$2 out=$3
grep -v '^ *mt3k\.wait ' "$in" >"$out.stripped"
if grep -q 'mt3k\.wait' "$out.stripped"; then
  echo "error: mt3k-rewait.sh: $in has a wait this script cannot strip" >&2
  exit 1
fi
"$opt" "$out.stripped" --mt3k-insert-waits --mt3k-verify -o "$out.tmp"
rm -f "$out.stripped"
mv "$out.tmp" "$out"
