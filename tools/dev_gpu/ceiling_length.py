"""The add+min ceiling timed on launches of several lengths, interleaved, in one run (issue 44,
item 4): the chapters timed it on one wave of about 1 ms (4,096 chains) until b6865bc, the solves
it judges run for 36-284 ms. Does a longer launch read a different rate (clocks settling under
load, or the launch's ramp and drain)? Prints each length's median rate over the rounds. On an
H100 65,536 read 0.4% above 4,096 (docs/tuning-log.md), and is now the chapters' length.

    PYTHONPATH=$PWD python3 tools/dev_gpu/ceiling_length.py [ITERS ...]   (default 4096 65536)
"""

from __future__ import annotations

import sys

import pandas as pd

from cudalab.labs.int_ceiling import add_min_ceiling, ceiling

ROUNDS = 3


def main(lengths: list[int]) -> pd.DataFrame:
    rows = []
    for r in range(ROUNDS):
        for iters in lengths:
            best = ceiling(add_min_ceiling(iters=iters))
            rows.append(
                {
                    "round": r,
                    "iterations": iters,
                    "time_ms": best["time_ms"],
                    "T_per_s": best["relaxations_per_s"] / 1e12,
                    "instruction": best["instruction"],
                }
            )
    frame = pd.DataFrame(rows)
    print(frame.round(4).to_string(index=False))
    print(frame.groupby("iterations")[["time_ms", "T_per_s"]].median().round(4).to_string())
    return frame


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [4096, 65536])
