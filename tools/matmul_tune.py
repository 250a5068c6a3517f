#!/usr/bin/env python3
"""A wider autotuning sweep of chapter 05's register-blocked matmul than a chapter grid affords.

    python tools/matmul_tune.py --n 4096 --tiles 64 128 256 --depths 8 16 --thread-tiles 4 8 16

Times every BM x BN x BK / TM x TN configuration at n beside cuBLAS in the same run (checked
against it), prints them fastest first, and writes the table to --csv if given. Use it to choose
the tune_* grid of a profile for a new GPU; the chapter then shows and records its own sweep.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cudalab.core.errors import CudalabError  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=4096, help="matrix size (default 4096)")
    parser.add_argument("--tiles", type=int, nargs="+", default=[64, 128, 256], help="BM and BN values")
    parser.add_argument("--depths", type=int, nargs="+", default=[8, 16], help="BK values")
    parser.add_argument("--thread-tiles", type=int, nargs="+", default=[4, 8, 16], help="TM and TN values")
    parser.add_argument("--single-buffer", action="store_true", help="also time each shape with one shared buffer")
    parser.add_argument("--csv", type=Path, help="write the table here")
    args = parser.parse_args(argv)
    try:
        from cudalab.labs import matmul as mm

        kernels = mm.tuning_grid(args.tiles, args.depths, args.thread_tiles)
        if args.single_buffer:
            kernels += [
                mm.register_blocked(*(k.fields[c] for c in ("bm", "bn", "bk", "tm", "tn")), double_buffer=False)
                for k in list(kernels)
            ]
        frame = mm.sweep(kernels, [args.n], seed=475, timing={"min_total_s": 0.1}, desc="tuning")
    except CudalabError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    cols = ["kernel", "status", "time_ms", "gflop_per_s", "fraction_of_cublas", "registers_per_thread", "reason"]
    table = frame.sort_values("time_ms")[[c for c in cols if c in frame]]
    print(table.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    if args.csv:
        frame.to_csv(args.csv, index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
