#!/usr/bin/env bash
# Regenerates the SentencePiece test model and its reference ids:
#   test/data/tokenizers/make-sentencepiece.sh
# spm.model: a BPE model (vocabulary 800) trained by Debian's spm_train
# (package sentencepiece) on the first 300 KB of examples/data/corpus.txt,
# with Llama's options (identity normalization, whitespace kept, digits split,
# byte fallback), so that every UTF-8 text round-trips.
# spm.reference.json: the ids python3-sentencepiece gives the strings of
# reference.py (/usr/bin/python3: Debian's module, not a pyenv one).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../../.." && pwd)"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

head -c 300000 "$ROOT/examples/data/corpus.txt" > "$WORK/train.txt"
spm_train --input="$WORK/train.txt" --model_prefix="$WORK/spm" \
  --vocab_size=800 --model_type=bpe --character_coverage=1.0 \
  --normalization_rule_name=identity --remove_extra_whitespaces=false \
  --add_dummy_prefix=true --split_digits=true --byte_fallback=true \
  --allow_whitespace_only_pieces=true --num_threads=1 --minloglevel=2
cp "$WORK/spm.model" "$HERE/spm.model"
/usr/bin/python3 "$HERE/reference.py" sentencepiece "$HERE/spm.model" \
  > "$HERE/spm.reference.json"
