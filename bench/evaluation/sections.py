"""Splices a section into docs/evaluation.md (shared by the scripts that
regenerate one section each: seed002.py, heterogeneous.py)."""

import re


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
