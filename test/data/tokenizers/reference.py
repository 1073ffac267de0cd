#!/usr/bin/python3
"""Reference token ids for the tokenizer tests, independent of the C++ code.

    reference.py sentencepiece MODEL.model   # python3-sentencepiece
    reference.py bpe TOKENIZER.json          # OpenAI GPT-2 encoder.py

prints a JSON list of {"text": ..., "ids": [...]} for STRINGS (and, for a
tokenizer.json, strings with its special tokens inside). The BPE encoder is
OpenAI's gpt-2/src/encoder.py algorithm (merge every occurrence of the
lowest-ranked pair, repeat) on the pieces of the tokenizer's pre-tokenizer
regex, with the `regex` module; special tokens are split off first, leftmost
longest; with ignore_merges a piece found whole in the vocab is one token.
Run with Debian's /usr/bin/python3 (python3-regex, python3-sentencepiece).
"""

import json
import sys

import regex

GPT2_PATTERN = (r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+"
                r"| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+")
LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+"
                  r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
                  r"|\s+(?!\S)|\s+")

STRINGS = [
    "",
    "Hello, world!",
    "It's what they've said: we'll see, I'm sure they'd say DON'T or IT'S.",
    "12345 and 3.14159, in 2024: 7 8 90",
    "  multiple   spaces  and trailing   ",
    "line one\nline two\r\n\n\tindented\n\n\n",
    "caf\u00e9 na\u00efve \u2014 \u4e2d\u6587 \U0001F600 emoji \u00d1and\u00fa",
    " RATrain tokenizer",
    "The licensor grants you a copyright license to reproduce, prepare "
    "derivative works of, publicly display and distribute the Work.\n",
]


def bytes_to_unicode():
    """GPT-2's reversible byte -> printable character map."""
    bs = (list(range(ord("!"), ord("~") + 1))
          + list(range(ord("\u00a1"), ord("\u00ac") + 1))
          + list(range(ord("\u00ae"), ord("\u00ff") + 1)))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def get_pairs(word):
    return set(zip(word, word[1:]))


class GPT2Encoder:
    def __init__(self, path):
        with open(path, encoding="utf-8") as f:
            config = json.load(f)
        model = config["model"]
        self.vocab = model["vocab"]
        merges = [tuple(m.split(" ", 1)) if isinstance(m, str) else tuple(m)
                  for m in model["merges"]]
        self.bpe_ranks = dict(zip(merges, range(len(merges))))
        self.ignore_merges = model.get("ignore_merges", False)
        self.byte_encoder = bytes_to_unicode()
        self.specials = {t["content"]: t["id"] for t in config["added_tokens"]}
        pre = config["pre_tokenizer"]
        if pre["type"] == "ByteLevel":
            assert pre["use_regex"] and not pre["add_prefix_space"]
            self.pattern = GPT2_PATTERN
        else:
            split, byte_level = pre["pretokenizers"]
            assert split["behavior"] == "Isolated" and not split["invert"]
            assert not byte_level["use_regex"]
            self.pattern = split["pattern"]["Regex"]
        self.cache = {}

    def bpe(self, token):
        if token in self.cache:
            return self.cache[token]
        word = tuple(token)
        pairs = get_pairs(word)
        while pairs:
            bigram = min(pairs,
                         key=lambda p: self.bpe_ranks.get(p, float("inf")))
            if bigram not in self.bpe_ranks:
                break
            first, second = bigram
            new_word = []
            i = 0
            while i < len(word):
                try:
                    j = word.index(first, i)
                except ValueError:
                    new_word.extend(word[i:])
                    break
                new_word.extend(word[i:j])
                i = j
                if i < len(word) - 1 and word[i + 1] == second:
                    new_word.append(first + second)
                    i += 2
                else:
                    new_word.append(word[i])
                    i += 1
            word = tuple(new_word)
            pairs = get_pairs(word) if len(word) > 1 else set()
        self.cache[token] = word
        return word

    def pieces(self, text):
        """Isolated split: the matches and the text between them."""
        out, prev = [], 0
        for m in regex.finditer(self.pattern, text):
            if m.start() > prev:
                out.append(text[prev:m.start()])
            if m.end() > m.start():
                out.append(m.group())
            prev = m.end()
        if prev < len(text):
            out.append(text[prev:])
        return out

    def encode(self, text):
        ids = []
        if self.specials:
            alternation = "|".join(
                regex.escape(s) for s in sorted(self.specials, key=len,
                                                reverse=True))
            parts = regex.split("(" + alternation + ")", text)
        else:
            parts = [text]
        for k, part in enumerate(parts):
            if k % 2 == 1:
                ids.append(self.specials[part])
                continue
            for piece in self.pieces(part):
                token = "".join(self.byte_encoder[b]
                                for b in piece.encode("utf-8"))
                if self.ignore_merges and token in self.vocab:
                    ids.append(self.vocab[token])
                    continue
                ids.extend(self.vocab[t] for t in self.bpe(token))
        return ids

    def strings(self):
        specials = sorted(self.specials)
        if not specials:
            return STRINGS
        first, last = specials[0], specials[-1]
        return STRINGS + [
            first + "Hello" + last + " world " + first,
            "text with " + first + " inside and" + last + "\n" + last + last,
        ]


def main():
    kind, path = sys.argv[1], sys.argv[2]
    if kind == "sentencepiece":
        import sentencepiece
        sp = sentencepiece.SentencePieceProcessor(model_file=path)
        cases = [{"text": s, "ids": sp.encode(s)} for s in STRINGS]
    else:
        encoder = GPT2Encoder(path)
        cases = [{"text": s, "ids": encoder.encode(s)}
                 for s in encoder.strings()]
    sys.stdout.write("[\n" + ",\n".join(
        json.dumps(case, ensure_ascii=False) for case in cases) + "\n]\n")


if __name__ == "__main__":
    main()
