#!/usr/bin/env python3
"""Collects the fuzz targets' seed inputs from the repository's examples and
tests into OUT/<target>/ (scripts/ratrain.sh fuzz runs it; fuzz/corpus/<target>
holds the inputs that are not in a test: binary files and past findings).

  fuzz/seeds.py SOURCE_ROOT OUT

- hf-config: examples/models/*.json and every *.json in test/ (files and
  split-file sections) that is not a trainer state
- machine-file: examples/machines/*.yaml and every *.yaml in test/
- trainer-state: the trainer_state.json sections of test/
- mlir: every test/**/*.mlir, cut at `// -----` (--split-input-file)
- schedule-csv: every *.csv under test/ (pipeline schedules)
"""
import hashlib
import pathlib
import re
import sys

SECTION = re.compile(r"^(?:#|//)--- (\S+)\s*$")


def sections(path):
    """(name, text) of each split-file section of `path`, or of the file."""
    text = path.read_text(errors="replace")
    names, parts, current = [], [], None
    for line in text.splitlines(keepends=True):
        match = SECTION.match(line)
        if match:
            current = []
            names.append(match.group(1))
            parts.append(current)
        elif current is not None:
            current.append(line)
    if not names:
        return [(path.name, text)]
    return [(name, "".join(lines)) for name, lines in zip(names, parts)]


def main():
    root, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    seeds = {name: [] for name in ("hf-config", "machine-file",
                                   "trainer-state", "mlir", "schedule-csv")}
    for path in sorted((root / "examples" / "models").glob("*.json")):
        seeds["hf-config"].append(path.read_text())
    for path in sorted((root / "examples" / "machines").glob("*.yaml")):
        seeds["machine-file"].append(path.read_text())
    for path in sorted((root / "test").rglob("*")):
        if path.is_file() and path.suffix == ".csv":
            seeds["schedule-csv"].append(path.read_text(errors="replace"))
            continue
        if not path.is_file() or path.suffix not in (".json", ".yaml", ".test",
                                                     ".mlir"):
            continue
        for name, text in sections(path):
            if name.endswith("trainer_state.json"):
                seeds["trainer-state"].append(text)
            elif name.endswith(".json"):
                seeds["hf-config"].append(text)
            elif name.endswith(".yaml"):
                seeds["machine-file"].append(text)
            elif name.endswith(".mlir"):
                seeds["mlir"].extend(re.split(r"(?m)^// -----\s*$", text))
    for target, texts in seeds.items():
        directory = out / target
        directory.mkdir(parents=True, exist_ok=True)
        for text in texts:
            data = text.encode()
            digest = hashlib.sha1(data).hexdigest()
            (directory / digest).write_bytes(data)
        print(f"{target}: {len(texts)} seeds in {directory}")


if __name__ == "__main__":
    main()
