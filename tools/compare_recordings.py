#!/usr/bin/env python3
"""Compare two recordings point by point (two GPUs, two commits, or two profiles on one GPU).

    python tools/compare_recordings.py results/nvidia-h100-80gb-hbm3/gtx680 results/nvidia-h100-80gb-hbm3/h100
    python tools/compare_recordings.py A B --chapter 01_block_size --threshold 0.05 > compare.md

The default --threshold of 1% keeps a 0.01% difference between two very steady timings from
reading as faster or slower.

Each timed table the two share is joined on its recorded axis columns; each point is labelled
same / faster / slower (B against A) by the recorded spread, as nvbench_compare does. Markdown on
stdout; exit status 2 if a recording is missing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cudalab.core.errors import CudalabError  # noqa: E402
from cudalab.report.compare.pairwise import compare_recordings, to_markdown  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n", 2)[2],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("a", type=Path, help="the reference recording (results/<gpu>/<profile>)")
    p.add_argument("b", type=Path, help="the recording compared with it")
    p.add_argument("--chapter", action="append", help="only this chapter (repeatable)")
    p.add_argument(
        "--threshold",
        type=float,
        default=0.01,
        help="relative difference always counted as 'same', however tight the spread (default 0.01, "
        "1%%; 0 applies the recorded spread alone)",
    )
    args = p.parse_args()
    try:
        results = compare_recordings(args.a, args.b, args.chapter, args.threshold)
    except CudalabError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    sys.stdout.write(
        to_markdown(
            results, f"{args.a.parent.name}/{args.a.name}", f"{args.b.parent.name}/{args.b.name}", args.threshold
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
