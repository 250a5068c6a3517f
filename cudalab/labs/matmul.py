"""Chapter 05's matrix multiply: from lab 004's naive kernel and lab 002's footprint to a
register-blocked kernel, every configuration timed beside cuBLAS in the same run.

A kernel configuration is a ``MatmulKernel``: a function of a ``kernels_cu/mm_*.cu`` file, the
compile-time constants that shape it, and its launch geometry. Before anything is compiled or
launched, ``refusal`` checks it against the launch limits (threads, shared memory, the shape
rules its source states), so a footprint the GPU cannot hold becomes a table row with its reason.

Correctness: C = A B for A, B uniform in [-1, 1), checked against cuBLAS SGEMM (``cupy.matmul``)
on the same inputs elementwise, ``|C - C_cuBLAS| <= TOLERANCE_FACTOR * sqrt(n) * 2^-24 * (|A||B|)``:
the statistical growth of float32 rounding over a length-n dot product, for both results, with
a safety factor. A kernel that drops or repeats one product term misses it by about
``|a_ik b_kj| / (|A||B|)_ij ~ 1/n``, far above the tolerance for every n measured here. C is
poisoned with NaN before every timed run (except where a kernel accumulates into C, which starts
at zero), so an unwritten entry fails too.

cuBLAS runs in full FP32: CuPy uses TF32 tensor cores only when ``CUPY_TF32=1``, and the chapter
verifies it on data where TF32 would round visibly (``cublas_precision``).
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from cudalab.core import baseline
from cudalab.core.check import compare_close
from cudalab.core.errors import KernelCompileError, MeasurementError
from cudalab.core.gpu import attributes, gpu_available, require_cupy
from cudalab.core.kernels import load_kernel
from cudalab.core.launch import Dim3, Launch, allow_shared_memory, refusal_types, require_memory
from cudalab.core.occupancy import present_sm, resident_blocks
from cudalab.core.rates import gflop_per_s
from cudalab.core.sweep import run_sweep
from cudalab.core.timing import back_to_back, summarize, time_gpu
from cudalab.labs.points import PointRecipe, require_used, seed_of, timing_of, with_occupancy

FLOAT32 = 4
TOLERANCE_FACTOR = 8.0
STATIC_SHARED_LIMIT = 48 * 1024  # statically sized __shared__ arrays cannot exceed 48 KiB
MAX_REGISTERS_PER_THREAD = 255  # the most registers a thread can address
ARGUMENTS = ("A", "B", "C", "n")  # every matmul kernel computes C = A B for n x n matrices
# The final step's shape, as its rows name it (kernel_from_row) and its variants copy it (stream_k).
ASYNC_SHAPE = ("bm", "bn", "bk", "wm", "wn", "tm", "tn", "stages", "min_blocks", "inward_edges")
SK_MIN = 4  # k tiles a stream-K block takes at least (mm_04's SK_MIN)


def flops(n: int) -> int:
    """A square n x n matrix product: n^2 dot products of n multiply-adds, 2 n^3 flops."""
    return 2 * n**3


def tolerance(n: int) -> float:
    """The largest accepted ``|C - C_cuBLAS| / (|A||B|)`` at size n (see the module docstring)."""
    return TOLERANCE_FACTOR * math.sqrt(max(n, 1)) * 2.0**-24


# ------------------------------------------------------------------------------- configurations


@dataclass(frozen=True)
class MatmulKernel:
    """One compiled configuration of a matmul kernel and how it launches.

    ``block`` is its block of threads (x, y); ``patch`` the rows x columns of C one block computes;
    ``defines`` the compile-time constants; ``zero_c`` that the kernel accumulates into C (lab 004's
    first steps), which must start at zero; ``problem`` a shape rule of the source it breaks;
    ``dynamic_shared`` that its ``shared_bytes`` are asked for at launch (dynamic shared memory,
    which may exceed the 48 KiB of a static array where the GPU opts in) rather than declared."""

    label: str
    family: str
    file: str
    function: str
    block: Dim3
    patch: tuple[int, int]
    defines: tuple[tuple[str, int], ...] = ()
    shared_bytes: int = 0
    zero_c: bool = False
    problem: str = ""
    dynamic_shared: bool = False
    fields: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "block", Dim3.of(self.block))  # (16, 16) is taken as Dim3(16, 16)

    @property
    def threads(self) -> int:
        return self.block.size

    @property
    def results_per_thread(self) -> float:
        return self.patch[0] * self.patch[1] / self.threads

    def grid(self, n: int) -> Dim3:
        """The blocks that cover an n x n C, a patch each; with SPLIT_WAVE, one block per work
        item of ``split_plan`` (the whole tiles, then the stream-K blocks of the last tiles)."""
        defines = dict(self.defines)
        if defines.get("SPLIT_WAVE"):
            return Dim3(split_plan(n, *self.patch, defines["BK"], defines["SPLIT_WAVE"])["items"])
        return Dim3(-(-n // self.patch[1]), -(-n // self.patch[0]))

    def options(self) -> tuple[str, ...]:
        return tuple(f"-D{k}={v}" for k, v in self.defines)

    def compile(self):
        return load_kernel(self.file, self.function, self.options())

    def from_copy(self, file: str | Path | None) -> MatmulKernel:
        """This configuration built from ``file``, a copy of its kernel file (the same name: a
        scratch copy being edited), instead; unchanged where ``file`` is None or another file's copy."""
        if file is None or Path(file).name != Path(self.file).name:
            return self
        return dataclasses.replace(self, file=str(file))

    def launch(self, n: int | None = None) -> Launch:
        """This configuration's ``Launch`` (over the grid of size ``n`` where given), labelled as the
        chapter's tables name it: ``config`` (its label) and ``block`` (both edges: "256x1"). Static
        shared memory the compiler reports; dynamic shared memory is the launch's."""
        return Launch(
            self.file,
            self.function,
            self.block,
            grid=None if n is None else self.grid(n),
            options=self.options(),
            dynamic_shared_bytes=self.shared_bytes if self.dynamic_shared else 0,
            arguments=ARGUMENTS,
            tunables=dict(self.defines),
            labels={"config": self.label, "block": f"{self.block.x}x{self.block.y}"},
        )

    def row(self) -> dict[str, Any]:
        """The columns that describe this configuration in a table."""
        return {
            "kernel": self.label,
            "family": self.family,
            "block_x": self.block.x,
            "block_y": self.block.y,
            "threads": self.threads,
            "patch_m": self.patch[0],
            "patch_n": self.patch[1],
            "results_per_thread": self.results_per_thread,
            "shared_bytes": self.shared_bytes,
            **self.fields,
        }


def split_plan(n: int, bm: int, bn: int, bk: int, wave: int) -> dict[str, int]:
    """How mm_04 with SPLIT_WAVE = ``wave`` (blocks one wave holds) shares out an n x n C of BM x
    BN tiles: the first ``whole`` tiles each by one block; the last ``shared`` tiles (all of them
    where there are fewer than a wave, else the partial wave and one full wave before it) as one
    run of k tiles cut into ``blocks`` equal ranges (stream-K), each at least ``SK_MIN`` k tiles
    long; ``items`` blocks in all. ``wave_fill`` is the unsplit grid's use of its waves: tiles over
    waves x ``wave``. The kernel computes the same plan from n and its constants; the two must agree."""
    tiles = -(-n // bm) * -(-n // bn)
    ktiles = -(-n // bk)
    rest = tiles % wave
    shared = 0 if rest == 0 else tiles if tiles < wave else rest + wave
    blocks = min(wave, shared * ktiles // SK_MIN)
    if shared >= blocks * -(-shared // wave):  # no fewer tiles per block than waves unsplit: no gain
        shared = blocks = 0
    return {
        "tiles": tiles,
        "whole": tiles - shared,
        "shared": shared,
        "blocks": blocks,
        "items": tiles - shared + blocks,
        "wave_fill": tiles / (-(-tiles // wave) * wave),
    }


def naive(block_edge: int, register: bool = False, label: str = "") -> MatmulKernel:
    """Lab 004 steps a-c: one thread per element of C, summing in C (a, b) or a register (c)."""
    fn = "mm_naive_register" if register else "mm_naive_global"
    return MatmulKernel(
        label or f"{fn} {block_edge}x{block_edge}",
        "naive",
        "mm_00_naive.cu",
        fn,
        Dim3.square(block_edge),
        (block_edge, block_edge),
        zero_c=not register,
    )


def shared_tile(tile: int, unroll: int = 1, label: str = "") -> MatmulKernel:
    """Lab 002's matmultKernel00 and lab 004 steps d-e: a TILE x TILE tile per block, one result per thread."""
    return MatmulKernel(
        label or f"shared tile {tile}" + (f", unroll {unroll}" if unroll > 1 else ""),
        "shared_tile",
        "mm_01_shared_tile.cu",
        "mm_shared_tile",
        Dim3.square(tile),
        (tile, tile),
        (("TILE", tile), ("UNROLL", unroll)),
        shared_bytes=2 * tile * tile * FLOAT32,
        fields={"footprint": tile},
    )


def footprint(
    block_edge: int, foot: int, ktile: int | None = None, aligned_copy: bool = False, label: str = ""
) -> MatmulKernel:
    """Lab 002's matmultKernel01: BLOCK x BLOCK threads (``block_edge``) compute a FOOT x FOOT patch of C."""
    ktile = ktile or foot
    defines = (("BLOCK", block_edge), ("FOOT", foot), ("KTILE", ktile)) + (
        (("ALIGNED_COPY", 1),) if aligned_copy else ()
    )
    problem = "" if foot % block_edge == 0 else f"footprint {foot} is not a multiple of the block edge {block_edge}"
    name = label or (
        f"footprint {foot}, {block_edge}x{block_edge} threads"
        + (f", k-tile {ktile}" if ktile != foot else "")
        + (", aligned copy" if aligned_copy else "")
    )
    return MatmulKernel(
        name,
        "footprint",
        "mm_02_footprint.cu",
        "mm_footprint",
        Dim3.square(block_edge),
        (foot, foot),
        defines,
        shared_bytes=2 * foot * ktile * FLOAT32,
        problem=problem,
        fields={"footprint": foot, "k_tile": ktile, "aligned_copy": aligned_copy},
    )


def register_blocked(
    bm: int = 128, bn: int = 128, bk: int = 8, tm: int = 8, tn: int = 8, double_buffer: bool = True, label: str = ""
) -> MatmulKernel:
    """The project's kernel: BM x BN per block, TM x TN per thread in registers, BK deep tiles."""
    problems = []
    if bm % tm or bn % tn:
        problems.append(f"the block tile {bm}x{bn} is not a multiple of the thread tile {tm}x{tn}")
    else:
        rows, cols = bm // tm, bn // tn
        if tm % 4 or tn % 4 or bk % 4:
            problems.append(f"TM, TN and BK must be multiples of 4 (float4 loads), got {tm}, {tn}, {bk}")
        if rows % 4 or cols % 8:
            problems.append(f"{rows}x{cols} threads do not tile as whole warps of 4 x 8 lanes")
    threads = max(1, (bm // max(tm, 1)) * (bn // max(tn, 1)))
    stages = 2 if double_buffer else 1
    name = label or f"register {bm}x{bn}x{bk}, {tm}x{tn} per thread" + ("" if double_buffer else ", single buffer")
    return MatmulKernel(
        name,
        "register_blocked",
        "mm_03_register_blocked.cu",
        "mm_register_blocked",
        Dim3(threads),
        (bm, bn),
        (("BM", bm), ("BN", bn), ("BK", bk), ("TM", tm), ("TN", tn), ("DOUBLE_BUFFER", int(double_buffer))),
        shared_bytes=stages * bk * (bm + 4 + bn) * FLOAT32,
        problem="; ".join(problems),
        fields={"bm": bm, "bn": bn, "bk": bk, "tm": tm, "tn": tn, "double_buffer": double_buffer},
    )


def warptile_async(
    bm: int = 128,
    bn: int = 128,
    bk: int = 8,
    wm: int = 32,
    wn: int = 64,
    tm: int = 8,
    tn: int = 8,
    stages: int = 3,
    min_blocks: int = 1,
    wave: int = 0,
    inward_edges: int = 0,
    label: str = "",
) -> MatmulKernel:
    """The chapter's final step (``mm_04_warptile_async.cu``): BM x BN per block in warp tiles of
    WM x WN, TM x TN per lane in registers, BK-deep tiles copied asynchronously STAGES deep;
    ``min_blocks`` asks the compiler to leave registers for that many blocks per SM; ``wave``
    (blocks in one wave on the GPU it runs on; 0: off) shares the last waves' tiles out by k
    steps, stream-K (``split_plan``); ``inward_edges`` (1: on) moves the tiles that cross the
    matrix's edge inward so that every copy skips its bound check (the kernel's item 8)."""
    problems = []
    if bm % wm or bn % wn or wm % tm or wn % tn or (wm // tm) * (wn // tn) != 32:
        problems.append(
            f"the block tile {bm}x{bn} does not split into warp tiles {wm}x{wn} of 32 lane footprints {tm}x{tn}"
        )
    if tm % 4 or tn % 4 or bk % 4 or stages < 2:
        problems.append(f"TM, TN and BK must be multiples of 4 and STAGES at least 2, got {tm}, {tn}, {bk}, {stages}")
    threads = max(1, (bm // max(wm, 1)) * (bn // max(wn, 1)) * 32)
    if not problems and (threads % bk or threads % bn or (bm * bk) % threads or (bk * bn // 4) % threads):
        problems.append(
            f"{threads} threads do not share the {bm}x{bk} and {bk}x{bn} tiles' copies evenly (whole rows at a time)"
        )
    name = label or (
        f"warp tiles {bm}x{bn}x{bk}, warp {wm}x{wn}, {tm}x{tn} per thread, {stages} stages"
        + (f", {min_blocks} blocks/SM" if min_blocks > 1 else "")
        + (", inward edges" if inward_edges else "")
        + (f", stream-K (wave {wave})" if wave else "")
    )
    return MatmulKernel(
        name,
        "warptile_async",
        "mm_04_warptile_async.cu",
        "mm_warptile_async",
        Dim3(threads),
        (bm, bn),
        (
            ("BM", bm),
            ("BN", bn),
            ("BK", bk),
            ("WM", wm),
            ("WN", wn),
            ("TM", tm),
            ("TN", tn),
            ("STAGES", stages),
            ("MIN_BLOCKS", min_blocks),
        )
        + ((("SPLIT_WAVE", wave),) if wave else ())
        + ((("INWARD_EDGES", 1),) if inward_edges else ()),
        shared_bytes=stages * bk * (bm + 4 + bn) * FLOAT32,
        problem="; ".join(problems),
        dynamic_shared=True,
        fields={
            "bm": bm,
            "bn": bn,
            "bk": bk,
            "wm": wm,
            "wn": wn,
            "tm": tm,
            "tn": tn,
            "stages": stages,
            "min_blocks": min_blocks,
            "wave": wave,
            "inward_edges": int(bool(inward_edges)),
        },
    )


def stream_k(kernel: MatmulKernel, sm_count: int | None = None) -> MatmulKernel:
    """``kernel`` (a final-step configuration) with its last waves' tiles shared out by k steps
    (stream-K, ``split_plan``), for a GPU of ``sm_count`` SMs (default: the present GPU's; none
    present: unsplit, as it would not run here anyway). A wave is ``sm_count`` x its MIN_BLOCKS
    blocks."""
    if sm_count is None:
        sm_count = attributes().get("MultiProcessorCount", 0) if gpu_available() else 0
    shape = {k: int(kernel.fields.get(k, 0)) for k in ASYNC_SHAPE}
    return warptile_async(**shape, wave=sm_count * shape["min_blocks"])


# The final step's search: a dozen shapes, each sound by design (no spill under ptxas for sm_75
# and sm_90, every copy shared evenly), from small patches that fill the SMs at awkward n to the
# large ones that reuse most. The chapter times each at ``tune_n`` and keeps the fastest correct.
# The 128x256 patch goes deepest (BK 32, 3 stages): with one block of 8 warps per SM, two per
# scheduler, what a deeper tile buys is fewer barriers and more copy latency hidden per tile. In an
# Nsight Compute comparison at n = 4096 on an H100, cuBLAS's kernel (256x128x8, 3 stages, 254
# registers, the same 512 blocks) and the BK 16 / 2 stage shape executed about the same number of
# instructions (2.43 G and 2.40 G); what differed was issue: 0.90 against 0.78 instructions per
# scheduler per cycle, the rest of the cycles no warp ready. The kernel's barrier then moved to each
# tile's last k step, with the next tile's first operands read during it (its header, item 3).
# Shallower 128x128 shapes at 8x8 per thread, 0.77-0.79 of cuBLAS in every recording, made room for these.
ASYNC_SEARCH: tuple[dict[str, int], ...] = (
    {"bm": 128, "bn": 128, "bk": 8, "wm": 32, "wn": 64, "tm": 8, "tn": 8, "stages": 4, "min_blocks": 2},
    {"bm": 128, "bn": 128, "bk": 16, "wm": 64, "wn": 64, "tm": 8, "tn": 16, "stages": 3, "min_blocks": 1},
    {"bm": 128, "bn": 256, "bk": 8, "wm": 64, "wn": 64, "tm": 8, "tn": 16, "stages": 3, "min_blocks": 1},
    {"bm": 128, "bn": 256, "bk": 8, "wm": 32, "wn": 128, "tm": 8, "tn": 16, "stages": 4, "min_blocks": 1},
    {"bm": 128, "bn": 256, "bk": 16, "wm": 64, "wn": 64, "tm": 8, "tn": 16, "stages": 2, "min_blocks": 1},
    {"bm": 128, "bn": 256, "bk": 16, "wm": 64, "wn": 64, "tm": 8, "tn": 16, "stages": 3, "min_blocks": 1},
    {"bm": 128, "bn": 256, "bk": 32, "wm": 64, "wn": 64, "tm": 8, "tn": 16, "stages": 2, "min_blocks": 1},
    {"bm": 128, "bn": 256, "bk": 32, "wm": 64, "wn": 64, "tm": 8, "tn": 16, "stages": 3, "min_blocks": 1},
    {"bm": 256, "bn": 128, "bk": 8, "wm": 64, "wn": 64, "tm": 16, "tn": 8, "stages": 3, "min_blocks": 1},
    {"bm": 64, "bn": 128, "bk": 8, "wm": 32, "wn": 64, "tm": 8, "tn": 8, "stages": 4, "min_blocks": 3},
    {"bm": 128, "bn": 64, "bk": 8, "wm": 64, "wn": 32, "tm": 8, "tn": 8, "stages": 4, "min_blocks": 3},
    {"bm": 64, "bn": 64, "bk": 16, "wm": 32, "wn": 32, "tm": 8, "tn": 4, "stages": 4, "min_blocks": 4},
)


# The size sweep's patch for n where the finalists' tiles fill a fraction of a wave (n up to about
# 1600 on an H100): 64 x 128, two blocks of four warps per SM, with stream-K and inward edges (in
# its one-wave launches every tile then copies unchecked, and no edge tile lags). On an H100,
# against cuBLAS in the same run, with checked edge tiles it reached 0.88 at n = 1000, 0.97 at 1024
# and 1.05 at 1600, where the best finalist with stream-K reached 0.82, 0.91 and 0.98
# (tools/dev_gpu/matmul.sh's grid, this shape added); inward edges took n = 1000 to 0.907 against
# 0.895 (a probe, docs/tuning-log.md). At n = 4096 it is 0.87, so the search at tune_n never picks it.
SMALL_N_SHAPE = dict(bm=64, bn=128, bk=16, wm=32, wn=64, tm=8, tn=8, stages=4, min_blocks=2, inward_edges=1)


def async_search() -> list[MatmulKernel]:
    """The final step's configurations that the chapter's search times (``ASYNC_SEARCH``)."""
    return [warptile_async(**shape) for shape in ASYNC_SEARCH]


def finalists(search: pd.DataFrame, count: int = 4) -> list[MatmulKernel]:
    """The search's fastest correct configurations, one per block patch and tile depth (BM x BN x
    BK), at most ``count``: the fastest is the tuned kernel; the others go beside it into the size
    sweep. A smaller patch fills the SMs better where n splits into a few more blocks than a wave
    holds; a shallower tile (more k steps, more stages) wins where n, and so the k loop, is short
    (on an H100, 128x256x16 beats the tuned 128x256x32 at n = 2048)."""
    ok = search[search["family"].eq("warptile_async") & search["status"].eq("ok")].sort_values("time_ms")
    picked: list[MatmulKernel] = []
    shapes: set[tuple[int, int, int]] = set()
    for _, row in ok.iterrows():
        k = kernel_from_row(row)
        shape = (*k.patch, int(k.fields["bk"]))
        if shape not in shapes:
            picked.append(k)
            shapes.add(shape)
        if len(picked) == count:
            break
    return picked


def present_limits() -> dict[str, int]:
    """The present GPU's limits that a configuration must respect before it is compiled."""
    attrs = attributes()
    static = min(attrs.get("MaxSharedMemoryPerBlock", STATIC_SHARED_LIMIT), STATIC_SHARED_LIMIT)
    return {
        "threads": attrs["MaxThreadsPerBlock"],
        "shared_bytes": static,
        "dynamic_shared_bytes": max(static, attrs.get("MaxSharedMemoryPerBlockOptin", static)),
        "registers": attrs.get("MaxRegistersPerBlock", 65536),
    }


def refusal(kernel: MatmulKernel, limits: dict[str, int]) -> str:
    """Why ``kernel`` cannot be built or launched under ``limits`` (threads, shared_bytes per
    block), or "" if it can. Register limits are checked after compiling (``check_launch``)."""
    if kernel.problem:
        return kernel.problem
    if kernel.threads > limits["threads"]:
        return (
            f"block {kernel.block.x}x{kernel.block.y} = {kernel.threads} threads exceeds the limit of "
            f"{limits['threads']} threads per block"
        )
    if kernel.dynamic_shared:
        most = limits.get("dynamic_shared_bytes", limits["shared_bytes"])
        if kernel.shared_bytes > most:
            return (
                f"{kernel.shared_bytes:,} bytes of shared memory per block exceeds this GPU's limit of "
                f"{most:,} per block (dynamic shared memory, opted in)"
            )
    elif kernel.shared_bytes > limits["shared_bytes"]:
        return (
            f"{kernel.shared_bytes:,} bytes of shared memory per block exceeds the limit of "
            f"{limits['shared_bytes']:,} for statically sized shared memory"
        )
    if kernel.family in ("register_blocked", "warptile_async"):
        d = dict(kernel.defines)
        need = d["TM"] * d["TN"] + d["TM"] + d["TN"]  # accumulators + one k's operands, before any address
        per_block = limits.get("registers", 65536)
        cap = min(MAX_REGISTERS_PER_THREAD, per_block // (kernel.threads * d.get("MIN_BLOCKS", 1)))
        blocks = d.get("MIN_BLOCKS", 1)
        why = (
            "a thread addresses at most 255"
            if cap == MAX_REGISTERS_PER_THREAD
            else f"{blocks} x {kernel.threads} threads share {per_block:,}"
            if blocks > 1
            else f"{kernel.threads} threads share {per_block:,} per block"
        )
        if need > cap:
            return (
                f"a {d['TM']}x{d['TN']} footprint needs at least {need} registers per thread, over the {cap} "
                f"it can have ({why}): it would spill to local memory"
            )
    return ""


# The launch limits of every GPU in the occupancy rules but the Tegra ones: what ``present_limits``
# gives on a GTX 680 as on an H100 (threads and registers per block, static shared memory).
COMMON_LIMITS = {
    "threads": 1024,
    "shared_bytes": STATIC_SHARED_LIMIT,
    "dynamic_shared_bytes": STATIC_SHARED_LIMIT,
    "registers": 65536,
}


def launches(kernels: Sequence[MatmulKernel], limits: dict[str, int] | None = None) -> list[Launch]:
    """The launch (``MatmulKernel.launch``) of each configuration that ``sweep`` would compile and
    time under ``limits`` (default ``COMMON_LIMITS``): one ``refusal`` refuses before compiling
    leaves none."""
    limits = limits or COMMON_LIMITS
    return [k.launch() for k in kernels if not refusal(k, limits)]


def intensity(kernel: MatmulKernel) -> dict[str, float]:
    """The reuse a configuration's design gives, from its shape alone.

    ``fma_per_shared_float``: multiply-adds per float read from shared memory (a thread with an
    R x C footprint reads R + C floats per k for R * C multiply-adds; a one-result thread reads 2
    for 1). ``fma_per_global_float``: multiply-adds per float the block stages from global memory
    (a BM x BN patch loads BM + BN floats per k). The naive kernels stage nothing: every
    multiply-add reads two floats from global memory (caches aside)."""
    if kernel.family == "naive":
        return {"fma_per_shared_float": math.nan, "fma_per_global_float": 0.5}
    rows = kernel.patch[0] * kernel.patch[1] / kernel.threads
    if kernel.family in ("register_blocked", "warptile_async"):
        tm, tn = dict(kernel.defines)["TM"], dict(kernel.defines)["TN"]
    else:
        tm = tn = int(round(math.sqrt(rows)))
    bm, bn = kernel.patch
    return {"fma_per_shared_float": tm * tn / (tm + tn), "fma_per_global_float": bm * bn / (bm + bn)}


def beside_table2(table2: pd.DataFrame, ok: pd.DataFrame, basic: str, footprint: str) -> pd.DataFrame:
    """Lab 002's Table 2 beside this run, one row per n the lab timed: the footprint's gain as a
    ratio of each machine's own times (matmult00 over matmult01; ours: ``basic`` over
    ``footprint``, kernel labels of the correct rows ``ok``) and matmult01's GFLOP/s. Ours is NaN
    at an n this run did not time."""
    ours = ok.pivot_table(index="n", columns="kernel", values="time_ms")
    rows = []
    for n, g in table2.groupby("n"):
        t = g.set_index("kernel")["time_s"]
        here = ours.loc[n] if n in ours.index else None
        rows.append(
            {
                "n": n,
                "lab 002, 00 / 01 time": t["matmult00"] / t["matmult01"],
                "lab 002, 01 GFLOP/s": 2 * n**3 / t["matmult01"] / 1e9,
                "ours, 00 / 01 time": here[basic] / here[footprint] if here is not None else None,
                "ours, 01 GFLOP/s": 2 * n**3 / here[footprint] / 1e6 if here is not None else None,
            }
        )
    return pd.DataFrame(rows)


def reuse_table(ladder: pd.DataFrame, kernels: Sequence[MatmulKernel], occupancy: bool = True) -> pd.DataFrame:
    """The ladder's kernels that ran, one row each: the reuse their design gives (``intensity``),
    their registers, threads and shared memory, their GFLOP/s, and, with ``occupancy``, the
    blocks per SM that those resources allow on the present GPU (``resident_blocks``). ``ladder``
    is the ladder table's correct rows; ``kernels`` the configurations it ran, found by label."""
    by_label = {k.label: k for k in kernels}
    rows = [
        {
            "kernel": r["kernel"],
            **intensity(by_label[r["kernel"]]),
            "registers_per_thread": r["registers_per_thread"],
            "threads": r["threads"],
            "shared_bytes": r["shared_bytes"],
            "gflop_per_s": r["gflop_per_s"],
        }
        for _, r in ladder.iterrows()
    ]
    out = pd.DataFrame(rows)
    if occupancy:
        sm = present_sm()
        blocks = [
            resident_blocks(int(r.threads), int(r.registers_per_thread), int(r.shared_bytes), sm)
            for r in out.itertuples()
        ]
        out = pd.concat([out, pd.DataFrame(blocks)], axis=1)
    return out


# ------------------------------------------------------------------------------- measuring


@dataclass
class Operands:
    """A seeded problem of size n on the device, with cuBLAS's answer and the error scale |A||B|."""

    n: int
    a: Any
    b: Any
    c: Any
    reference: Any
    scale: Any


def operands(n: int, seed: int) -> Operands:
    cp = require_cupy()
    require_memory(6 * n * n * FLOAT32, f"n={n} (A, B, C, the cuBLAS result, |A||B| and a temporary)")
    rng = cp.random.default_rng(seed + n)
    a = rng.random((n, n), dtype=cp.float32) * 2 - 1
    b = rng.random((n, n), dtype=cp.float32) * 2 - 1
    reference = cp.matmul(a, b)
    scale = cp.matmul(cp.abs(a), cp.abs(b))
    return Operands(n, a, b, cp.empty_like(a), reference, scale)


def cublas_precision(k: int = 1024) -> pd.DataFrame:
    """Is ``cupy.matmul`` full FP32 here? A row of k values 1 + 2^-13 times a column of ones is
    exactly k (1 + 2^-13) in FP32; TF32 keeps 10 mantissa bits, rounds each value to 1 and gives k.
    Raises ``MeasurementError`` if cuBLAS answers like TF32: no fraction of cuBLAS would be fair."""
    cp = require_cupy()
    a = cp.full((32, k), 1 + 2.0**-13, dtype=cp.float32)
    b = cp.ones((k, 32), dtype=cp.float32)
    got = float(cp.matmul(a, b)[0, 0])
    expected = k * (1 + 2.0**-13)
    frame = pd.DataFrame(
        [
            {
                "check": "1 + 2^-13 summed by cupy.matmul",
                "k": k,
                "expected": expected,
                "got": got,
                "tf32_would_give": float(k),
                "CUPY_TF32": os.environ.get("CUPY_TF32", "unset"),
                "NVIDIA_TF32_OVERRIDE": os.environ.get("NVIDIA_TF32_OVERRIDE", "unset"),
                "full_fp32": got == expected,
            }
        ]
    )
    if got != expected:
        raise MeasurementError(
            f"cupy.matmul gave {got} where FP32 gives {expected} (TF32 would give {k}): cuBLAS "
            f"is not computing in full FP32 here. Unset CUPY_TF32 (and NVIDIA_TF32_OVERRIDE) "
            f"and run again"
        )
    return frame


def measure(kernel: MatmulKernel, compiled, ops: Operands, timing: dict[str, Any]) -> dict[str, Any]:
    """Time one configuration at ``ops.n`` and check the timed run's C against cuBLAS."""
    cp = require_cupy()
    n, spec = ops.n, kernel.launch(ops.n)
    allow_shared_memory(compiled, spec.dynamic_shared_bytes)
    spec.check(compiled)
    args = (ops.a, ops.b, ops.c, np.int32(n))
    # A kernel that accumulates into C needs it zeroed before every call; one that writes C gets it
    # poisoned with NaN once, so the check below still catches an element no call wrote, and its
    # calls are timed back to back as cuBLAS's are (time_gpu groups short calls without a setup).
    reset = (lambda: ops.c.fill(0)) if kernel.zero_c else None
    ops.c.fill(np.nan)
    samples = time_gpu(lambda: spec(args, kernel=compiled), setup=reset, **timing)
    stats = summarize(samples)
    cp.cuda.get_current_stream().synchronize()
    check = compare_close(ops.c, ops.reference, ops.scale, tolerance(n), "cuBLAS", "|A||B|")
    return {
        **stats,
        "gflop_per_s": float(gflop_per_s(flops(n), stats["time_ms"])),
        "registers_per_thread": compiled.num_regs,
        "spill_bytes_per_thread": compiled.local_size_bytes,
        "tolerance": tolerance(n),
        **check,
    }


def cublas_call(ops: Operands):
    """The baseline call: cuBLAS SGEMM (``cupy.matmul`` into a preallocated C). It does not consume
    its input, so it can run back to back (``check_cublas``)."""
    cp = require_cupy()
    return lambda: cp.matmul(ops.a, ops.b, out=ops.c)


def measure_cublas(ops: Operands, timing: dict[str, Any]) -> dict[str, Any]:
    """cuBLAS SGEMM on the same operands, timed as every kernel that writes C is (``time_gpu``, C
    poisoned with NaN once before the timed calls, which the check after them would catch)."""
    ops.c.fill(np.nan)
    samples = time_gpu(cublas_call(ops), **timing)
    stats = summarize(samples)
    check = compare_close(ops.c, ops.reference, ops.scale, tolerance(ops.n), "cuBLAS", "|A||B|")
    return {
        **stats,
        "gflop_per_s": float(gflop_per_s(flops(ops.n), stats["time_ms"])),
        "tolerance": tolerance(ops.n),
        **check,
    }


CUBLAS = "cuBLAS SGEMM"

# Column names as a printed table heads them (the tidy names stay in the data).
SHORT_NAMES = {
    "source": "from",
    "time_ms": "ms",
    "gflop_per_s": "GFLOP/s",
    "speedup_over_previous": "x previous",
    "fraction_of_cublas": "of cuBLAS",
    "fraction_of_peak": "of peak",
    "registers_per_thread": "regs",
    "results_per_thread": "results/thread",
    "shared_bytes": "shared B",
    "fma_per_shared_float": "FMA per shared float",
    "fma_per_global_float": "FMA per global float",
    "blocks_per_sm": "blocks/SM",
    "warps_per_sm": "warps/SM",
    "limited_by": "limited by",
}


def sweep(
    kernels: Sequence[MatmulKernel],
    sizes: Sequence[int],
    *,
    seed: int,
    timing: dict[str, Any] | None = None,
    limits: dict[str, int] | None = None,
    desc: str = "matmul",
    show_progress: bool = True,
) -> pd.DataFrame:
    """Every configuration at every n, and cuBLAS at every n in the same run: one tidy row each.

    A configuration that breaks a launch limit is refused before it is compiled (status
    'skipped', the limit named); ``fraction_of_cublas`` is cuBLAS's time over the kernel's at the
    same n, for correct rows only."""
    timing = timing or {}
    limits = limits or present_limits()
    compiled: dict[str, Any] = {}
    # label -> (status, reason) for configurations that never run: refused by a limit, or not compiling
    excluded = {k.label: ("skipped", f"LaunchRefused: {refusal(k, limits)}") for k in kernels if refusal(k, limits)}
    cache: dict[int, Operands] = {}

    def ops_for(n: int) -> Operands:
        if n not in cache:
            cache.clear()
            require_cupy().get_default_memory_pool().free_all_blocks()
            cache[n] = operands(n, seed)
        return cache[n]

    by_label = {k.label: k for k in kernels}
    points = [{"n": n, "kernel": label} for n in sizes for label in [CUBLAS, *by_label]]

    def one(p: dict[str, Any]) -> dict[str, Any]:
        k = by_label.get(p["kernel"])
        described = k.row() if k else {"family": "cublas"}
        try:
            if k is None:
                return {**described, **measure_cublas(ops_for(p["n"]), timing)}
            if k.label in excluded:
                status, reason = excluded[k.label]
                return {**described, "status": status, "reason": reason}
            if k.label not in compiled:
                compiled[k.label] = k.compile()
            return {**described, **measure(k, compiled[k.label], ops_for(p["n"]), timing)}
        except refusal_types() as exc:  # refused here, with its configuration still described
            return {**described, "status": "skipped", "reason": f"{type(exc).__name__}: {exc}"}
        except KernelCompileError as exc:  # a kernel edited into not compiling: its rows fail, the rest run
            excluded[k.label] = ("failed", f"does not compile: {str(exc).splitlines()[0]}")
            return {**described, "status": "failed", "reason": excluded[k.label][1]}

    frame = run_sweep(points, one, desc=desc, show_progress=show_progress)
    return with_cublas(frame)


def with_cublas(frame: pd.DataFrame) -> pd.DataFrame:
    """Add ``cublas_time_ms`` (cuBLAS at the same n, same run) and ``fraction_of_cublas`` (NaN
    for rows that are not correct: a wrong or skipped kernel is never a fraction of anything)."""
    cublas = frame[frame["kernel"].eq(CUBLAS) & frame["status"].eq("ok")].set_index("n")["time_ms"]
    out = frame.copy()
    out["cublas_time_ms"] = out["n"].map(cublas)
    out["fraction_of_cublas"] = (out["cublas_time_ms"] / out["time_ms"]).where(out["status"].eq("ok"))
    return out


CHECK_AT = 4096  # cuBLAS is checked at this n, or the largest one of the sweep below it


def check_point(frame: pd.DataFrame, at: int = CHECK_AT) -> int | None:
    """The n of ``frame`` at which cuBLAS is checked: ``at``, else the largest correct cuBLAS n
    below it, else the smallest; None where cuBLAS has no correct row."""
    ns = sorted(frame.loc[frame["kernel"].eq(CUBLAS) & frame["status"].eq("ok"), "n"].astype(int).unique())
    if not ns:
        return None
    below = [n for n in ns if n <= at]
    return below[-1] if below else ns[0]


def check_cublas(
    frame: pd.DataFrame, *, seed: int, timing: dict[str, Any] | None = None, at: int = CHECK_AT
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Check the sweep's cuBLAS median at one n (``check_point``) against 50 back-to-back calls on
    the same operands in this run (``core.baseline.check``: re-measured once if more than 3% off,
    else flagged). Returns the frame (cuBLAS's row replaced by an agreeing re-measurement, its
    ``baseline_check`` column saying the verdict, the fractions of cuBLAS recomputed) and the
    check's one-row table."""
    timing = timing or {}
    n = check_point(frame, at)
    if n is None:
        return frame, pd.DataFrame()
    require_cupy().get_default_memory_pool().free_all_blocks()
    ops = operands(n, seed)
    at_n = frame["kernel"].eq(CUBLAS) & frame["n"].eq(n)
    again: dict[str, Any] = {}

    def measure_again() -> float:
        again.update(measure_cublas(ops, timing))
        return again["time_ms"]

    row = baseline.check(
        CUBLAS,
        {"n": n},
        float(frame.loc[at_n, "time_ms"].iloc[0]),
        measure_again,
        lambda: back_to_back(cublas_call(ops), calls=baseline.CALLS),
    )
    out = frame.drop(columns=["cublas_time_ms", "fraction_of_cublas"], errors="ignore")
    if row["status"] == baseline.REMEASURED:
        for column, value in again.items():
            if column in out.columns:
                out.loc[at_n, column] = value
    out["baseline_check"] = ""
    out.loc[at_n, "baseline_check"] = row["status"]
    return with_cublas(out), pd.DataFrame([row])


def best(frame: pd.DataFrame, n: int | None = None, exclude_cublas: bool = True) -> pd.Series | None:
    """The fastest correct row (at ``n`` if given); None if none ran correctly."""
    ok = frame[frame["status"].eq("ok")]
    if exclude_cublas:
        ok = ok[~ok["kernel"].eq(CUBLAS)]
    if n is not None:
        ok = ok[ok["n"].eq(n)]
    return None if ok.empty else ok.sort_values("time_ms").iloc[0]


def wave_table(frame: pd.DataFrame, unsplit: str, split: str) -> pd.DataFrame:
    """At each n where both ran correctly: the ``unsplit`` kernel's wave fill (``split_plan``'s,
    for the wave its ``split`` build was made for) beside each one's fraction of cuBLAS, as tidy
    rows (n, what, value). Empty where either is missing (no GPU sized the split, or no row ran)."""
    ok = frame[frame["status"].eq("ok")]
    rows: list[dict[str, Any]] = []
    for n, at in ok.groupby("n"):
        one, other = at[at["kernel"].eq(unsplit)], at[at["kernel"].eq(split)]
        if one.empty or other.empty or not other["wave"].iloc[0] > 0:
            continue
        shape = other.iloc[0]
        plan = split_plan(int(n), int(shape["bm"]), int(shape["bn"]), int(shape["bk"]), int(shape["wave"]))
        rows += [
            {"n": int(n), "what": "wave fill, unsplit grid", "value": plan["wave_fill"]},
            {"n": int(n), "what": f"{unsplit}: of cuBLAS", "value": float(one["fraction_of_cublas"].iloc[0])},
            {"n": int(n), "what": f"{split}: of cuBLAS", "value": float(other["fraction_of_cublas"].iloc[0])},
        ]
    return pd.DataFrame(rows, columns=["n", "what", "value"])


def relabel(kernel: MatmulKernel, label: str) -> MatmulKernel:
    """The same configuration under another name (the ladder's and the size sweep's own)."""
    return dataclasses.replace(kernel, label=label)


def kernel_from_row(row: pd.Series | dict[str, Any]) -> MatmulKernel:
    """The configuration a recorded tuning row names: register-blocked (bm, bn, bk, tm, tn), or
    the final step's (family warptile_async: also wm, wn, stages, min_blocks)."""
    r = dict(row)
    if r.get("family") == "warptile_async":
        wave = r.get("wave", 0)
        given = {k: r.get(k, 0) for k in ASYNC_SHAPE}  # inward_edges: absent (or NaN) in rows from before it
        return warptile_async(
            **{k: int(v) if v == v else 0 for k, v in given.items()},
            wave=int(wave) if wave == wave and wave else 0,  # NaN (a row from before the split): none
        )
    return register_blocked(
        int(r["bm"]), int(r["bn"]), int(r["bk"]), int(r["tm"]), int(r["tn"]), bool(r.get("double_buffer", True))
    )


def tuning_grid(tiles: Sequence[int], depths: Sequence[int], thread_tiles: Sequence[int]) -> list[MatmulKernel]:
    """Register-blocked configurations over BM, BN in ``tiles``, BK in ``depths``, TM, TN in
    ``thread_tiles``: the autotuning sweep (shape-rule breakers are kept, to be shown refused)."""
    return [
        register_blocked(bm, bn, bk, tm, tn)
        for bm in tiles
        for bn in tiles
        for bk in depths
        for tm in thread_tiles
        for tn in thread_tiles
    ]


# ------------------------------------------------------------------------------- the footprint figure


def plot_footprint(block_edge: int, foot: int, ax=None, title: str = ""):
    """Who computes which element of one block's FOOT x FOOT patch of C: a colour per thread,
    each thread's R x R results spaced ``block_edge`` apart, as lab 002's matmultKernel01 places them."""
    ax = ax or plt.subplots(figsize=(4, 4))[1]
    r = foot // block_edge
    colors = sns.color_palette("husl", block_edge * block_edge)
    for row in range(foot):
        for col in range(foot):
            ty, tx = row % block_edge, col % block_edge
            ax.add_patch(
                plt.Rectangle((col, foot - 1 - row), 1, 1, color=colors[ty * block_edge + tx], ec="white", lw=0.5)
            )
            if foot <= 16:
                ax.text(col + 0.5, foot - 0.5 - row, f"{ty},{tx}", ha="center", va="center", fontsize=6)
    for k in range(1, r):
        ax.axhline(k * block_edge, color="black", lw=1.2)
        ax.axvline(k * block_edge, color="black", lw=1.2)
    ax.set(
        xlim=(0, foot),
        ylim=(0, foot),
        xticks=[],
        yticks=[],
        aspect="equal",
        title=title or f"{block_edge}x{block_edge} threads, {foot}x{foot} footprint: {r * r} results per thread",
    )
    ax.grid(False)
    return ax


# ------------------------------------------------------------------------------- the explorer's point


def _footprint_point(
    point: dict[str, Any], kernel_file: str | os.PathLike | None = None, params: dict[str, Any] | None = None
) -> pd.DataFrame:
    """Lab 002's footprint kernel at one block, footprint and n, through ``sweep`` (cuBLAS timed in
    the same run, in its columns), with its launch's occupancy."""

    n, b, foot = point["n"], point["block_x"], point["footprint"]
    kernel = footprint(b, foot).from_copy(kernel_file)
    require_used(kernel_file, [kernel.launch()], "lab 002's footprint kernel")
    if not refusal(kernel, present_limits()):
        kernel.compile()  # a copy that does not compile says where, here (the sweep would only mark it failed)
    params = params or {}
    frame = sweep(
        [kernel], [n], seed=seed_of(params), timing=timing_of(params), desc="footprint point", show_progress=False
    )
    rows = frame[~frame["kernel"].eq(CUBLAS)].reset_index(drop=True)  # cuBLAS: in its columns, same run
    return with_occupancy(rows, kernel.launch(n))


# Chapter 05's recipe for the explorer.
FOOTPRINT_POINT = PointRecipe(
    "05_matmul_footprint",
    "footprint_sweep",
    {"n": int, "block_x": int, "footprint": int},
    {"n": 1024, "block_x": 8, "footprint": 40},
    "mm_02_footprint.cu",
    {},
    _footprint_point,
    "lab 002's footprint kernel: block_x x block_x threads, a footprint x footprint patch, at one n",
)
