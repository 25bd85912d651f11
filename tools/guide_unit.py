#!/usr/bin/env python3
"""Copy the example unit of docs/writing-a-unit.md (section 6) out of the page: every
fenced block that follows a line `<!-- guide-file: NAME -->` is written to OUT/NAME, so
that the suite builds and runs the unit exactly as the guide shows it (target
`tessera_guide`, tests/python/test_guide.py). A file is rewritten only when its text
changes (no rebuild otherwise). Exits non-zero if the page names no file or a block is
not closed.

    python3 tools/guide_unit.py docs/writing-a-unit.md OUT
"""
import re
import sys
from pathlib import Path


def files_of(text):
    out, lines, i = {}, text.splitlines(), 0
    while i < len(lines):
        m = re.match(r"\s*<!-- guide-file: (\S+) -->\s*$", lines[i])
        i += 1
        if not m:
            continue
        while i < len(lines) and not lines[i].startswith("```"):
            i += 1
        start = i + 1
        end = start
        while end < len(lines) and not lines[end].startswith("```"):
            end += 1
        if end >= len(lines):
            sys.exit(f"guide_unit: the block of {m.group(1)} is not closed")
        out[m.group(1)] = "\n".join(lines[start:end]) + "\n"
        i = end + 1
    return out


def main():
    page, out = Path(sys.argv[1]), Path(sys.argv[2])
    files = files_of(page.read_text())
    if not files:
        sys.exit(f"guide_unit: {page} names no guide-file")
    out.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        f = out / name
        if not f.exists() or f.read_text() != text:
            f.write_text(text)
    print(f"guide_unit: {', '.join(files)} -> {out}")


if __name__ == "__main__":
    main()
