"""Quick look at chapter 04's kernels on the present GPU, before a full build: the add+min ceiling,
then one checked solve time per blocked variant at the given N, as a fraction of that ceiling.

    python tools/blocked_probe.py [N ...] [--ladder] [--basic]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cudalab.labs import int_ceiling  # noqa: E402
from cudalab.labs.fw import harness as fw  # noqa: E402
from cudalab.labs.fw.blocked import variants  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("sizes", nargs="*", type=int, default=[8192])
    p.add_argument("--ladder", action="store_true", help="also the lab's seven ladder steps")
    p.add_argument("--basic", action="store_true", help="also chapter 01's basic 16x16 kernel")
    args = p.parse_args()
    ceil = int_ceiling.add_min_ceiling()
    print(ceil[["instruction", "time_ms", "relaxations_per_s", "relaxations_per_clock_per_sm", "status"]].to_string())
    best = int_ceiling.ceiling(ceil)["relaxations_per_s"]
    chosen = (variants.ladder_variants() if args.ladder else []) + ([variants.basic_variant()] if args.basic else [])
    chosen += variants.blocking_factor_variants([32, 64, 128]) + variants.registers_variants([64, 128])
    gpu, _ = fw.sweep(chosen, args.sizes, seed=1, cpu_max_n=0, timing={"min_repeats": 2, "min_total_s": 0})
    gpu["relaxations_per_s"] = gpu["n"] ** 3 / (gpu["time_ms"] * 1e-3)
    gpu["fraction_of_ceiling"] = gpu["relaxations_per_s"] / best
    print(gpu[["n", "variant", "time_ms", "relaxations_per_s", "fraction_of_ceiling", "status"]].to_string())


if __name__ == "__main__":
    main()
