#!/usr/bin/python3
"""Writes the byte-level BPE test tokenizers in HuggingFace tokenizer.json form.

    test/data/tokenizers/make-bpe.py

Trains 500 merges on the first 300 KB of examples/data/corpus.txt (GPT-2's
byte-to-unicode alphabet, the most frequent pair first, ties broken by the
smaller pair) for two layouts:

  gpt2.tokenizer.json    GPT-2's: pre_tokenizer ByteLevel(use_regex true), the
                         merges as "a b" strings, <|endoftext|> in the vocab;
  llama3.tokenizer.json  Llama-3's: Sequence[Split(the Llama-3 regex,
                         Isolated), ByteLevel(use_regex false)], merges as
                         ["a", "b"] pairs, ignore_merges true, special tokens
                         after the vocab, two whole words in the vocab that
                         no merge builds (what ignore_merges is for).

Then writes each one's reference ids (reference.py, an independent
implementation of OpenAI's GPT-2 encoder.py). Run with Debian's
/usr/bin/python3 (python3-regex).
"""

import collections
import json
import os
import subprocess
import sys

import regex

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, HERE)
from reference import GPT2_PATTERN, LLAMA3_PATTERN, bytes_to_unicode  # noqa: E402

NUM_MERGES = 500


def train(text, pattern):
    byte_char = bytes_to_unicode()
    words = collections.Counter(
        tuple(byte_char[b] for b in piece.encode("utf-8"))
        for piece in regex.findall(pattern, text))
    merges = []
    for _ in range(NUM_MERGES):
        pairs = collections.Counter()
        for word, count in words.items():
            for pair in zip(word, word[1:]):
                pairs[pair] += count
        if not pairs:
            break
        best = min(pairs, key=lambda pair: (-pairs[pair], pair))
        merges.append(best)
        merged = collections.Counter()
        for word, count in words.items():
            out, i = [], 0
            while i < len(word):
                if i + 1 < len(word) and (word[i], word[i + 1]) == best:
                    out.append(word[i] + word[i + 1])
                    i += 2
                else:
                    out.append(word[i])
                    i += 1
            merged[tuple(out)] += count
        words = merged
    vocab = {}
    for char in bytes_to_unicode().values():
        vocab[char] = len(vocab)
    for a, b in merges:
        vocab[a + b] = len(vocab)
    return vocab, merges


def added(id_, content):
    return {"id": id_, "content": content, "single_word": False,
            "lstrip": False, "rstrip": False, "normalized": False,
            "special": True}


def write(path, data):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False, indent=1)
        f.write("\n")


def main():
    with open(os.path.join(ROOT, "examples", "data", "corpus.txt"), "rb") as f:
        text = f.read(300000).decode("utf-8", errors="ignore")

    vocab, merges = train(text, GPT2_PATTERN)
    vocab["<|endoftext|>"] = len(vocab)
    gpt2 = {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [dict(added(vocab["<|endoftext|>"], "<|endoftext|>"),
                              normalized=True)],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False,
                          "trim_offsets": True, "use_regex": True},
        "post_processor": {"type": "ByteLevel", "add_prefix_space": True,
                           "trim_offsets": False, "use_regex": True},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True,
                    "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": "", "end_of_word_suffix": "",
                  "fuse_unk": False, "byte_fallback": False,
                  "vocab": vocab, "merges": [a + " " + b for a, b in merges]},
    }
    write(os.path.join(HERE, "gpt2.tokenizer.json"), gpt2)

    vocab, merges = train(text, LLAMA3_PATTERN)
    for word in ("\u0120RATrain", "\u0120tokenizer"):
        vocab.setdefault(word, len(vocab))
    specials = ["<|begin_of_text|>", "<|end_of_text|>",
                "<|reserved_special_token_0|>", "<|eot_id|>"]
    first = len(vocab)
    llama3 = {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [added(first + i, s) for i, s in enumerate(specials)],
        "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": LLAMA3_PATTERN},
             "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False,
             "trim_offsets": True, "use_regex": False}]},
        "post_processor": {"type": "Sequence", "processors": [
            {"type": "ByteLevel", "add_prefix_space": True,
             "trim_offsets": False, "use_regex": True},
            {"type": "TemplateProcessing",
             "single": [{"SpecialToken": {"id": "<|begin_of_text|>",
                                          "type_id": 0}},
                        {"Sequence": {"id": "A", "type_id": 0}}],
             "pair": [], "special_tokens": {"<|begin_of_text|>": {
                 "id": "<|begin_of_text|>", "ids": [first],
                 "tokens": ["<|begin_of_text|>"]}}}]},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True,
                    "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False,
                  "byte_fallback": False, "ignore_merges": True,
                  "vocab": vocab, "merges": [[a, b] for a, b in merges]},
    }
    write(os.path.join(HERE, "llama3.tokenizer.json"), llama3)

    for name in ("gpt2", "llama3"):
        out = subprocess.run(
            [sys.executable, os.path.join(HERE, "reference.py"), "bpe",
             os.path.join(HERE, name + ".tokenizer.json")],
            check=True, capture_output=True, text=True).stdout
        with open(os.path.join(HERE, name + ".reference.json"), "w") as f:
            f.write(out)


if __name__ == "__main__":
    main()
