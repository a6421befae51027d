#!/usr/bin/env python3
"""docs.links: every relative link in the repository's Markdown files resolves.

Checks each inline link `[text](target)` and reference definition `[label]: target` in every
*.md file of the source tree (build directories and hidden directories excluded), outside
fenced code blocks and code spans. A target with a scheme (https:, mailto:, ...) is left
alone. Any other target must name an existing file or directory, relative to the file that
links to it; a `#fragment` on a Markdown target must match one of its headings under
GitHub's anchor rules. Python standard library only.

Usage: links.py [SOURCE_DIR]   (default: the repository this script lives in)
Exit status: 0 if every link resolves, 1 otherwise (each broken link on stderr).
"""

import os
import re
import sys

SKIP_DIRS = {".git", "__pycache__", "node_modules"}
INLINE = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def markdown_files(root):
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames
                             if d not in SKIP_DIRS and not d.startswith(".")
                             and not d.startswith("build"))
        for name in sorted(filenames):
            if name.endswith(".md"):
                yield os.path.join(dirpath, name)


def prose_lines(text):
    """Yields (line number, raw line, line with code spans blanked) outside fenced code
    blocks."""
    fence = None
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.lstrip()
        if fence:
            if stripped.startswith(fence):
                fence = None
            continue
        if stripped.startswith("```") or stripped.startswith("~~~"):
            fence = stripped[:3]
            continue
        yield number, line, re.sub(r"(`+)(?:(?!\1).)*?\1", lambda m: " " * len(m.group(0)), line)


def slug(heading):
    """GitHub's anchor for a heading text."""
    text = re.sub(r"`([^`]*)`", r"\1", heading)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


_anchor_cache = {}


def anchors(path):
    if path not in _anchor_cache:
        seen = {}
        result = set()
        with open(path, encoding="utf-8") as f:
            for _, line, _ in prose_lines(f.read()):
                m = HEADING.match(line)
                if not m:
                    continue
                base = slug(m.group(2))
                n = seen.get(base, 0)
                seen[base] = n + 1
                result.add(base if n == 0 else f"{base}-{n}")
        # Explicit HTML anchors: <a name="x"> or id="x".
        with open(path, encoding="utf-8") as f:
            result.update(re.findall(r"<a\s+(?:name|id)=\"([^\"]+)\"", f.read()))
        _anchor_cache[path] = result
    return _anchor_cache[path]


def check(root):
    broken = []
    count = 0
    for md in markdown_files(root):
        with open(md, encoding="utf-8") as f:
            text = f.read()
        for number, _, line in prose_lines(text):
            targets = [m.group(1) for m in INLINE.finditer(line)]
            m = REFERENCE.match(line)
            if m:
                targets.append(m.group(1))
            for target in targets:
                if SCHEME.match(target):
                    continue
                count += 1
                path_part, _, fragment = target.partition("#")
                where = os.path.relpath(md, root) + ":" + str(number)
                dest = md if not path_part else os.path.normpath(
                    os.path.join(os.path.dirname(md), path_part))
                if not os.path.exists(dest):
                    broken.append(f"{where}: {target}: no such file")
                    continue
                if fragment and dest.endswith(".md") and fragment not in anchors(dest):
                    broken.append(f"{where}: {target}: no heading with anchor #{fragment}")
    return count, broken


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1
                           else os.path.join(os.path.dirname(__file__), "..", ".."))
    count, broken = check(root)
    for line in broken:
        print(line, file=sys.stderr)
    print(f"{count} relative links checked, {len(broken)} broken")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
