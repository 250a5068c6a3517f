#!/usr/bin/env python3
"""Did a change alter the report? Compare two build folders of the same recording, chapter by chapter.

    python tools/diff_builds.py BUILD_BEFORE BUILD_AFTER

For each chapter in both: its tables (data/<chapter>/*.csv, byte for byte), and its executed
notebook's prose and outputs in order: every Markdown cell, every text, HTML and Markdown output,
and the number of figures.
Figures are compared by count, not pixels (PNG bytes differ between matplotlib runs). Prints
each difference and exits 1 if there is one. Use it before and after a refactor: replay both
builds from the same recording.
"""

from __future__ import annotations

import difflib
import json
import re
import sys
from pathlib import Path

KINDS = ("text/plain", "text/html", "text/markdown")
# What differs between two runs of the same code: pandas Styler ids and object addresses.
_VOLATILE = re.compile(r"T_[0-9a-f]{5}|at 0x[0-9a-f]+")


def _stable(text: str) -> str:
    return _VOLATILE.sub("~", text)


def outputs(notebook: Path) -> tuple[list[str], int]:
    texts, figures = [], 0
    for cell in json.loads(notebook.read_text())["cells"]:
        if cell["cell_type"] == "markdown":
            texts.append("".join(cell["source"]))
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            figures += "image/png" in data
            if out.get("output_type") == "stream":
                texts.append(_stable("".join(out["text"])))
            for kind in KINDS:
                if kind in data and "image/png" not in data:
                    texts.append(_stable("".join(data[kind])))
    return texts, figures


def diff(before: Path, after: Path) -> list[str]:
    problems = []
    for nb_a in sorted((before / "notebooks").glob("*.ipynb")):
        nb_b = after / "notebooks" / nb_a.name
        chapter = nb_a.stem
        if not nb_b.is_file():
            problems.append(f"{chapter}: missing after")
            continue
        for csv in sorted((before / "data" / chapter).glob("*.csv")):
            other = after / "data" / chapter / csv.name
            if not other.is_file() or other.read_bytes() != csv.read_bytes():
                problems.append(f"{chapter}: table {csv.name} differs")
        (ta, fa), (tb, fb) = outputs(nb_a), outputs(nb_b)
        if fa != fb:
            problems.append(f"{chapter}: {fa} figures before, {fb} after")
        if ta != tb:
            lines = list(
                difflib.unified_diff(
                    "\n".join(ta).splitlines(), "\n".join(tb).splitlines(), "before", "after", lineterm="", n=0
                )
            )
            problems.append(f"{chapter}: outputs differ\n" + "\n".join(lines[:60]))
    return problems


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__.split("\n\n")[1])
    found = diff(Path(sys.argv[1]), Path(sys.argv[2]))
    print("\n".join(found) if found else "same tables, outputs and figure counts")
    sys.exit(1 if found else 0)
