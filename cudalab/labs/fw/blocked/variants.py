"""Chapter 04's kernels as sweep variants, and its lists of every launch and every build.

Each family of variants is labelled as the chapter's tables name it: lab 001's ladder steps
(``blocked.ladder``), the shared-memory kernel at each blocking factor (``shared BF 64``), the
registers kernel (``registers BF 64 + DPX``), the min-plus kernel (``min-plus BF 64, 8x8 + DPX``)
and chapter 01's basic per-k kernel as the yardstick. ``launches`` lists what they launch, phase
by phase, for the occupancy table and the parallel compile; ``sass_builds`` what they compile,
for the SASS table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from cudalab.core.launch import Launch
from cudalab.labs.fw import harness as fw
from cudalab.labs.fw import per_k
from cudalab.labs.fw.blocked.kernels import (
    MINPLUS_FILE,
    REGISTERS_FILE,
    SHARED_FILE,
    minplus_label,
    minplus_options,
    minplus_phase_launches,
    minplus_plan,
    phase_launches,
    registers_label,
    registers_options,
    registers_phase_launches,
    registers_plan,
    shared_options,
    shared_plan,
    variant,
)
from cudalab.labs.fw.blocked.ladder import OPTIMIZATION_STEPS


def ladder_variants() -> list[fw.Variant]:
    """Lab 001's ladder, every step a sweep variant with its step number, the lab's name and our
    change as columns."""
    return [
        variant(s.label, s.make, step=s.step, lab_step=s.name, change=s.change, block_factor=s.bf)
        for s in OPTIMIZATION_STEPS
    ]


def blocking_factor_variants(block_factors: Sequence[int], file: str | Path | None = None) -> list[fw.Variant]:
    """The shared-memory kernel (``fw_blocked.cu``) at each blocking factor. ``file``, here and
    below: a copy of a kernel file to build instead (``Launch.from_copy``)."""
    return [
        variant(f"shared BF {bf}", lambda bf=bf: shared_plan(bf, file=file), block_factor=bf, kernel="shared")
        for bf in block_factors
    ]


def registers_variants(
    block_factors: Sequence[int] = (64,),
    dpx: Sequence[bool] = (True, False),
    tiles: Sequence[int] = (4,),
    file: str | Path | None = None,
) -> list[fw.Variant]:
    """The registers kernel at each blocking factor and register tile, with and without DPX."""
    return [
        variant(
            registers_label(bf, d, t),
            lambda bf=bf, d=d, t=t: registers_plan(bf, d, t, file),
            block_factor=bf,
            dpx=d,
            tile=t,
            kernel="registers",
        )
        for bf in block_factors
        for t in tiles
        for d in dpx
    ]


def minplus_variants(
    block_factors: Sequence[int] = (64,), dpx: Sequence[bool] = (True,), file: str | Path | None = None
) -> list[fw.Variant]:
    """The min-plus kernel (``fw_blocked_minplus.cu``) at each blocking factor, with or without DPX."""
    return [
        variant(
            minplus_label(bf, d),
            lambda bf=bf, d=d: minplus_plan(bf, d, file=file),
            block_factor=bf,
            dpx=d,
            tile=8,
            kernel="min-plus",
        )
        for bf in block_factors
        for d in dpx
    ]


def basic_label(block_edge: int) -> str:
    return f"basic {block_edge}x{block_edge} (chapter 01)"


def basic_variant(block_edge: int = 16) -> fw.Variant:
    """Chapter 01's basic per-k kernel, the yardstick of the blocked kernels."""
    return fw.Variant(
        basic_label(block_edge),
        {"kernel_family": "per-k", "kernel": "basic", "block_factor": np.nan},
        per_k.basic(block_edge),
    )


def _named(label: str, launch: Launch) -> Launch:
    """A launch labelled as the occupancy table lists it: variant, phase, block shape."""
    return replace(launch, labels={"variant": label, **launch.labels, "block": str(launch.block)})


def launches(
    block_factors: Sequence[int],
    registers_block_factors: Sequence[int] = (64,),
    dpx: Sequence[bool] = (True, False),
    basic_block_edge: int | None = 16,
    tiles: Sequence[int] = (4,),
    minplus_block_factors: Sequence[int] = (),
) -> list[Launch]:
    """Every kernel launch of chapter 04's variants, without compiling (the occupancy table and
    the parallel compile): the ladder's steps, the shared-memory kernel at each of
    ``block_factors``, the registers kernel at each of ``registers_block_factors`` and ``tiles``
    with each ``dpx``, the min-plus kernel at each of ``minplus_block_factors`` with each ``dpx``,
    and chapter 01's basic kernel on ``basic_block_edge`` squares (None: left out). One launch per
    variant and phase, labelled with the variant, the phase and the block shape, from the same
    descriptions the plans launch."""
    out = [_named(s.label, x) for s in OPTIMIZATION_STEPS for x in phase_launches(s.file, s.options, s.bf)]
    for bf in block_factors:
        out += [_named(f"shared BF {bf}", x) for x in phase_launches(SHARED_FILE, shared_options(bf), bf)]
    for bf in registers_block_factors:
        for t in tiles:
            for d in dpx:
                out += [_named(registers_label(bf, d, t), x) for x in registers_phase_launches(bf, d, t)]
    for bf in minplus_block_factors:
        for d in dpx:
            out += [_named(minplus_label(bf, d), x) for x in minplus_phase_launches(bf, d)]
    if basic_block_edge:
        basic = per_k.launch("basic", basic_block_edge)
        out.append(replace(basic, labels={"variant": basic_label(basic_block_edge), "phase": "per k", **basic.labels}))
    return out


def sass_builds(
    block_factors: Sequence[int], registers_block_factors: Sequence[int], minplus_block_factors: Sequence[int] = ()
) -> list[tuple[str, str, tuple[str, ...]]]:
    """(label, file, options) of every kernel build of chapter 04, for its SASS table."""
    builds = [(s.label, s.file, s.options) for s in OPTIMIZATION_STEPS]
    builds += [(f"shared BF {b}", SHARED_FILE, shared_options(b)) for b in block_factors]
    builds += [
        (f"registers BF {b}" + (" + DPX" if d else " (-DNO_DPX)"), REGISTERS_FILE, registers_options(b, d))
        for b in registers_block_factors
        for d in (True, False)
    ]
    builds += [
        (f"registers BF {b}, 8x8 + DPX", REGISTERS_FILE, registers_options(b, True, 8)) for b in registers_block_factors
    ]
    builds += [
        (minplus_label(b, d) + ("" if d else " (-DNO_DPX)"), MINPLUS_FILE, minplus_options(b, d))
        for b in minplus_block_factors
        for d in (True, False)
    ]
    return builds
