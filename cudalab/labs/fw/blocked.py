"""Blocked Floyd-Warshall (lab 001): padding, the three-phase launch plan, the lab's optimization
ladder, the blocking-factor family and the project's own register-tiled kernel.

The blocked kernels work in the NTHU convention (1073741823 = unreachable, so that a sum of two
never overflows and ``min`` needs no branch) on a matrix padded to a multiple of the blocking
factor BF; padding vertices are unreachable from everything and have a zero diagonal, so they
change no distance. A plan converts the labs' -1 convention in and out around the solve, so that
every blocked kernel is checked by the same harness as chapters 01-03 (``labs.fw.harness``).
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from cudalab.core.check import compare
from cudalab.core.errors import CountersUnavailable, LaunchRefused
from cudalab.core.gpu import require_cupy
from cudalab.core.kernels import load_kernel
from cudalab.core.launch import refusal_types
from cudalab.core.sweep import progress
from cudalab.core.timing import summarize
from cudalab.labs.fw import harness as fw
from cudalab.labs.fw import per_k
from cudalab.labs.fw.graphs import NO_EDGE, UNREACHABLE, gen_matrix
from cudalab.labs.fw.reference import floyd_warshall_cupy
from cudalab.toolchain import nsight

INF = UNREACHABLE


def padded_size(n: int, bf: int) -> int:
    """The smallest multiple of the blocking factor that holds n vertices."""
    return fw.ceil_div(n, bf) * bf


MAX_PADDED = 46340  # the kernels index the matrix with int32: size^2 must stay below 2^31


def require_int32_indexable(size: int) -> None:
    """Refuse, with the reason, a padded matrix whose entries an int32 index cannot reach."""
    if size > MAX_PADDED:
        raise LaunchRefused(
            f"a padded matrix of {size} x {size} has more than 2^31 entries; the blocked kernels "
            f"index it with int32 (at most {MAX_PADDED} vertices after padding)"
        )


def to_blocked(d_lab, bf: int):
    """A device matrix in the labs' convention, padded to a multiple of ``bf`` in NTHU's."""
    cp = require_cupy()
    n = d_lab.shape[0]
    size = padded_size(n, bf)
    require_int32_indexable(size)
    out = cp.full((size, size), INF, dtype=cp.int32)
    out[:n, :n] = cp.where(d_lab < 0, INF, d_lab)
    pad = cp.arange(n, size)
    out[pad, pad] = 0
    return out


def from_blocked(work, n: int):
    """The n x n answer of a padded NTHU-convention matrix, in the labs' convention."""
    cp = require_cupy()
    d = work[:n, :n]
    return cp.where(d >= INF, NO_EDGE, d).astype(cp.int32)


@dataclass
class Phase:
    """One phase's launch: its kernel, grid for R tiles per side, block, shared bytes and args."""

    name: str
    kernel: Any
    grid: Callable[[int], tuple[int, ...]]
    block: tuple[int, ...]
    shared_mem: int = 0
    args: Callable[[Any, int, int], tuple] = lambda work, n, r: (work, np.int32(n), np.int32(r))


@dataclass
class BlockedPlan:
    """Rounds r = 0..R-1 of the phases, on a matrix padded to a multiple of ``bf``."""

    bf: int
    phases: tuple[Phase, ...]

    def prepare(self, d_input):
        return to_blocked(d_input, self.bf)

    def launches(self, work) -> Iterator[fw.Launch | fw.LanesMeet]:
        n = work.shape[0]
        rounds = n // self.bf
        for r in range(rounds):
            for p in self.phases:
                yield self.launch(p, work, r)

    def launch(
        self, p: Phase, work, r: int, *, grid: tuple[int, ...] | None = None, args: tuple | None = None, lane: int = 0
    ) -> fw.Launch:
        """Phase ``p`` of round ``r`` (its own grid and arguments unless given)."""
        n = work.shape[0]
        return fw.Launch(
            p.kernel,
            grid or p.grid(n // self.bf),
            p.block,
            args or p.args(work, n, r),
            p.shared_mem,
            lane=lane,
            phase=p.name,
        )

    def finish(self, work, n: int):
        return from_blocked(work, n)


@dataclass
class LookaheadPlan(BlockedPlan):
    """Rounds with a look-ahead (``fw_blocked_minplus.cu``): round r's phase 3 first relaxes the
    tiles of row and column r + 1 on a second lane, which then runs round r + 1's phases 1 and 2
    there, beside the rest of round r's phase 3 on the first lane. The serial phases 1 and 2,
    which fill one SM and 2(R - 1) tiles, no longer leave the GPU waiting between rounds.

    Order: phases 1 and 2 of a round read only tiles that the look-ahead part has finished, and
    the rest of a round's phase 3 reads pivot tiles that phase 2 finished before the lanes met.

    The second lane is a stream of the highest priority, so that its blocks are dispatched as
    SMs free up rather than after the running phase 3. A CUDA graph drops that priority (CuPy
    instantiates graphs without node priorities), so from ``PLAIN_LAUNCHES_FROM`` vertices on,
    where a round is long enough for Python's launches to keep ahead of the GPU, the solve is
    launched plainly instead of captured."""

    PLAIN_LAUNCHES_FROM = 4096

    def capture(self, work) -> bool:
        """Whether the solver should capture this solve in a CUDA graph."""
        return work.shape[0] < self.PLAIN_LAUNCHES_FROM

    def launches(self, work) -> Iterator[fw.Launch | fw.LanesMeet]:
        n = work.shape[0]
        rounds = n // self.bf
        p1, p2, p3 = self.phases
        yield fw.LANES_MEET
        yield self.launch(p1, work, 0, lane=1)
        yield self.launch(p2, work, 0, lane=1)
        for r in range(rounds):
            yield fw.LANES_MEET
            if r + 1 == rounds:
                yield self.launch(p3, work, r)
                break
            yield self.launch(p3, work, r, args=(work, np.int32(n), np.int32(r), np.int32(2)))
            yield self.launch(p3, work, r, grid=(rounds, 2), args=(work, np.int32(n), np.int32(r), np.int32(1)), lane=1)
            yield self.launch(p1, work, r + 1, lane=1)
            yield self.launch(p2, work, r + 1, lane=1)
        yield fw.LANES_MEET


PHASE_GRIDS: dict[str, Callable[[int], tuple[int, ...]]] = {
    "phase 1": lambda rounds: (1, 1),
    "phase 2": lambda rounds: (rounds, 2),  # blockIdx.y 0: pivot row, 1: pivot column
    "phase 3": lambda rounds: (rounds, rounds),
}


GLOBAL_FILE, SHARED_FILE, REGISTERS_FILE = "fw_blocked_global.cu", "fw_blocked.cu", "fw_blocked_registers.cu"
MINPLUS_FILE = "fw_blocked_minplus.cu"


def global_options(coalesced: bool, unroll: bool, bf: int = 32) -> tuple[str, ...]:
    return (f"-DBF={bf}",) + (("-DCOALESCED",) if coalesced else ()) + (("-DUNROLL",) if unroll else ())


def shared_options(bf: int, select_by_arithmetic: bool = False, maxrregcount: int | None = None) -> tuple[str, ...]:
    return (
        (f"-DBF={bf}",)
        + (("-DSELECT_BY_ARITHMETIC",) if select_by_arithmetic else ())
        + ((f"--maxrregcount={maxrregcount}",) if maxrregcount else ())
    )


def registers_options(bf: int, dpx: bool = True, tile: int = 4) -> tuple[str, ...]:
    return (f"-DBF={bf}",) + (() if tile == 4 else (f"-DTILE={tile}",)) + (() if dpx else ("-DNO_DPX",))


def phase_launches(filename: str, options: tuple[str, ...], bf: int) -> list[dict[str, Any]]:
    """Each phase's kernel and launch in a build of ``fw_blocked_global.cu`` or ``fw_blocked.cu``,
    without compiling (no GPU needed): ``phase``, ``file``, ``kernel``, ``options``, ``threads``, ``block``
    (x, y) and ``dynamic_shared_bytes``. ``plan_for_build`` launches exactly these."""
    if filename == GLOBAL_FILE:
        return [
            {
                "phase": name,
                "file": GLOBAL_FILE,
                "kernel": "fw_blocked_global",
                "options": options,
                "threads": bf * bf,
                "block": (bf, bf),
                "dynamic_shared_bytes": 0,
            }
            for name in PHASE_GRIDS
        ]
    if filename == SHARED_FILE:
        t = min(bf, 32)
        tile = 4 * bf * bf
        return [
            {
                "phase": name,
                "file": SHARED_FILE,
                "kernel": f"fw_blocked_phase{p}",
                "options": options,
                "threads": t * t,
                "block": (t, t),
                "dynamic_shared_bytes": tile if p == 1 else 2 * tile,
            }
            for p, name in enumerate(PHASE_GRIDS, start=1)
        ]
    raise LaunchRefused(f"no three-phase plan for {filename}")


def registers_phase_launches(bf: int = 64, dpx: bool = True, tile: int = 4) -> list[dict[str, Any]]:
    """``phase_launches`` of the project's kernel: phases 1-2 of ``fw_blocked.cu`` at ``bf``, phase 3
    register-tiled (``fw_blocked_registers.cu``, ``tile`` x ``tile`` cells per thread), as
    ``registers_plan`` launches them."""
    phase3 = {
        "phase": "phase 3",
        "file": REGISTERS_FILE,
        "kernel": "fw_blocked_registers_phase3",
        "options": registers_options(bf, dpx, tile),
        "threads": (bf // tile) ** 2,
        "block": (bf // tile, bf // tile),
        "dynamic_shared_bytes": 4 * ((bf + 4) + bf) * bf,
    }
    return phase_launches(SHARED_FILE, shared_options(bf), bf)[:2] + [phase3]


def minplus_options(bf: int = 64, dpx: bool = True) -> tuple[str, ...]:
    return (f"-DBF={bf}",) + (() if dpx else ("-DNO_DPX",))


def minplus_shared_bytes(bf: int) -> int:
    """Dynamic shared memory of the min-plus tile kernel: two stages of a KC = BF/4 chunk of A,
    transposed with rows padded by 4, and of B (``fw_blocked_minplus.cu``)."""
    kc = bf // 4
    return 2 * 4 * (kc * (bf + 4) + kc * bf)


def minplus_phase_launches(bf: int = 64, dpx: bool = True) -> list[dict[str, Any]]:
    """``phase_launches`` of ``fw_blocked_minplus.cu``: phase 1 on 32 x 32 threads with cells in
    registers, phases 2 and 3 the same min-plus tile product on (BF/8)^2 threads of 8 x 8 cells."""
    opts, t = minplus_options(bf, dpx), bf // 8
    if bf not in (64, 128):
        raise LaunchRefused(f"fw_blocked_minplus.cu builds for BF 64 or 128, not {bf}")
    return [
        {
            "phase": "phase 1",
            "file": MINPLUS_FILE,
            "kernel": "fw_minplus_phase1",
            "options": opts,
            "threads": 1024,
            "block": (32, 32),
            "dynamic_shared_bytes": 0,
        }
    ] + [
        {
            "phase": f"phase {p}",
            "file": MINPLUS_FILE,
            "kernel": f"fw_minplus_phase{p}",
            "options": opts,
            "threads": t * t,
            "block": (t, t),
            "dynamic_shared_bytes": minplus_shared_bytes(bf),
        }
        for p in (2, 3)
    ]


def _phase(spec: dict[str, Any], kernel: Any = None) -> Phase:
    """A ``Phase`` from its launch (``phase_launches``), the kernel compiled unless given."""
    kernel = kernel if kernel is not None else load_kernel(spec["file"], spec["kernel"], options=spec["options"])
    return Phase(spec["phase"], kernel, PHASE_GRIDS[spec["phase"]], spec["block"], spec["dynamic_shared_bytes"])


def plan_for_build(filename: str, options: tuple[str, ...], bf: int) -> BlockedPlan:
    """The three-phase plan of a build of ``fw_blocked_global.cu`` or ``fw_blocked.cu``."""
    specs = phase_launches(filename, options, bf)
    if filename == GLOBAL_FILE:
        k = load_kernel(GLOBAL_FILE, "fw_blocked_global", options=options)
        return BlockedPlan(
            bf,
            tuple(
                dataclasses.replace(
                    _phase(spec, k), args=lambda work, n, r, p=p: (work, np.int32(n), np.int32(r), np.int32(p))
                )
                for p, spec in enumerate(specs, start=1)
            ),
        )
    return BlockedPlan(bf, tuple(_phase(spec) for spec in specs))


def global_plan(coalesced: bool, unroll: bool, bf: int = 32) -> BlockedPlan:
    """Ladder steps 1-3: every operand in global memory (``fw_blocked_global.cu``)."""
    return plan_for_build(GLOBAL_FILE, global_options(coalesced, unroll, bf), bf)


def shared_plan(bf: int, select_by_arithmetic: bool = False, maxrregcount: int | None = None) -> BlockedPlan:
    """Ladder steps 4-7 and the blocking-factor sweep: each phase in shared memory (``fw_blocked.cu``)."""
    return plan_for_build(SHARED_FILE, shared_options(bf, select_by_arithmetic, maxrregcount), bf)


def registers_plan(bf: int = 64, dpx: bool = True, tile: int = 4) -> BlockedPlan:
    """The project's kernel: phases 1-2 of ``fw_blocked.cu``, phase 3 register-tiled
    (``fw_blocked_registers.cu``, ``tile`` x ``tile`` cells per thread), with or without the DPX
    add-min instruction."""
    base = shared_plan(bf)
    phase3 = _phase(registers_phase_launches(bf, dpx, tile)[2])
    return BlockedPlan(bf, base.phases[:2] + (phase3,))


def minplus_plan(bf: int = 64, dpx: bool = True, lookahead: bool = True) -> BlockedPlan:
    """The project's best kernel: every phase of ``fw_blocked_minplus.cu``, phases 2 and 3 as
    min-plus products of 8 x 8 register tiles, with or without the DPX add-min instruction,
    rounds overlapped by a look-ahead (``LookaheadPlan``) unless ``lookahead`` is False."""
    p1, p2, p3 = (_phase(spec) for spec in minplus_phase_launches(bf, dpx))
    p3 = dataclasses.replace(p3, args=lambda work, n, r: (work, np.int32(n), np.int32(r), np.int32(0)))
    return (LookaheadPlan if lookahead else BlockedPlan)(bf, (p1, p2, p3))


def variant(label: str, make: Callable[[], BlockedPlan], **fields: Any) -> fw.Variant:
    """A blocked kernel as a sweep variant: compiled on first use, the same plan for every n
    (padding happens in ``prepare``)."""
    plan = functools.cache(make)
    return fw.Variant(label, {"kernel_family": "blocked", **fields}, lambda n: plan())


@dataclass(frozen=True)
class LadderStep:
    """One step of lab 001's optimization ladder: a build of one of our kernel files."""

    step: int
    name: str  # the lab's name for the step
    change: str  # what it changes, in our words
    bf: int
    file: str
    options: tuple[str, ...]

    def make(self) -> BlockedPlan:
        return plan_for_build(self.file, self.options, self.bf)


LADDER: tuple[LadderStep, ...] = (
    LadderStep(
        1,
        "GPU baseline",
        "blocked, all in global memory, threads walk down columns",
        32,
        GLOBAL_FILE,
        global_options(coalesced=False, unroll=False),
    ),
    LadderStep(2, "Coalesced memory access", "threads walk along rows", 32, GLOBAL_FILE, global_options(True, False)),
    LadderStep(3, "Unroll", "#pragma unroll on the k loop", 32, GLOBAL_FILE, global_options(True, True)),
    LadderStep(
        4,
        "Shared memory",
        "each phase stages its tiles in shared memory",
        32,
        SHARED_FILE,
        shared_options(32, select_by_arithmetic=True),
    ),
    LadderStep(
        5, "Modify if-branch to min", "min() instead of an arithmetic select", 32, SHARED_FILE, shared_options(32)
    ),
    LadderStep(
        6, "Large blocking factor", "BF 64 on 32 x 32 threads, 4 cells each", 64, SHARED_FILE, shared_options(64)
    ),
    LadderStep(7, "Occupancy optimization", "-maxrregcount=22", 64, SHARED_FILE, shared_options(64, maxrregcount=22)),
)


def sass_builds(
    block_factors: Sequence[int], expert_block_factors: Sequence[int], minplus_block_factors: Sequence[int] = ()
) -> list[tuple[str, str, tuple[str, ...]]]:
    """(label, file, options) of every kernel build of chapter 04, for its SASS table."""
    builds = [(f"{s.step}. {s.name}", s.file, s.options) for s in LADDER]
    builds += [(f"shared BF {b}", SHARED_FILE, shared_options(b)) for b in block_factors]
    builds += [
        (f"registers BF {b}" + (" + DPX" if d else " (-DNO_DPX)"), REGISTERS_FILE, registers_options(b, d))
        for b in expert_block_factors
        for d in (True, False)
    ]
    builds += [
        (f"registers BF {b}, 8x8 + DPX", REGISTERS_FILE, registers_options(b, True, 8)) for b in expert_block_factors
    ]
    builds += [
        (_minplus_label(b, d) + ("" if d else " (-DNO_DPX)"), MINPLUS_FILE, minplus_options(b, d))
        for b in minplus_block_factors
        for d in (True, False)
    ]
    return builds


def ladder_variants() -> list[fw.Variant]:
    return [
        variant(f"{s.step}. {s.name}", s.make, step=s.step, lab_step=s.name, change=s.change, block_factor=s.bf)
        for s in LADDER
    ]


def _expert_label(bf: int, dpx: bool, tile: int = 4) -> str:
    return f"registers BF {bf}" + ("" if tile == 4 else f", {tile}x{tile}") + (" + DPX" if dpx else "")


def expert_variants(
    block_factors: Sequence[int] = (64,), dpx: Sequence[bool] = (True, False), tiles: Sequence[int] = (4,)
) -> list[fw.Variant]:
    """The register-tiled kernel at each blocking factor and register tile, with and without DPX."""
    return [
        variant(
            _expert_label(bf, d, t),
            lambda bf=bf, d=d, t=t: registers_plan(bf, d, t),
            block_factor=bf,
            dpx=d,
            tile=t,
            kernel="registers",
        )
        for bf in block_factors
        for t in tiles
        for d in dpx
    ]


def _minplus_label(bf: int, dpx: bool) -> str:
    return f"min-plus BF {bf}, 8x8" + (" + DPX" if dpx else "")


def minplus_variants(block_factors: Sequence[int] = (64,), dpx: Sequence[bool] = (True,)) -> list[fw.Variant]:
    """The min-plus kernel (``fw_blocked_minplus.cu``) at each blocking factor, with or without DPX."""
    return [
        variant(
            _minplus_label(bf, d),
            lambda bf=bf, d=d: minplus_plan(bf, d),
            block_factor=bf,
            dpx=d,
            tile=8,
            kernel="min-plus",
        )
        for bf in block_factors
        for d in dpx
    ]


def blocking_factor_variants(block_factors: Sequence[int]) -> list[fw.Variant]:
    return [
        variant(f"shared BF {bf}", lambda bf=bf: shared_plan(bf), block_factor=bf, kernel="shared")
        for bf in block_factors
    ]


def basic_variant(block: int = 16) -> fw.Variant:
    """Chapter 01's basic per-k kernel, the yardstick of the performance target."""
    return fw.Variant(
        f"basic {block}x{block} (chapter 01)",
        {"kernel_family": "per-k", "kernel": "basic", "block_factor": np.nan},
        per_k.basic(block),
    )


def launches(
    block_factors: Sequence[int],
    expert_block_factors: Sequence[int] = (64,),
    dpx: Sequence[bool] = (True, False),
    basic_block: int | None = 16,
    tiles: Sequence[int] = (4,),
    minplus_block_factors: Sequence[int] = (),
) -> list[dict[str, Any]]:
    """Every kernel launch of chapter 04's variants, without compiling (the occupancy table): the
    ladder's steps, the shared-memory kernel at each of ``block_factors``, the register-tiled one
    at each of ``expert_block_factors`` with each ``dpx``, the min-plus kernel at each of
    ``minplus_block_factors`` with each ``dpx``, and chapter 01's basic kernel on
    ``basic_block`` squares (None: left out). One dict per variant and phase, named by the
    variant's label, the phase and the block shape, from the same ``phase_launches`` the plans
    launch."""
    out: list[dict[str, Any]] = []

    def add(label: str, specs: list[dict[str, Any]]) -> None:
        out.extend(
            {
                "variant": label,
                "phase": spec["phase"],
                "block": "x".join(map(str, spec["block"])),
                **{k: v for k, v in spec.items() if k not in ("phase", "block")},
            }
            for spec in specs
        )

    for s in LADDER:
        add(f"{s.step}. {s.name}", phase_launches(s.file, s.options, s.bf))
    for bf in block_factors:
        add(f"shared BF {bf}", phase_launches(SHARED_FILE, shared_options(bf), bf))
    for bf in expert_block_factors:
        for t in tiles:
            for d in dpx:
                add(_expert_label(bf, d, t), registers_phase_launches(bf, d, t))
    for bf in minplus_block_factors:
        for d in dpx:
            add(_minplus_label(bf, d), minplus_phase_launches(bf, d))
    if basic_block:
        spec = per_k.launch("basic", basic_block)
        out.append({"variant": f"basic {basic_block}x{basic_block} (chapter 01)", "phase": "per k", **spec})
    return out


@dataclass(frozen=True)
class KernelSpec:
    """A blocked kernel by name, as recorded data can carry it: ``shared`` (``fw_blocked.cu``),
    ``registers`` (``fw_blocked_registers.cu``'s phase 3) or ``minplus``
    (``fw_blocked_minplus.cu``), at blocking factor ``bf``."""

    kind: str
    bf: int
    dpx: bool = True
    tile: int = 4

    def plan(self) -> BlockedPlan:
        if self.kind == "shared":
            return shared_plan(self.bf)
        if self.kind == "registers":
            return registers_plan(self.bf, self.dpx, self.tile)
        if self.kind == "minplus":
            return minplus_plan(self.bf, self.dpx)
        raise LaunchRefused(f"unknown blocked kernel kind {self.kind!r} (shared, registers or minplus)")

    def label(self) -> str:
        if self.kind == "shared":
            return f"shared BF {self.bf}"
        if self.kind == "minplus":
            return _minplus_label(self.bf, self.dpx)
        return _expert_label(self.bf, self.dpx, self.tile)

    @classmethod
    def parse(cls, text: str) -> KernelSpec:
        """'minplus:64', 'minplus:128:nodpx', 'registers:64', 'registers:64:t8',
        'registers:128:t8:nodpx' or 'shared:32'."""
        kind, _, rest = text.partition(":")
        bf, *flags = rest.split(":")
        tiles = [f[1:] for f in flags if f.startswith("t") and f[1:] in ("4", "8")]
        known = all(
            f in ("dpx", "nodpx") or (kind == "registers" and f.startswith("t") and f[1:] in ("4", "8")) for f in flags
        )
        if (
            kind not in ("shared", "registers", "minplus")
            or not bf.isdigit()
            or not known
            or (kind == "shared" and flags)
            or (kind == "minplus" and bf not in ("64", "128"))
        ):
            raise LaunchRefused(
                f"kernel {text!r}: expected shared:BF, registers:BF[:t4|:t8][:nodpx] or minplus:64|128[:nodpx]"
            )
        if kind == "minplus":
            return cls(kind, int(bf), "nodpx" not in flags, 8)
        return cls(kind, int(bf), "nodpx" not in flags, int(tiles[-1]) if tiles else 4)

    @classmethod
    def from_row(cls, row: Any) -> KernelSpec:
        """The kernel of a row of the blocking-factor sweep (a recording made before the register
        tile was a column means 4 x 4)."""
        kernel = str(getattr(row, "kernel", ""))
        dpx = str(getattr(row, "dpx", True)) != "False"
        if kernel.startswith("min-plus"):
            return cls("minplus", int(row.block_factor), dpx=dpx, tile=8)
        tile = getattr(row, "tile", 4)
        return cls(
            "registers" if kernel.startswith("registers") else "shared",
            int(row.block_factor),
            dpx=dpx,
            tile=int(tile) if tile == tile and tile is not None else 4,
        )

    def as_text(self) -> str:
        if self.kind == "shared":
            return f"shared:{self.bf}"
        if self.kind == "minplus":
            return f"minplus:{self.bf}" + ("" if self.dpx else ":nodpx")
        return f"registers:{self.bf}" + ("" if self.tile == 4 else f":t{self.tile}") + ("" if self.dpx else ":nodpx")


def phase_split(variants: Sequence[fw.Variant], n: int, seed: int, repeats: int = 3) -> pd.DataFrame:
    """Time per phase of each blocked variant at n: every launch bracketed by CUDA events on
    plain stream launches, summed per phase, median over ``repeats`` solves after a warm-up.
    Each solve's answer is checked against CuPy's min-plus Floyd-Warshall."""
    cp = require_cupy()
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        d_input = cp.asarray(gen_matrix(n, seed))
        reference = floyd_warshall_cupy(d_input)
    rows = []
    for v in progress(variants, desc=f"phase split, N = {n}", total=len(variants)):
        base = {"n": n, "variant": v.label, **v.fields}
        plan = v.plan(n)
        try:
            with stream:
                start = plan.prepare(d_input)
                work = cp.empty_like(start)
                solver = fw.Solver(plan, work, use_graph=False, stream=stream)
                per_solve = []
                for _ in range(repeats + 1):
                    cp.copyto(work, start)
                    per_solve.append(_timed_launches(solver, stream))
                status = compare(plan.finish(work, n), reference, "CuPy's min-plus reference")
        except refusal_types() as exc:
            rows.append({**base, "status": "skipped", "reason": f"{type(exc).__name__}: {exc}"})
            continue
        times = pd.DataFrame(per_solve[1:])
        for phase in times.columns:
            rows.append(
                {
                    **base,
                    "phase": phase,
                    "launches": sum(x.phase == phase for x in solver.launches),
                    **summarize(times[phase].to_numpy()),
                    **status,
                }
            )
    return pd.DataFrame(rows)


def _timed_launches(solver: fw.Solver, stream) -> dict[str, float]:
    cp = require_cupy()
    events = [cp.cuda.Event() for _ in range(len(solver.launches) + 1)]
    events[0].record(stream)
    for i, x in enumerate(solver.launches):  # one lane: every launch after the one before
        x.kernel(x.grid, x.block, x.args, shared_mem=x.shared_mem, stream=stream)
        events[i + 1].record(stream)
    events[-1].synchronize()
    totals: dict[str, float] = {}
    for i, x in enumerate(solver.launches):
        totals[x.phase] = totals.get(x.phase, 0.0) + cp.cuda.get_elapsed_time(events[i], events[i + 1])
    return totals


def shared_loads_per_relaxation(spec: dict[str, Any]) -> float:
    """Ints a phase-3 thread loads from shared memory per relaxation: 2 (d[i][k] and d[k][j]) for
    ``fw_blocked.cu``; 2r / r^2 for an r x r register tile (0.5 at 4 x 4, 0.25 at 8 x 8)."""
    if spec["kind"] == "shared":
        return 2.0
    tile = 8 if spec["kind"] == "minplus" else int(spec.get("tile", 4))
    return 2.0 / tile


def operand_model(kernel: str, bf: int, tile: int = 4) -> dict[str, Any]:
    """What one phase-3 thread does per k, by the kernel's source: cells it owns, ints and
    shared-memory load instructions it needs for them, relaxations it makes, and DRAM bytes per
    relaxation of its tile (8 / BF: each round reads and writes a cell once for BF relaxations).

    ``kernel``: ``shared`` (``fw_blocked.cu``: scalar loads of d[i][k] and d[k][j] per cell),
    ``registers`` (r x r tiles, operands in 16-byte loads) or ``min-plus`` (8 x 8 tiles, the same
    loads, operands staged in chunks by asynchronous copies)."""
    if kernel == "shared":
        cells = (bf // min(bf, 32)) ** 2
        ints, loads = 2 * cells, 2 * cells
    else:
        r = 8 if kernel == "min-plus" else tile
        cells, ints = r * r, 2 * r
        loads = ints // 4
    return {
        "cells_per_thread": cells,
        "ints_per_k": ints,
        "shared_loads_per_k": loads,
        "relaxations_per_k": cells,
        "relaxations_per_shared_load": cells / loads,
        "dram_bytes_per_relaxation": 8.0 / bf,
    }


def kernel_label(row: Any) -> str:
    """A sweep row's kernel as the chapter's figures name it: ``shared``, ``registers 4x4 + DPX``,
    ``min-plus 8x8`` ... (a recording made before the register tile was a column means 4 x 4)."""
    kernel = str(getattr(row, "kernel", ""))
    if kernel.startswith("registers") or kernel.startswith("min-plus"):
        tile = getattr(row, "tile", 4)
        tile = int(tile) if tile is not None and tile == tile else 4
        dpx = str(getattr(row, "dpx", True)) != "False"
        return f"{kernel.split(' ')[0]} {tile}x{tile}" + (" + DPX" if dpx else "")
    return kernel


def operand_table(sweep: pd.DataFrame) -> pd.DataFrame:
    """``operand_model`` of each register-tiled and min-plus variant of a blocking-factor sweep
    (``with_rates`` applied) and of the shared-memory kernel at BF 64, beside its fraction of
    the ceiling at each N (``fraction_at_N``, where it ran correctly). ``attrs["best"]`` maps each
    N to the fastest correct row there."""
    ok = sweep[sweep["status"].eq("ok")]
    rows = []
    for variant, group in ok.groupby("variant", sort=False):
        first = group.iloc[0]
        label = kernel_label(first)
        kind = "shared" if label == "shared" else label.split(" ")[0]
        bf = int(first["block_factor"])
        if kind == "shared" and bf != 64:
            continue
        tile = int(label.split(" ")[1].split("x")[0]) if kind != "shared" else 4
        row = {"variant": variant, "block_factor": bf, **operand_model(kind, bf, tile)}
        row.update({f"fraction_at_{int(n)}": f for n, f in zip(group["n"], group["fraction_of_ceiling"])})
        rows.append(row)
    out = pd.DataFrame(rows)
    out.attrs["best"] = {int(n): g.sort_values("time_ms").iloc[0] for n, g in ok.groupby("n")}
    return out


def traffic_model(n: int, bf: int, shared_loads_per_relaxation: float = 2.0) -> dict[str, float]:
    """Bytes phase 3 moves over a whole solve, by the model stated in chapter 04: per tile and
    round it loads its own tile and the two pivot tiles (3 BF^2 ints) from global memory and
    stores its own (BF^2); it stores the two pivot tiles in shared memory (2 BF^2) and loads
    ``shared_loads_per_relaxation`` ints per relaxation from there (2 for fw_blocked.cu, whose
    threads read d[i][k] and d[k][j] each step; 0.5 for the 4 x 4 register tiles)."""
    size = padded_size(n, bf)
    rounds = size // bf
    tiles = rounds * (rounds - 1) ** 2
    return {
        "global_load_bytes": 4.0 * 3 * bf * bf * tiles,
        "global_store_bytes": 4.0 * bf * bf * tiles,
        "shared_load_bytes": 4.0 * shared_loads_per_relaxation * bf**3 * tiles,
        "shared_store_bytes": 4.0 * 2 * bf * bf * tiles,
        "relaxations": float(bf**3 * tiles),
    }


def bytes_per_relaxation(row: Any) -> float:
    """DRAM bytes per relaxation by the chapter's model, for a row of the ladder or the
    blocking-factor sweep. A per-k kernel reads and writes its own entry once per step (8 B); a
    blocked kernel reads and writes its own BF x BF tile once per round, for BF^3 relaxations
    (8 / BF bytes). In both, what every thread also reads (row and column k, or the two pivot
    tiles) is shared by a whole row or column of threads or tiles and is served by L2."""
    if getattr(row, "kernel_family", "") == "per-k":
        return per_k.BYTES_PER_RELAXATION
    bf = getattr(row, "block_factor", None)
    return 8.0 / float(bf) if bf is not None and bf == bf and bf > 0 else per_k.BYTES_PER_RELAXATION


def roofline_points(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows as roofline points: relaxations per byte of the model, relaxations per second."""
    out = frame.copy()
    out["intensity"] = [1.0 / bytes_per_relaxation(r) for r in out.itertuples()]
    out["ops_per_s"] = out["n"].astype(float) ** 3 / (out["time_ms"] / 1e3)
    return out.assign(label=out["variant"])


def with_rates(frame: pd.DataFrame, ceiling_relaxations_per_s: float | None = None) -> pd.DataFrame:
    """Adds relaxations per second (n^3 / time: useful work, padding not counted), GOPS as two
    integer operations (add, min) per relaxation in lab 001's binary giga, and the fraction of the
    add+min ceiling; rows that are not 'ok' get none."""
    out = frame.copy()
    ok = out["status"].eq("ok")
    seconds = out["time_ms"] * 1e-3
    out["relaxations_per_s"] = (out["n"].astype(float) ** 3 / seconds).where(ok)
    out["GOPS_model"] = (2 * out["relaxations_per_s"] / 2**30).where(ok)
    if ceiling_relaxations_per_s:
        out["fraction_of_ceiling"] = out["relaxations_per_s"] / ceiling_relaxations_per_s
    return out


COUNTER_COLUMNS = ("global_load_GBps", "global_store_GBps", "shared_load_GBps", "shared_store_GBps")


def phase3_counters(specs: Sequence[dict[str, Any]], n: int, seed: int, phases: pd.DataFrame) -> pd.DataFrame:
    """Phase 3's global and shared throughput per kernel, and lab 001's GOPS (integer instructions
    of all phase-3 launches over their total time, in 2^30 per second).

    Read with Nsight Compute where it can read the counters (one launch, the middle round);
    otherwise computed from ``traffic_model`` and the phase-3 time of ``phase_split``. The
    ``source`` column says which."""
    p3 = phases[phases["phase"].eq("phase 3")].set_index("variant")
    try:
        frame = profile_phase3(specs, n, seed)
        source = "Nsight Compute counters, one phase-3 launch (middle round)"
    except CountersUnavailable as exc:
        frame, source = None, f"bytes model ({exc})"
    rows = []
    for i, spec in enumerate(specs):
        bf = int(spec["bf"])
        rounds = padded_size(n, bf) // bf
        p3_s = float(p3.loc[spec["label"], "time_ms"]) * 1e-3 if spec["label"] in p3.index else np.nan
        row: dict[str, Any] = {
            "variant": spec["label"],
            "block_factor": bf,
            "kernel": spec["kind"],
            "n": n,
            "rounds": rounds,
            "phase3_time_ms": p3_s * 1e3,
            "source": source,
        }
        if frame is not None:
            got = frame.iloc[i]
            row.update({c: got[c] for c in COUNTER_COLUMNS + ("dram_GBps", "kernel_time_ms", "integer_instructions")})
            row["GOPS"] = got["integer_instructions"] * rounds / p3_s / 2**30
        else:
            model = traffic_model(n, bf, shared_loads_per_relaxation(spec))
            for c, key in zip(
                COUNTER_COLUMNS, ("global_load_bytes", "global_store_bytes", "shared_load_bytes", "shared_store_bytes")
            ):
                row[c] = model[key] / p3_s / 1e9
            row["GOPS"] = 2 * model["relaxations"] / p3_s / 2**30
        rows.append(row)
    return pd.DataFrame(rows)


# our column -> (Nsight Compute metric, factor from its base unit)
NCU_METRICS: dict[str, tuple[str, float]] = {
    "kernel_time_ms": ("gpu__time_duration.sum", 1e-6),
    "global_load_GBps": ("l1tex__t_bytes_pipe_lsu_mem_global_op_ld.sum.per_second", 1e-9),
    "global_store_GBps": ("l1tex__t_bytes_pipe_lsu_mem_global_op_st.sum.per_second", 1e-9),
    "shared_load_GBps": ("sm__sass_data_bytes_mem_shared_op_ld.sum.per_second", 1e-9),
    "shared_store_GBps": ("sm__sass_data_bytes_mem_shared_op_st.sum.per_second", 1e-9),
    "dram_GBps": ("dram__bytes.sum.per_second", 1e-9),
    "integer_instructions": ("smsp__sass_thread_inst_executed_op_integer_pred_on.sum", 1.0),
}


def profile_phase3(specs: Sequence[dict[str, Any]], n: int, seed: int = 1, timeout_s: float = 300) -> pd.DataFrame:
    """One row per spec ({"label", "kind", "bf", "dpx"}): phase 3's counters at its middle round,
    read by Nsight Compute from a child process (``_ncu_target``), in our units (GB/s, ms)."""

    target = ["-m", "cudalab.labs.fw._ncu_target", json.dumps(list(specs)), str(n), str(seed)]
    frame = nsight.profile_launches(target, NCU_METRICS, "regex:phase3", expected=len(specs), timeout_s=timeout_s)
    ids = pd.DataFrame(
        [{"variant": s["label"], "block_factor": int(s["bf"]), "kernel": s["kind"], "n": n} for s in specs]
    )
    return pd.concat([ids, frame], axis=1)


def counters_available() -> str | None:
    """None where ncu can read counters here, else the reason it cannot."""
    try:
        profile_phase3([{"label": "probe", "kind": "shared", "bf": 8}], 16, timeout_s=120)
    except CountersUnavailable as exc:
        return str(exc)
    return None
