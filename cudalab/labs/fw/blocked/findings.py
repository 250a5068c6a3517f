"""What chapter 04's tables say, computed from them: the "What we saw" of the chapter, as data and
sentences.

The notebook measures (or replays) its tables; this module reads them: the correctness checks,
the ladder's largest steps, the best kernel against the ceiling and chapter 01's basic kernel,
the blocking factor where the shared-memory kernel is fastest and where its phase-3 counters
peak, step 5's gain, and the file-to-file time split against its floors. Lab 001's figures
enter only through ``cite`` (the chapter's ``lab.cited``), so that each is rendered from the
profile with its citation, never typed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from cudalab.core.plots import duration
from cudalab.labs.fw.blocked.kernels import KernelSpec

PEAK_METRICS = ("global_load_GBps", "shared_load_GBps", "GOPS")
Cite = Callable[..., str]


@dataclass
class Findings:
    """The numbers the chapter's conclusions rest on, and ``lines``, the sentences that say them
    (Markdown bullets). The notebook records the headline numbers from these fields."""

    n_big: int
    shared_at: pd.DataFrame  # the shared-memory kernel at the sweep's largest N, by blocking factor
    best_shared: str  # its fastest variant there
    big_steps: pd.Series  # the ladder's three largest gains over the step before
    lab_note: str  # the lab's largest gains, cited ("" without published data)
    peaks: dict[str, int]  # blocking factor where each of PEAK_METRICS peaks, shared-memory kernel
    largest: pd.Series  # time per stage (ms) of the largest time-split case
    io_vs_compute: float
    lab_io: str
    big_row: Any = None  # the largest time-split case's row, where the recording has the file floors
    lines: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


def _gains(times: pd.Series) -> pd.Series:
    return (times.shift(1) / times).dropna()


def lab_peaks(pub_bf: pd.DataFrame | None) -> dict[str, int]:
    """The blocking factor where each of PEAK_METRICS peaks in lab 001's published table ({} without it)."""
    if pub_bf is None:
        return {}
    return {m: int(pub_bf.loc[pub_bf[m].idxmax(), "block_factor"]) for m in PEAK_METRICS}


def reuse_in_the_lab(pub_bf: pd.DataFrame | None, cite: Cite) -> str:
    """The clause that shows reuse growing with BF in lab 001's table: its GOPS kept rising past
    the blocking factor where its global load throughput peaked, each peak cited ("" without the
    table, or where the lab's peaks do not show it)."""
    peaks = lab_peaks(pub_bf)
    if not peaks or peaks["GOPS"] <= peaks["global_load_GBps"]:
        return ""
    gops, glob = peaks["GOPS"], peaks["global_load_GBps"]
    gops_cited = cite("GOPS", table="lab001_blocking_factor", block_factor=gops, fmt="{:.0f}")
    glob_cited = cite("global_load_GBps", table="lab001_blocking_factor", block_factor=glob)
    return (
        f", which is why the lab's GOPS kept rising to BF {gops} ({gops_cited} GOPS) although its global load "
        f"throughput peaked at BF {glob} ({glob_cited} GB/s)"
    )


def what_we_saw(
    *,
    check: pd.DataFrame,
    steps: pd.DataFrame,
    best: Any,
    basic_ms: float,
    ceiling: float,
    ladder_n: int,
    bf: pd.DataFrame,
    phases: pd.DataFrame,
    counter_n: int,
    counters: pd.DataFrame,
    ops: pd.DataFrame,
    split: pd.DataFrame,
    pub: pd.DataFrame | None,
    pub_bf: pd.DataFrame | None,
    pub_split: pd.DataFrame | None,
    cite: Cite,
) -> Findings:
    """The chapter's findings from its tables: ``check`` (correctness), ``steps`` (the ladder
    without the basic kernel, with ``speedup_vs_previous``), ``best`` (its fastest row),
    ``bf`` (the blocking-factor sweep with rates), ``phases`` (the phase split), ``counters``
    (phase 3's counters), ``ops`` (phase-3 SASS counts per build), ``split`` (the time split);
    ``pub``, ``pub_bf`` and ``pub_split`` the lab's published tables (or None), ``cite`` the
    chapter's ``lab.cited``."""
    bad = check[~check["status"].eq("ok")]
    ok_bf = bf[bf["status"].eq("ok")]
    n_big = int(ok_bf["n"].max())
    at_big = ok_bf[ok_bf["n"].eq(n_big)].set_index("variant")
    shared_at = at_big[at_big["kernel"].eq("shared")].sort_values("block_factor")
    best_shared = shared_at["time_ms"].idxmin()
    big_steps = steps.set_index("variant")["speedup_vs_previous"].dropna().sort_values(ascending=False).head(3)
    ok_phases = phases[phases["status"].eq("ok")]
    dominant = ok_phases[ok_phases["variant"].eq(best.variant)].set_index("phase")["time_ms"]
    largest = split[split["v"].eq(split["v"].max())].set_index("stage")["time_ms"]
    io_vs_compute = (largest["read input"] + largest["write output"]) / largest["compute"]
    solved_with = ""
    if "kernel" in split:  # recorded since the kernel is chosen per case
        kernel = split.loc[split["v"].eq(split["v"].max()), "kernel"].iloc[0]
        solved_with = f" ({KernelSpec.parse(kernel).label()})"

    lab_io = ""
    if pub_split is not None:
        v_lab = int(pub_split["v"].max())
        case = pub_split.loc[pub_split["v"].eq(v_lab), "case"].iloc[0]
        big_case = pub_split[pub_split["v"].eq(v_lab)].set_index("stage")["time_s"]
        compute = cite("time_s", table="lab001_time_split", case=case, stage="compute", fmt="{:.1f}")
        lab_io = (
            f" In lab 001 the computation dominated: {compute} s of {big_case.sum():.1f} s (the sum of its stages) "
            f"for V = {v_lab:,}."
        )
    big_row, file_floors = None, ""
    if "input_over_fromfile" in split:
        big_row = split[split["v"].eq(split["v"].max())].iloc[0]
        file_floors = (
            f" Against the floors of the same run, the input stages took {big_row.input_over_fromfile:.2f}x one "
            f"numpy.fromfile of the file and the output stages {big_row.output_over_host_write:.2f}x one write of "
            f"the output's bytes from a host array."
        )
    lab_note = ""
    if pub is not None:
        top = _gains(pub["time_s"]).sort_values(ascending=False).head(3)
        lab_note = (
            " In lab 001 the largest were "
            + ", ".join(f"{pub.loc[i, 'name']} ({g:.1f}x)" for i, g in top.items())
            + " (our division of its times)."
        )
    gops_best = counters.loc[counters["GOPS"].idxmax()]
    shared_counters = counters[counters["kernel"].eq("shared")].set_index("block_factor")
    peaks = {m: int(shared_counters[m].idxmax()) for m in PEAK_METRICS}
    lab_best = lab_peaks(pub_bf)
    lab_at = (
        f" (lab 001: BF {lab_best['global_load_GBps']}, {lab_best['shared_load_GBps']} and {lab_best['GOPS']})"
        if lab_best
        else ""
    )
    step5 = float(steps.loc[steps["step"].eq(5), "speedup_vs_previous"].iloc[0])
    lab_step5 = ""
    if pub is not None and {4, 5} <= set(pub["step"]):
        t4, t5 = (float(pub.loc[pub["step"].eq(s), "time_s"].iloc[0]) for s in (4, 5))
        lab_step5 = (
            f" against {t4 / t5:.2f}x in lab 001 ({cite('time_s', table='lab001_ladder', step=4, fmt='{:.3g}')} s over "
            f"{cite('time_s', table='lab001_ladder', step=5, fmt='{:.3g}')} s)"
        )
    same_code = ""
    if {"4. Shared memory", "5. Modify if-branch to min"} <= set(ops.index):
        if ops.loc["4. Shared memory"].equals(ops.loc["5. Modify if-branch to min"]):
            same_code = (
                " The SASS table shows why: for the lab's arithmetic select the compiler emits the same "
                "instructions as for `min()`, so the step changes no machine code here."
            )
    last_step = float(steps[steps["step"].eq(7)]["time_ms"].iloc[0])
    shared_times = ", ".join(f"BF {int(r.block_factor)}: {duration(r.time_ms)}" for r in shared_at.itertuples())
    lines = [
        f"- **Correctness**: {len(check) - len(bad)} of {len(check)} checks of the {check['variant'].nunique()} "
        "blocked variants match the reference; every timed run above was checked too.",
        f"- **Ladder at N = {ladder_n}**: the largest steps were "
        + ", ".join(f"{v} ({g:.1f}x)" for v, g in big_steps.items())
        + f".{lab_note} Step 1 took {duration(float(steps['time_ms'].iloc[0]))}, the last lab step "
        f"{duration(last_step)}.",
        f"- **Best kernel**: {best.variant}, {duration(best.time_ms)}: {best.relaxations_per_s / 1e12:.2f} T "
        f"relaxations/s, **{best.fraction_of_ceiling:.0%} of the add+min ceiling** ({ceiling / 1e12:.2f} T/s, this "
        f"run) and **{best.speedup_vs_basic16:.1f}x the basic 16x16 per-k kernel** ({duration(basic_ms)}). Phase 3 "
        f"took {dominant.get('phase 3', np.nan) / dominant.sum():.0%} of its time at N = {counter_n}.",
        f"- **Blocking factor** at N = {n_big}: the shared-memory kernel is fastest at BF "
        f"{int(shared_at.loc[best_shared, 'block_factor'])} ({shared_times}). Phase 3 of the shared-memory kernel "
        f"peaks in global load throughput at BF {peaks['global_load_GBps']}, in shared load throughput at BF "
        f"{peaks['shared_load_GBps']} and in GOPS at BF {peaks['GOPS']}{lab_at}; the highest GOPS of all are "
        f"{gops_best.variant}'s ({gops_best.GOPS:.0f}).",
        f"- **Step 5**, `min()` for the arithmetic select, gained {step5:.2f}x here{lab_step5}.{same_code}",
        f"- **Time split**: at V = {int(split['v'].max()):,} reading the input took {duration(largest['read input'])}, "
        f"the copies {duration(largest['H2D'] + largest['D2H'])}, the computation {duration(largest['compute'])}"
        f"{solved_with} and "
        f"writing the output {duration(largest['write output'])}: the files take {io_vs_compute:.1f}x as long as the "
        f"computation.{lab_io}{file_floors}",
    ]
    return Findings(
        n_big, shared_at, best_shared, big_steps, lab_note, peaks, largest, io_vs_compute, lab_io, big_row, lines
    )
