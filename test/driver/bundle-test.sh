#!/bin/sh
# bundle-test.sh RATRAIN MODEL MACHINE BUILD_DIR
# `ratrain compile --bundle` writes a folder that trains on its own: the
# bundle is written into a fresh temporary folder outside the build tree,
# copied to another folder (the original removed), and there
#  - ldd finds libratrain_program.so in the bundle's lib/, nothing in the
#    build tree, and no LLVM, MLIR or Halide library;
#  - `mpirun -np 2 BUNDLE/program --data BUNDLE/corpus.tok` trains 3 steps
#    with finite losses, without LD_LIBRARY_PATH;
#  - compiling again over the copied bundle replaces its files and keeps a
#    file of the user's (the step log).
set -eu
ratrain=$1 model=$2 machine=$3 build=$4
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ratrain-bundle-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
case "$tmp" in
"$build"/*)
  echo "FAIL: the temporary folder $tmp is inside the build tree"
  exit 1
  ;;
esac

"$ratrain" compile "$model" --machine "$machine" --ranks 2 --global-batch 4 \
  --bundle "$tmp/made" >"$tmp/compile.txt" 2>&1 || {
  cat "$tmp/compile.txt"
  echo "FAIL: ratrain compile --bundle failed"
  exit 1
}
cp -R "$tmp/made" "$tmp/moved"
rm -rf "$tmp/made"
bundle=$tmp/moved
for file in program lib/libratrain_program.so corpus.tok ratrain-bundle.txt; do
  if [ ! -s "$bundle/$file" ]; then
    ls -lR "$bundle"
    echo "FAIL: the bundle has no $file"
    exit 1
  fi
done

unset LD_LIBRARY_PATH
deps=$(ldd "$bundle/program")
printf '%s\n' "$deps"
if ! printf '%s\n' "$deps" |
  grep -q "libratrain_program.so => $bundle/lib/libratrain_program.so"; then
  echo "FAIL: the program does not load libratrain_program.so from the bundle"
  exit 1
fi
if printf '%s\n' "$deps" | grep -Ei "libLLVM|libMLIR|libHalide|not found|=> $build/"; then
  echo "FAIL: the bundle loads the libraries above"
  exit 1
fi

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export RATRAIN_PROGRESS_LINE=never
cd "$tmp"
timeout 300 mpirun -np 2 --oversubscribe "$bundle/program" \
  --data "$bundle/corpus.tok" --steps 3 --log "$bundle/steps.jsonl" \
  >"$tmp/out.txt" 2>&1 || {
  cat "$tmp/out.txt"
  echo "FAIL: the bundled program failed"
  exit 1
}
sed -n 's/.*"loss":\([^,}]*\).*/\1/p' "$bundle/steps.jsonl" >"$tmp/losses.txt"
cat "$tmp/losses.txt"
awk '
  /^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$/ { n++; next }
  { print "FAIL: a non-finite loss: " $0; bad = 1 }
  END {
    if (bad) exit 1
    if (n != 3) { print "FAIL: expected 3 losses, got " n; exit 1 }
  }' "$tmp/losses.txt"

# Again over the copy: an earlier bundle is replaced, the user's files stay.
"$ratrain" compile "$model" --machine "$machine" --ranks 2 --global-batch 4 \
  --bundle "$bundle" >"$tmp/compile2.txt" 2>&1 || {
  cat "$tmp/compile2.txt"
  echo "FAIL: ratrain compile --bundle over an earlier bundle failed"
  exit 1
}
if [ ! -s "$bundle/steps.jsonl" ] || [ ! -x "$bundle/program" ]; then
  ls -lR "$bundle"
  echo "FAIL: compiling over the bundle lost a file"
  exit 1
fi
echo "PASS: the bundle trained 3 steps outside the build tree"
