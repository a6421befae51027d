#!/usr/bin/env python3
"""docs.readme: README.md says why to pick this and when not, with measured figures only.

The section "Why this, and when not" must exist, link to doc/performance.md, compare with
Zeek Broker, Redis and NATS, and ZeroMQ, and every figure it quotes must be one measured in
doc/performance.md: each ratio (`1.46×`, each end of a range `2.5–10×`) and each quantity in
µs, MiB or k must appear there with the same digits. So the README cannot drift from the
measurements when they are rerun. Python standard library only.

Usage: readme_figures.py [SOURCE_DIR]   (default: the repository this script lives in)
"""

import os
import re
import sys

SECTION = "## Why this, and when not"
RATIO = re.compile(r"(\d+(?:\.\d+)?)(?:–(\d+(?:\.\d+)?))?×")
QUANTITY = re.compile(r"(\d[\d ]*(?:\.\d+)?) (µs|MiB|k)\b")


def section(text, heading):
    start = text.find(heading + "\n")
    if start < 0:
        return None
    end = text.find("\n## ", start + len(heading))
    return text[start:end if end >= 0 else len(text)]


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(
        os.path.dirname(os.path.abspath(__file__))))
    with open(os.path.join(root, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    with open(os.path.join(root, "doc", "performance.md"), encoding="utf-8") as f:
        perf = f.read()
    problems = []
    why = section(readme, SECTION)
    if why is None:
        print("README.md has no section %r" % SECTION, file=sys.stderr)
        return 1
    for needed in ("doc/performance.md", "Zeek Broker", "Redis", "NATS", "ZeroMQ",
                   "When not"):
        if needed not in why:
            problems.append("the section does not mention %s" % needed)
    ratios = 0
    for m in RATIO.finditer(why):
        for number in filter(None, m.groups()):
            ratios += 1
            if number + "×" not in perf and "**%s×**" % number not in perf:
                problems.append("%s× (from %r) is not in doc/performance.md" % (number, m[0]))
    for m in QUANTITY.finditer(why):
        figure = "%s %s" % (m[1], m[2])
        if figure not in perf:
            problems.append("%r is not in doc/performance.md" % figure)
    if ratios < 5:
        problems.append("only %d measured ratios quoted" % ratios)
    for p in problems:
        print("README.md: " + p, file=sys.stderr)
    print("%d ratios checked, %d problems" % (ratios, len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
