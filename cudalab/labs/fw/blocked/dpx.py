"""DPX against the instructions an Ampere build issues: what the fused add-min is worth on one GPU.

NVIDIA states that DPX instructions accelerate dynamic-programming algorithms by up to 7x on an
H100 compared with Ampere GPUs (its blog at Hopper's launch, March 2022). That figure holds two
things, the newer GPU (more SMs, higher clocks, faster memory) and the instructions. Without an
Ampere GPU only the second can be measured, and it can be measured exactly: the same kernel on
the same GPU in the same run, built with DPX (one VIADDMNMX per relaxation ``min(a + b, c)``)
and with ``-DNO_DPX``, which issues what the kernel's sm_80 build issues, an add (IMAD) and a min
(``kernels_cu/add_min.cuh``). The SASS of the three builds shows that this is so; chapter 04's
sweep and chapter 00's ceiling give the times.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from cudalab.labs.fw.blocked.kernels import MINPLUS_FILE, minplus_label, minplus_options

AMPERE_ARCH = "sm_80"  # the A100's compute capability: Ampere, the architecture NVIDIA's claim compares with
PHASE3 = "fw_minplus_phase3"
RELAXATIONS_PER_CHUNK = 8 * 8 * 16  # a thread's 8 x 8 cells times the KC = 16 k of a staged chunk
ADDS = ("IMAD", "IADD3", "VIADD", "IADD")
MINS = ("VIMNMX", "IMNMX")


def ampere_build(bf: int) -> tuple[str, str, tuple[str, ...], str]:
    """The min-plus kernel's sm_80 build, the code an A100 runs, as a (label, file, options, arch)
    build of chapter 04's SASS table: nvcc compiles it wherever it runs, whatever the GPU."""
    return (f"min-plus BF {bf}, {AMPERE_ARCH} build (A100)", MINPLUS_FILE, minplus_options(bf), AMPERE_ARCH)


def dpx_builds(bf: int) -> list[str]:
    """The labels, in chapter 04's SASS table, of the min-plus kernel's build with DPX, without it
    (``variants.sass_builds``) and for sm_80 (``ampere_build``), at blocking factor ``bf``."""
    return [minplus_label(bf, True), minplus_label(bf, False) + " (-DNO_DPX)", ampere_build(bf)[0]]


def instructions_per_relaxation(sass: pd.DataFrame) -> pd.DataFrame:
    """Per build of a SASS frame, phase 3's add, min and fused add-min instructions over the relaxations of its
    unrolled inner loop (``RELAXATIONS_PER_CHUNK``): about 1 fused, or 1 add and 1 min.
    Static counts: the loop's code, not how often it runs. Empty where the SASS is not here."""
    p3 = sass[sass["kernel"].eq(PHASE3)] if "kernel" in sass else sass.iloc[0:0]
    if p3.empty:
        return pd.DataFrame(columns=["build", "arch", "fused_add_min", "adds", "mins", "instructions"])
    relaxations = RELAXATIONS_PER_CHUNK
    rows = []
    for (build, arch), ops in p3.groupby(["build", "arch"], sort=False):
        count = ops.set_index("opcode")["count"]
        rows.append(
            {
                "build": build,
                "arch": arch,
                "fused_add_min": count.get("VIADDMNMX", 0) / relaxations,
                "adds": sum(count.get(op, 0) for op in ADDS) / relaxations,
                "mins": sum(count.get(op, 0) for op in MINS) / relaxations,
                "instructions": int(count.sum()),
            }
        )
    return pd.DataFrame(rows)


def _dpx(value) -> bool:
    return str(value) != "False"


def dpx_speedups(sweep: pd.DataFrame, add_min: pd.DataFrame) -> pd.DataFrame:
    """One row per pair of one GPU's timings without and with DPX: the add+min ceiling (chapter
    00's micro-benchmark, run here) and the min-plus kernel at each blocking factor and N of the
    sweep. ``dpx_speedup`` is the time without over the time with; each build's rate is also a
    fraction of its own instruction's ceiling. A pair with a wrong or skipped side is kept with
    its status and no speedup: it is never counted."""
    rows = []
    forms = add_min.set_index("kernel")
    if {"add_min_plain", "add_min_dpx"} <= set(forms.index):
        plain, fused = forms.loc["add_min_plain"], forms.loc["add_min_dpx"]
        both_ok = plain["status"] == "ok" and fused["status"] == "ok"
        rows.append(
            {
                "pair": "add+min ceiling",
                "n": pd.NA,
                "block_factor": pd.NA,
                "without_dpx_ms": plain["time_ms"],
                "with_dpx_ms": fused["time_ms"],
                "dpx_speedup": plain["time_ms"] / fused["time_ms"] if both_ok else float("nan"),
                "without_dpx_fraction_of_its_ceiling": 1.0,
                "with_dpx_fraction_of_its_ceiling": 1.0,
                "status": "ok" if both_ok else "not compared: a ceiling's check failed",
            }
        )
    ceilings = {
        False: forms["relaxations_per_s"].get("add_min_plain"),
        True: forms["relaxations_per_s"].get("add_min_dpx"),
    }
    minplus = sweep[sweep["variant"].str.startswith("min-plus")] if "variant" in sweep else sweep.iloc[0:0]
    minplus = minplus.assign(dpx=minplus["dpx"].map(_dpx)) if len(minplus) else minplus
    for (bf, n), pair in minplus.groupby(["block_factor", "n"], sort=True):
        sides = {bool(r.dpx): r for r in pair.itertuples()}
        if set(sides) != {True, False}:
            continue
        without, with_ = sides[False], sides[True]
        both_ok = without.status == "ok" and with_.status == "ok"
        work = float(n) ** 3
        rows.append(
            {
                "pair": f"min-plus BF {int(bf)}",
                "n": int(n),
                "block_factor": int(bf),
                "without_dpx_ms": without.time_ms,
                "with_dpx_ms": with_.time_ms,
                "dpx_speedup": without.time_ms / with_.time_ms if both_ok else float("nan"),
                "without_dpx_fraction_of_its_ceiling": work / (without.time_ms * 1e-3) / ceilings[False]
                if both_ok and ceilings[False]
                else float("nan"),
                "with_dpx_fraction_of_its_ceiling": work / (with_.time_ms * 1e-3) / ceilings[True]
                if both_ok and ceilings[True]
                else float("nan"),
                "status": "ok" if both_ok else f"not compared: {without.status} without DPX, {with_.status} with",
            }
        )
    return pd.DataFrame(rows)


@dataclass
class DpxFindings:
    """What chapter 04 says of DPX from its pairs: the text under the tables, the answer to its
    discussion question, and its headlines (the keyword arguments of ``ChapterHandle.headline``)."""

    text: str
    answer: str
    headlines: list[dict[str, Any]] = field(default_factory=list)


def _headline(key: str, row: pd.Series) -> dict[str, Any]:
    at = "" if pd.isna(row["n"]) else f" at N = {int(row['n']):,}"
    return {
        "key": key,
        "value": float(row["dpx_speedup"]),
        "unit": "x",
        "text": f"DPX over an add and a min, {row['pair']}{at}: {row['dpx_speedup']:.2f}x",
        "table": "add_min_ceiling" if pd.isna(row["n"]) else "blocking_factor_sweep",
        "rows": {"kernel": "add_min_dpx"}
        if pd.isna(row["n"])
        else {"n": int(row["n"]), "variant": minplus_label(int(row["block_factor"]), True)},
    }


def what_dpx_is_worth(pairs: pd.DataFrame, per_relaxation: pd.DataFrame, gpu: str) -> DpxFindings:
    """Say what the fused instruction gained on this GPU, from ``dpx_speedups`` and
    ``instructions_per_relaxation``: the ceiling's pair and the min-plus kernel's at its largest N
    (the blocking factor fastest there with DPX). Only pairs correct on both sides count."""
    ok = pairs[pairs["status"].eq("ok")] if len(pairs) else pairs
    if ok.empty:
        text = "No pair was timed correctly both without and with DPX here, so nothing is compared."
        return DpxFindings(text, text)
    fused = per_relaxation.loc[per_relaxation["build"].str.endswith("+ DPX"), "fused_add_min"]
    plain = per_relaxation.loc[per_relaxation["build"].str.endswith("(-DNO_DPX)"), "fused_add_min"]
    if len(plain) and float(plain.iloc[0]) > 0:
        text = (
            "In this recording the build without DPX issues VIADDMNMX too: ptxas fused its add and min, as it did "
            "before `add_min.cuh` kept them apart. Both builds run the same instruction, so this pair says nothing "
            "of what DPX is worth; a recording made since does."
        )
        return DpxFindings(text, text)
    if len(fused) and float(fused.iloc[0]) == 0:
        text = (
            f"{gpu} has no DPX instructions (they came with compute capability 9.0): both builds issue an add "
            "and a min per relaxation, so this pair shows two builds of the same code, not what DPX is worth."
        )
        return DpxFindings(text, text)
    rows: dict[str, pd.Series] = {}
    parts, answer = [], []
    ceiling = ok[ok["pair"].eq("add+min ceiling")]
    if len(ceiling):
        c = ceiling.iloc[0]
        rows["dpx_speedup_ceiling"] = c
        parts.append(f"{c['dpx_speedup']:.2f}x at the add+min ceiling")
    kernels = ok[ok["n"].notna()]
    if len(kernels):
        largest = kernels[kernels["n"].eq(kernels["n"].max())]
        k = largest.loc[largest["with_dpx_ms"].idxmin()]
        rows["dpx_speedup_minplus"] = k
        parts.append(
            f"{k['dpx_speedup']:.2f}x in the min-plus kernel at N = {int(k['n']):,} (BF {int(k['block_factor'])}), "
            f"which reaches {k['without_dpx_fraction_of_its_ceiling']:.0%} of its ceiling without DPX and "
            f"{k['with_dpx_fraction_of_its_ceiling']:.0%} with it"
        )
    best = max(float(r["dpx_speedup"]) for r in rows.values())
    text = f"**On {gpu}, DPX gains {' and '.join(parts)}.** "
    if best < 1.25:
        text += (
            "The fused instruction saves issue slots, not time: the pair's add runs on the FMA pipe (IMAD) and "
            "its min on the integer ALU, side by side, so two instructions per relaxation cost little more than one. "
        )
    elif best > 1.75:
        text += "One instruction in place of two nearly halves the time where issuing instructions is the limit. "
    text += (
        "NVIDIA's up-to-7x compares an H100 with Ampere GPUs on whole dynamic-programming codes: the newer GPU (more "
        "SMs, higher clocks, faster memory) is in that figure, and so are algorithms whose step fuses three "
        "operations into one DPX instruction, such as Smith-Waterman's maximum of three scores with a floor at zero "
        "(`__vimax3_s32_relu`). The instruction's own share in Floyd-Warshall's two-operation relaxation is what "
        "this pair measures."
    )
    answer.append(f"On {gpu}, DPX gains {' and '.join(parts)}.")
    answer.append(
        "The comparison holds everything but the instruction fixed: the same GPU, source and run, one VIADDMNMX "
        "against an IMAD and a min. An H100 against an Ampere GPU also measures more SMs, higher clocks and faster "
        "memory, and NVIDIA's 7x is for algorithms whose step fuses three operations into one instruction."
    )
    return DpxFindings(text, " ".join(answer), [_headline(key, row) for key, row in rows.items()])
