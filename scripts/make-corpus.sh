#!/usr/bin/env bash
# Builds a small real-text training corpus from documentation installed on a
# Debian system: the license texts in /usr/share/common-licenses, then the
# /usr/share/doc/*/copyright files (sorted by package name, duplicates
# dropped) until the corpus reaches the size limit.
#
#   scripts/make-corpus.sh [OUT_TXT] [MAX_BYTES] [TOKENIZER]
#
# OUT_TXT defaults to examples/data/corpus.txt and MAX_BYTES to 1000000. When
# TOKENIZER (a ratrain-tokenize binary) is given, OUT_TXT's token file
# (OUT_TXT with .tok) is written too. The text is written to a temporary file
# and renamed, so a failed run never leaves a half-written corpus.
set -euo pipefail

out=${1:-examples/data/corpus.txt}
max_bytes=${2:-1000000}
tokenizer=${3:-}

tmp=$(mktemp "${out}.tmp.XXXXXX")
trap 'rm -f "$tmp"' EXIT
declare -A seen=()
size=0

add_file() {
  local file=$1
  [[ -f $file && -r $file ]] || return 0
  # Plain text only.
  if LC_ALL=C grep -qP '[\x00-\x08\x0E-\x1F]' "$file"; then
    return 0
  fi
  local sum
  sum=$(md5sum < "$file" | cut -d' ' -f1)
  [[ -n ${seen[$sum]:-} ]] && return 0
  seen[$sum]=1
  local bytes
  bytes=$(stat -c %s "$file")
  (( size + bytes > max_bytes )) && return 1
  cat "$file" >> "$tmp"
  printf '\n' >> "$tmp"
  size=$(( size + bytes + 1 ))
}

shopt -s nullglob
for file in $(printf '%s\n' /usr/share/common-licenses/* | LC_ALL=C sort); do
  [[ -L $file ]] && continue
  add_file "$file" || break
done
for file in $(printf '%s\n' /usr/share/doc/*/copyright | LC_ALL=C sort); do
  add_file "$file" || true
  (( size >= max_bytes - 4096 )) && break
done

if (( size == 0 )); then
  echo "error: no documentation text found under /usr/share" >&2
  exit 1
fi
mkdir -p "$(dirname "$out")"
chmod 644 "$tmp"
mv "$tmp" "$out"
trap - EXIT
echo "$out: $size bytes"
if [[ -n $tokenizer ]]; then
  "$tokenizer" -o "${out%.txt}.tok" "$out"
fi
