"""Splices a section into docs/evaluation.md (shared by the scripts that
regenerate one section each: seed002.py, heterogeneous.py)."""

import argparse
import os
import re
import sys


def splice(doc, title, lines, reproduce_line):
    """Replaces the section that starts with `title` (up to the next "## ")
    with `lines`, or inserts it before "## Reproduce"; adds `reproduce_line`
    under run.sh's line of the Reproduce block when missing. The rest of the
    file is left alone."""
    with open(doc) as f:
        text = f.read()
    body = "\n".join(lines) + "\n"
    start = text.find(title)
    if start >= 0:
        end = text.find("\n## ", start + len(title))
        text = text[:start] + body + (text[end + 1:] if end >= 0 else "")
    else:
        at = text.find("## Reproduce")
        text = (text[:at] + body + "\n" + text[at:]) if at >= 0 else text + "\n" + body
    if reproduce_line not in text:
        anchor = ("bench/evaluation/run.sh            # builds ratrain-sim if needed, "
                  "regenerates this file")
        if anchor in text:
            text = text.replace(anchor, anchor + "\n" + reproduce_line, 1)
    text = re.sub(r"\n{3,}", "\n\n", text)
    with open(doc, "w") as f:
        f.write(text)


def main(doc_string, root, title, reproduce_line, make_lines):
    """The command line of a section script: --build (default $BUILD_DIR or
    ROOT/build), --out (docs/), --print (print the section, write nothing).
    `make_lines(sim)` gets the ratrain-sim executable of the build and
    returns the section's lines, which are spliced into --out/evaluation.md."""
    parser = argparse.ArgumentParser(description=doc_string.splitlines()[0])
    parser.add_argument("--build", default=os.environ.get("BUILD_DIR", os.path.join(root, "build")))
    parser.add_argument("--out", default=os.path.join(root, "docs"))
    parser.add_argument("--print", action="store_true", help="print the section, write nothing")
    args = parser.parse_args()
    tool = os.path.join(os.path.abspath(args.build), "bin", "ratrain-sim")
    if not os.access(tool, os.X_OK):
        sys.exit(f"{os.path.basename(sys.argv[0])}: {tool} not found; build it "
                 f"(ninja -C {args.build} ratrain-sim)")
    lines = make_lines(tool)
    if args.print:
        print("\n".join(lines))
        return
    doc = os.path.join(args.out, "evaluation.md")
    splice(doc, title, lines, reproduce_line)
    print(f"wrote {title[3:]} into {doc}", file=sys.stderr)
