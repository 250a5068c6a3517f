"""The blocked kernels: their files, build options, each phase's launch, and the plans built on them.

Four files, each a family of builds chosen by compile-time options (listed in their headers):
``fw_blocked_global.cu`` (every operand in global memory, one kernel for the three phases),
``fw_blocked.cu`` (each phase stages its tiles in shared memory), ``fw_blocked_registers.cu``
(the registers kernel: phase 3 in r x r register tiles, beside ``fw_blocked.cu``'s phases 1 and 2)
and ``fw_blocked_minplus.cu`` (the min-plus kernel: phases 2 and 3 as min-plus products of 8 x 8
register tiles). Each phase's launch is described once, as a ``core.launch.Launch`` labelled with
its phase, without compiling (the occupancy table and the parallel compile take these); the plans
launch exactly those. ``KernelSpec`` names a kernel as recorded data and the command line do.

Each ``file`` argument below is a copy of one of the four files (a scratch copy being edited) that
the launches of that file's name are built from instead (``Launch.from_copy``).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from cudalab.core.errors import LaunchRefused
from cudalab.core.launch import Dim3, Launch
from cudalab.labs.fw import harness as fw
from cudalab.labs.fw.blocked.plans import PHASE_GRIDS, BlockedPlan, LookaheadPlan, Phase

GLOBAL_FILE, SHARED_FILE, REGISTERS_FILE = "fw_blocked_global.cu", "fw_blocked.cu", "fw_blocked_registers.cu"
MINPLUS_FILE = "fw_blocked_minplus.cu"
INT32 = 4
ROUND_ARGUMENTS = ("matrix", "n (padded)", "round")


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


def minplus_options(bf: int = 64, dpx: bool = True) -> tuple[str, ...]:
    return (f"-DBF={bf}",) + (() if dpx else ("-DNO_DPX",))


def phase_launches(filename: str, options: tuple[str, ...], bf: int, file: str | Path | None = None) -> list[Launch]:
    """Each phase's launch in a build of ``fw_blocked_global.cu`` or ``fw_blocked.cu``, without
    compiling (no GPU needed), labelled with its ``phase``. ``plan_for_build`` launches exactly these."""
    tunables = {"block_factor": bf}
    if filename == GLOBAL_FILE:
        return [
            Launch(
                GLOBAL_FILE,
                "fw_blocked_global",
                Dim3.square(bf),
                options=options,
                arguments=ROUND_ARGUMENTS + ("phase",),
                tunables=tunables,
                labels={"phase": name},
            ).from_copy(file)
            for name in PHASE_GRIDS
        ]
    if filename == SHARED_FILE:
        tile = INT32 * bf * bf
        return [
            Launch(
                SHARED_FILE,
                f"fw_blocked_phase{p}",
                Dim3.square(min(bf, 32)),
                options=options,
                dynamic_shared_bytes=tile if p == 1 else 2 * tile,
                arguments=ROUND_ARGUMENTS,
                tunables=tunables,
                labels={"phase": name},
            ).from_copy(file)
            for p, name in enumerate(PHASE_GRIDS, start=1)
        ]
    raise LaunchRefused(f"no three-phase plan for {filename}")


def registers_phase_launches(
    bf: int = 64, dpx: bool = True, tile: int = 4, file: str | Path | None = None
) -> list[Launch]:
    """``phase_launches`` of the registers kernel: phases 1-2 of ``fw_blocked.cu`` at ``bf``, phase 3
    in register tiles (``fw_blocked_registers.cu``, ``tile`` x ``tile`` cells per thread), as
    ``registers_plan`` launches them."""
    phase3 = Launch(
        REGISTERS_FILE,
        "fw_blocked_registers_phase3",
        Dim3.square(bf // tile),
        options=registers_options(bf, dpx, tile),
        dynamic_shared_bytes=INT32 * ((bf + 4) + bf) * bf,
        arguments=ROUND_ARGUMENTS,
        tunables={"block_factor": bf, "dpx": dpx, "tile": tile},
        labels={"phase": "phase 3"},
    ).from_copy(file)
    return phase_launches(SHARED_FILE, shared_options(bf), bf, file)[:2] + [phase3]


MINPLUS_TILE = 64  # fw_blocked_minplus.cu's TILE: the side of the tile a phase-2 or phase-3 block computes
MINPLUS_BLOCK_FACTORS = (64, 128, 256, 512)
MINPLUS_CHUNK = 16  # its KC: k per staged chunk
CLOSING_ROUNDS = 4  # at most this many rounds in the inner solve that closes a deep pivot block


def minplus_closing_bf(bf: int) -> int | None:
    """The BF of the build whose blocked solve closes a pivot block of ``bf`` (None: phase 1's
    one block holds it, up to BF 128): the shallowest of 64 and 128 that needs at most
    ``CLOSING_ROUNDS`` rounds, so 64 at BF 256 and 128 at BF 512. The closing is a chain of three
    dependent launches a round on the look-ahead lane, and beside phase 3 each launch's blocks
    wait for slots and share SMs: on an H200 at N = 8192, BF 512's closing by 64 (24 launches)
    took 1.65 ms a round there against 0.27 ms alone, and left that lane the later one; by 128
    (12 launches), 1.17 ms, and the solve was 0.4% faster (docs/tuning-log.md)."""
    if bf <= 2 * MINPLUS_TILE:
        return None
    return max(MINPLUS_TILE, bf // CLOSING_ROUNDS)


def minplus_shared_bytes(bf: int = 64) -> int:
    """Dynamic shared memory of the min-plus tile kernel, the same at every BF: two stages of a
    KC-deep chunk of A (transposed, rows padded by 4) and of B (rows padded by 16), and the
    block's C tile (``fw_blocked_minplus.cu``)."""
    t, kc = MINPLUS_TILE, MINPLUS_CHUNK
    return INT32 * (2 * (kc * (t + 4) + kc * (t + 16)) + t * t)


def minplus_grids(bf: int, tile: int = MINPLUS_TILE) -> dict[str, Callable[[int], tuple[int, ...]]]:
    """Each phase's grid for R rounds: phases 2 and 3 count tiles of ``MINPLUS_TILE``, S = BF / TILE
    per side of a pivot block."""
    s = bf // tile
    return {
        "phase 1": PHASE_GRIDS["phase 1"],
        "phase 2": lambda rounds: (rounds * s, 2 * s),  # blockIdx.y < S: pivot row pieces, else pivot column
        "phase 3": lambda rounds: (rounds * s, rounds * s),
    }


def minplus_phase_launches(bf: int = 64, dpx: bool = True, file: str | Path | None = None) -> list[Launch]:
    """``phase_launches`` of ``fw_blocked_minplus.cu``: phase 1 on 32 x 32 threads with cells in
    registers, phases 2 and 3 the same min-plus tile product on 8 x 8 threads of 8 x 8 cells
    (phase 3's last argument: which part of the round it relaxes, see ``LookaheadPlan``). At BF
    256 and 512 phase 1's kernel is that of the build ``minplus_closing_bf`` names (BF 64, 128),
    which ``minplus_plan`` runs as a blocked solve of the pivot block (with that build's phases 2
    and 3)."""
    if bf not in MINPLUS_BLOCK_FACTORS:
        raise LaunchRefused(
            f"fw_blocked_minplus.cu builds for BF {', '.join(map(str, MINPLUS_BLOCK_FACTORS))}, not {bf}"
        )
    opts, tunables = minplus_options(bf, dpx), {"block_factor": bf, "dpx": dpx, "tile": 8}
    phase1 = Launch(
        MINPLUS_FILE,
        "fw_minplus_phase1",
        Dim3(32, 32),
        options=minplus_options(minplus_closing_bf(bf) or bf, dpx),
        arguments=ROUND_ARGUMENTS,
        tunables=tunables,
        labels={"phase": "phase 1"},
    ).from_copy(file)
    return [phase1] + [
        Launch(
            MINPLUS_FILE,
            f"fw_minplus_phase{p}",
            Dim3.square(MINPLUS_TILE // 8),
            options=opts,
            dynamic_shared_bytes=minplus_shared_bytes(bf),
            arguments=ROUND_ARGUMENTS + (("part",) if p == 3 else ()),
            tunables=tunables,
            labels={"phase": f"phase {p}"},
        ).from_copy(file)
        for p in (2, 3)
    ]


def _phase(launch: Launch, kernel: Any = None, grids: dict[str, Callable] = PHASE_GRIDS, **args: Any) -> Phase:
    """A ``Phase`` of its launch, the kernel compiled unless given."""
    name = launch.labels["phase"]
    return Phase(launch, kernel if kernel is not None else launch.compiled(), grids[name], **args)


def plan_for_build(filename: str, options: tuple[str, ...], bf: int, file: str | Path | None = None) -> BlockedPlan:
    """The three-phase plan of a build of ``fw_blocked_global.cu`` or ``fw_blocked.cu``."""
    launches = phase_launches(filename, options, bf, file)
    if filename == GLOBAL_FILE:  # one kernel, told its phase by its last argument
        kernel = launches[0].compiled()
        return BlockedPlan(
            bf,
            tuple(
                _phase(launch, kernel, args=lambda work, n, r, p=p: (work, np.int32(n), np.int32(r), np.int32(p)))
                for p, launch in enumerate(launches, start=1)
            ),
        )
    return BlockedPlan(bf, tuple(_phase(launch) for launch in launches))


def global_plan(coalesced: bool, unroll: bool, bf: int = 32) -> BlockedPlan:
    """Ladder steps 1-3: every operand in global memory (``fw_blocked_global.cu``)."""
    return plan_for_build(GLOBAL_FILE, global_options(coalesced, unroll, bf), bf)


def shared_plan(
    bf: int, select_by_arithmetic: bool = False, maxrregcount: int | None = None, file: str | Path | None = None
) -> BlockedPlan:
    """Ladder steps 4-7 and the blocking-factor sweep: each phase in shared memory (``fw_blocked.cu``)."""
    return plan_for_build(SHARED_FILE, shared_options(bf, select_by_arithmetic, maxrregcount), bf, file)


def registers_plan(bf: int = 64, dpx: bool = True, tile: int = 4, file: str | Path | None = None) -> BlockedPlan:
    """The registers kernel: phases 1-2 of ``fw_blocked.cu``, phase 3 in register tiles
    (``fw_blocked_registers.cu``, ``tile`` x ``tile`` cells per thread), with or without the DPX
    add-min instruction."""
    base = shared_plan(bf, file=file)
    return BlockedPlan(bf, base.phases[:2] + (_phase(registers_phase_launches(bf, dpx, tile, file)[2]),))


def minplus_plan(bf: int = 64, dpx: bool = True, lookahead: bool = True, file: str | Path | None = None) -> BlockedPlan:
    """The min-plus kernel, the project's best: every phase of ``fw_blocked_minplus.cu``, phases
    2 and 3 as min-plus products of 8 x 8 register tiles, with or without the DPX add-min
    instruction, rounds overlapped by a look-ahead (``LookaheadPlan``) unless ``lookahead`` is
    False. At BF 256 and 512 the pivot block is closed by the three phases of the BF 64 or 128
    build (``minplus_closing_bf``: its ``inner`` solve, labelled phase 1)."""

    def phases(b: int, label: str | None = None) -> tuple[Phase, ...]:
        out = []
        for i, x in enumerate(minplus_phase_launches(b, dpx, file)):
            phase = _phase(x, grids=minplus_grids(b), **({"args": _whole_round} if i == 2 else {}))
            if label:  # the inner solve's launches count as the phase they serve
                phase = dataclasses.replace(phase, launch=dataclasses.replace(x, labels={**x.labels, "phase": label}))
            out.append(phase)
        return tuple(out)

    main = phases(bf)
    closing = minplus_closing_bf(bf)
    inner = phases(closing, "phase 1") if closing else None
    return LookaheadPlan(bf, main, tile=MINPLUS_TILE, inner=inner, lookahead=lookahead, inner_bf=closing)


def _whole_round(work, n: int, r: int) -> tuple:
    """Phase 3's arguments for a whole round (``part`` 0)."""
    return work, np.int32(n), np.int32(r), np.int32(0)


def variant(label: str, make: Callable[[], BlockedPlan], **fields: Any) -> fw.Variant:
    """A blocked kernel as a sweep variant: compiled on first use, the same plan for every n
    (padding happens in ``prepare``)."""
    plan = functools.cache(make)
    return fw.Variant(label, {"kernel_family": "blocked", **fields}, lambda n: plan())


def registers_label(bf: int, dpx: bool, tile: int = 4) -> str:
    """The registers kernel's name in the chapter's tables (``registers BF 64 + DPX``)."""
    return f"registers BF {bf}" + ("" if tile == 4 else f", {tile}x{tile}") + (" + DPX" if dpx else "")


def minplus_label(bf: int, dpx: bool) -> str:
    """The min-plus kernel's name in the chapter's tables (``min-plus BF 64, 8x8 + DPX``)."""
    return f"min-plus BF {bf}, 8x8" + (" + DPX" if dpx else "")


@dataclass(frozen=True)
class KernelSpec:
    """A blocked kernel by name, as recorded data and the command line carry it: ``shared``
    (``fw_blocked.cu``), ``registers`` (``fw_blocked_registers.cu``'s phase 3) or ``minplus``
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
            return minplus_label(self.bf, self.dpx)
        return registers_label(self.bf, self.dpx, self.tile)

    @classmethod
    def parse(cls, text: str) -> KernelSpec:
        """'minplus:64', 'minplus:256:nodpx', 'registers:64', 'registers:64:t8',
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
            or (kind == "minplus" and bf not in tuple(map(str, MINPLUS_BLOCK_FACTORS)))
        ):
            raise LaunchRefused(
                f"kernel {text!r}: expected shared:BF, registers:BF[:t4|:t8][:nodpx] or minplus:64|128|256|512[:nodpx]"
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
