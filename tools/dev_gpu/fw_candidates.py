"""Issue 25, requirement 2: the best blocked Floyd-Warshall against the add+min ceiling of the same run.

Measures, with the chapter's harness (``labs.fw.harness.sweep``: every timed solve checked against
CuPy's min-plus Floyd-Warshall at its own N), the current best (min-plus BF 64) and the async
min-plus candidates at N = 8192 and 16384, the int32 add+min ceiling in the same run, and every
configuration's correctness at odd N (not a multiple of BF: padding) against the C reference.
Writes ``$OUT/fw/fw_candidates.csv``, ``$OUT/fw/correctness.csv`` and ``$OUT/fw/ceiling.csv``.

    python tools/dev_gpu/fw_candidates.py OUTDIR [N ...]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from cudalab.labs import int_ceiling  # noqa: E402
from cudalab.labs.fw import harness as fw  # noqa: E402
from cudalab.labs.fw.blocked import models, variants  # noqa: E402


def candidates() -> list[fw.Variant]:
    """At most 8 configurations: today's best and its BF 128 build, then the async step."""
    return (
        variants.minplus_variants([64, 128], dpx=[True])
        + variants.async_variants([64], [2, 3, 4])
        + (variants.async_variants([128], [2, 3]))
    )


def main() -> None:
    out = Path(sys.argv[1]) / "fw"
    sizes = [int(a) for a in sys.argv[2:]] or [8192, 16384]
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    chosen = candidates()
    check = fw.correctness(chosen, [33, 130, 1000], seed=2020)
    check.to_csv(out / "correctness.csv", index=False)
    print(check.pivot_table(index="variant", columns=["n", "input"], values="status", aggfunc="first").to_string())
    ceil = int_ceiling.add_min_ceiling()
    ceil.to_csv(out / "ceiling.csv", index=False)
    best = float(int_ceiling.ceiling(ceil)["relaxations_per_s"])
    print(ceil[["instruction", "relaxations_per_s", "status"]].to_string())
    gpu, _ = fw.sweep(chosen, sizes, seed=2020, cpu_max_n=0, timing={"min_repeats": 3, "min_total_s": 0})
    gpu = models.with_rates(gpu, best)
    gpu["ceiling_relaxations_per_s"] = best
    wrong = set(check.loc[~check["status"].isin(["ok", "skipped"]), "variant"])
    gpu["odd_n_checks"] = ["wrong" if v in wrong else "ok" for v in gpu["variant"]]
    gpu.to_csv(out / "fw_candidates.csv", index=False)
    cols = [
        "n",
        "variant",
        "time_ms",
        "relaxations_per_s",
        "fraction_of_ceiling",
        "status",
        "checked_against",
        "odd_n_checks",
    ]
    print(gpu[cols].to_string())
    print(f"total {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
