"""K-means iterations on the GPU, stage by stage: lab 004's ladder, our fused pass, and CuPy.

A ``Runner`` holds one variant's device state for one problem and runs one iteration as a list
of stages (assign, delta, update, transfer, ...), each timed: device stages with CUDA events,
enqueued behind a hold on the stream so that no host dispatch lands between the events, host
stages (the classic host update, copies the host waits for) with a wall clock after the stream
is idle. An iteration's time is the sum of its stages.

Variants, in lab 004's order:
    host_update     a: find_nearest_cluster + compute_delta (the lab's fix) on the GPU; the
                    membership goes to the host, which updates the centres (classic C loop)
                    and sends them back
    device_update   b: update_clusters_sum (global atomics) + update_clusters_average on the GPU
    shared_buffers  c: per-block shared-memory cluster buffers, merged once per block
    fused           ours: one pass (assign, count, partial sums), centres in constant memory
    tiled           ours: the same pass with the distances blocked in registers like a matrix
                    multiply (TP objects x TQ centres per thread), centres in shared memory
    fixed           ours: the tiled pass with its sums in 64-bit fixed point (integer atomics),
                    so that the centres are the same bits whatever order the GPU adds in
    dot             ours: each thread's points in registers, scored by |c|^2 - 2 x.c against
                    centres read by broadcast from shared memory; fixed's sums, no block barrier
    tensor          ours: dot's pass with the scores on the tensor cores (TF32 split three ways,
                    about float32's precision), each lane's own coordinates added to fixed's sums
    exact           ours, off the ladder: the sequential code's arithmetic, bit for bit (its
                    distances without FMA, each cluster's sums added in object order), so that
                    the GPU gives the sequential mode's very memberships and centres; slow where
                    a cluster has millions of members (one thread's chain of adds per sum)
    cupy            the peer a CuPy user would write: a matrix multiply for the distances,
                    argmin, and a scatter-add for the sums
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cudalab.core.errors import LaunchRefused, MeasurementError
from cudalab.core.gpu import attributes, compute_capability, require_cupy
from cudalab.core.kernels import load_module
from cudalab.core.launch import Dim3, Launch, allow_shared_memory, require_memory
from cudalab.core.occupancy import present_sm, resident_blocks, sm_limits
from cudalab.core.timing import StreamHold
from cudalab.labs.kmeans import reference

VARIANTS = {
    "host_update": "a: centres updated on the host",
    "device_update": "b: update on the device",
    "shared_buffers": "c: shared-memory cluster buffers",
    "fused": "ours: fused pass, constant centres",
    "tiled": "ours: fused pass, register-tiled",
    "fixed": "ours: tiled, fixed-point sums",
    "dot": "ours: points in registers, fixed-point sums",
    "tensor": "ours: tensor-core scores, fixed-point sums",
    "exact": "ours: the sequential code's arithmetic",
    "cupy": "CuPy, vectorized",
    "torch": "PyTorch, as its users write it",
}
PEERS = ("cupy", "torch")  # libraries' iterations beside ours, never ours
LADDER = ("host_update", "device_update", "shared_buffers", "fused", "tiled", "fixed", "dot", "tensor")
CLASSIC = LADDER[:3]  # the variants built on the classic code's assignment kernel
THREADS = 128  # the classic code's threads per block
FUSED_THREADS = 256
# The fused kernel's knobs (see km_03_fused.cu): objects per thread, centres in shared memory
# rather than constant memory, and how many centres are unrolled at a time.
FUSED_OPTIONS = {"POINTS": 1, "CENTRES_IN_SHARED": 0, "CENTRE_UNROLL": 32, "SUMS_BY_WARP": 1}
FUSED_COPIES = (4, 2, 1)  # copies of the fused kernel's shared sums, the most that fit
WARP_SUMS_BUDGET = 40 * 1024  # bytes of per-warp sums a block may keep (SUMS_BY_WARP)
SHARED_LIMIT = 48 * 1024
CONSTANT_LIMIT = 64 * 1024
FUSED_MAX_D = 128  # a point's coordinates live in registers
TILED_TP = 4  # objects per thread in the tiled kernel
TILED_TQ = 8  # centres per thread while fewer than 32 lanes share an object group
TILED_MAX_TQ = 16  # centres per thread, at most (TP x TQ scores live in registers)
TILED_THREADS = 128  # at most; each warp keeps its own K x D sums, so fewer warps leave more blocks per SM
DOT_THREADS = 128  # the register kernel's block: its sums are per block, so a few small blocks share an SM
DOT_MAX_D = 128  # D x PPT coordinates of a thread's points live in registers (PPT = 8 at D = 32 spills)
DOT_PPT = (1, 2, 4, 8)  # the objects per thread km_06 compiles for
DOT_MAX_D_PPT8 = 96  # with 8 objects per thread, D x 8 = 128 spills (sm_75, sm_90); D <= 12 does not
DOT_CPAIR = 2  # centres scored per loop step (1 or 2)
TENSOR_THREADS = 128  # the tensor-core kernel's block: per-block sums, as the register kernel's
# Up to this K, the tensor-core kernel gives each quad its own copy of the sums, over blocks of 256:
# no two lanes of an atomic share a word or a bank. Measured on an H100 at N = 4 Mi, D = 32, one
# iteration took 0.234 ms against 0.316 with one copy at K = 8, and at K = 32 0.27 against 0.29
# (both with the carrying fixed_add, before split_add). Past 32, eight copies would leave one
# block per SM.
TENSOR_COPIES_MAX_K = 32
# Warps per SM the tensor-core kernel's registers must allow: 16 (128 registers a thread) while the
# K scores of four objects fit; at K = 64 they need more, and 12 warps spill less.
TENSOR_MIN_WARPS = 16
TENSOR_MIN_WARPS_WIDE_K = 12
TENSOR_MAX_K = 64  # 2 x ceil(K / 8) x 4 scores per lane live in registers (K = 64: 174 registers on sm_90)
TENSOR_MAX_D = 32  # D coordinates of a lane's four objects live in registers
TENSOR_MIN_CC = (8, 0)  # mma.sync with TF32 operands: Ampere and later
ONE_PASS = "assign+delta+update (one pass)"
HELD_TRIES = 3  # an iteration whose host fell behind the hold is measured again, at most this often
WARMUP = 2  # untimed iterations before the timed ones (time_iterations)
DEVICE_LOOP = ("tensor",)  # variants whose pass also ends the run (km_07 item 11): the loop needs no host
LOOP_BATCH = 4  # the device loop's iterations enqueued at a time; the host looks at the end flag once per batch
SCALE_HEADROOM_BITS = 62  # the fixed-point sums keep N x max|x| x 2^s below 2^62 (int64, with a bit to spare)
SCALE_MAX_BITS = (
    60  # and 2^s no larger than this where the data are all near zero  # the stage name of the fused and tiled kernels
)


def shared_optin() -> int:
    """Shared memory a block may opt in to on the present GPU (48 KiB where none is present)."""
    from cudalab.core.gpu import gpu_available

    return attributes().get("MaxSharedMemoryPerBlockOptin", SHARED_LIMIT) if gpu_available() else SHARED_LIMIT


def fused_shape(d: int, k: int, optin: int | None = None) -> dict[str, int]:
    """The fused kernel's plan for D and K: threads per block, and where its sums go.

    SUMS_BY_WARP (a staged tile and one copy of the sums per warp, in dynamic shared memory) where
    the warps' copies stay within ``WARP_SUMS_BUDGET`` bytes at 256 or 128 threads per block, so
    that a few blocks still share an SM; else lane atomics into COPIES static copies of the sums
    (0 copies: not even one fits). Measured on the H100: staged sums win where a warp's lanes often
    pick the same cluster (small K) and lose where the copies crowd the SM (K = 128)."""
    optin = shared_optin() if optin is None else optin
    if FUSED_OPTIONS.get("SUMS_BY_WARP", 1):
        for threads in (FUSED_THREADS, FUSED_THREADS // 2):
            sums = 4 * (threads // 32) * k * (d + 1)
            dynamic = 4 * d * (threads + 1) + sums
            if sums <= WARP_SUMS_BUDGET and dynamic + 4 * (k + 1024 + 1) <= optin:
                return {"SUMS_BY_WARP": 1, "COPIES": 1, "threads": threads, "dynamic_bytes": dynamic}
    copies = next((c for c in FUSED_COPIES if 4 * (c * (k * (d + 1) + 1) + c * k + 1) <= SHARED_LIMIT), 0)
    return {"SUMS_BY_WARP": 0, "COPIES": copies, "threads": FUSED_THREADS, "dynamic_bytes": 0}


def tiled_shape(d: int, k: int) -> dict[str, int]:
    """The tiled kernel's blocking for D and K (see km_04_tiled.cu): G lanes share a group of
    TP = 4 objects, each taking TQ of the K centres (at most 8 while G < 32); THREADS = 64 G up
    to 128, so a tile holds 256 objects while G <= 2 and fewer beyond. ``dynamic_bytes``: its
    shared memory (two tile buffers). Measured on the H100 at N = 4M, D = K = 32: G = 4 x TQ = 8
    over 128 threads beat G = 2 x TQ = 16 (64, 128 or 256 threads) by 5-10%."""
    groups = -(-k // TILED_TQ)
    g = min(32, 1 << (groups - 1).bit_length())
    tq = -(-k // g)
    threads = min(TILED_THREADS, 64 * g)
    tile = threads // g * TILED_TP
    kp = g * tq
    round4 = lambda floats: -(-floats // 4) * 4
    floats = 2 * d * (tile + 4) + round4(d * kp) + round4(kp) + tile + threads // 32 * k * d
    return {"TP": TILED_TP, "TQ": tq, "G": g, "THREADS": threads, "dynamic_bytes": 4 * floats}


def fixed_shape(d: int, k: int) -> dict[str, int]:
    """The fixed-point kernel's blocking (km_05_fixed_point.cu): the tiled kernel's, with each
    warp's K x D sums in int64, twice the bytes of the tiled kernel's floats."""
    plan = tiled_shape(d, k)
    return {**plan, "dynamic_bytes": plan["dynamic_bytes"] + 4 * plan["THREADS"] // 32 * k * d}


def dot_shape(
    d: int,
    k: int,
    ppt: int | None = None,
    threads: int | None = None,
    cpair: int | None = None,
    prefetch: int | None = None,
) -> dict[str, int]:
    """The register kernel's plan (km_06_dot_assign.cu): PPT objects per thread, 2 while D <= 64
    (2 x D floats in registers; at D = 32 ptxas reports 128 registers, no spills, on sm_90), else
    1; THREADS per block (DOT_THREADS); CPAIR centres per loop step (2); PREFETCH (0: off; 1
    loads the next step's objects while scoring this step's); ``dynamic_bytes``: the
    centres padded to whole float4s, their norms, the block's sums (low and high words), the
    cluster sizes and each warp's staging rows of 32 objects. ``ppt``, ``threads``, ``cpair``,
    ``prefetch`` override the default choice (a tuning run; ``refusal`` says whether the override can run)."""
    round4 = lambda floats: -(-floats // 4) * 4  # noqa: E731
    ppt = ppt if ppt is not None else 2 if d <= 64 else 1
    threads = threads if threads is not None else DOT_THREADS
    cpair = cpair if cpair is not None else DOT_CPAIR
    prefetch = prefetch if prefetch is not None else 0
    dp = round4(d)
    pitch = dp + 4 if dp % 8 == 0 else dp
    floats = k * dp + round4(k) + 2 * round4(k * d) + round4(k) + threads // 32 * 32 * pitch
    return {"PPT": ppt, "THREADS": threads, "CPAIR": cpair, "PREFETCH": prefetch, "dynamic_bytes": 4 * floats}


def tensor_shape(d: int, k: int) -> dict[str, int]:
    """The tensor-core kernel's block (km_07_tensor_scores.cu): THREADS, COPIES of the block's
    sums (one per quad of lanes where K <= TENSOR_COPIES_MAX_K, over blocks of 256), MIN_WARPS
    per SM its registers allow, and ``dynamic_bytes``: the centres' split TF32 fragments (one
    uint4 per lane, column tile and step of 8 coordinates), their norms, and the sums' low and
    high words (one copy: rows D + 1 words apart; eight: rows 32 words apart, copies K x 32 + 4)."""
    tiles, steps = -(-k // 8), -(-d // 8)
    copies = 8 if k <= TENSOR_COPIES_MAX_K else 1
    threads = 256 if copies > 1 else TENSOR_THREADS
    words = k * (d + 1) if copies == 1 else copies * (k * 32 + 4)
    return {
        "THREADS": threads,
        "COPIES": copies,
        "MIN_WARPS": TENSOR_MIN_WARPS if k <= 32 else TENSOR_MIN_WARPS_WIDE_K,
        "dynamic_bytes": 16 * tiles * steps * 32 + 4 * 8 * tiles + 8 * words,
    }


def tensor_split(n: int, max_fixed: int, threads: int, copies: int, grid: int) -> tuple[int, int]:
    """The tensor-core kernel's grid and SPLIT for N objects whose fixed-point values are at most
    ``max_fixed`` in magnitude: the sums' low word takes SPLIT bits of each value, the high word
    the rest, and neither word's sum may leave 32 bits (``split_add`` in fixed_point_add.cuh).
    A copy of a block's sums takes ``threads / copies`` objects per step of its warps, one step per
    ``grid x threads`` objects, so a larger grid means fewer adds to one word: starting from
    ``grid`` (the blocks the GPU holds at once), doubled until a SPLIT fits. SPLIT = 0 where
    none does even at one step per warp: the scale gives values up to about 2^61 / N, so below
    a few hundred objects (eight copies; a few thousand with one) the words would overflow. The
    kernel then carries between the words instead (``fixed_add``), exact at any count."""
    if n < 1 or threads < 32 or copies < 1 or grid < 1:
        raise ValueError(
            f"tensor_split needs n, grid >= 1, threads >= 32 and copies >= 1 (got {n}, {grid}, {threads}, {copies})"
        )
    while True:
        steps = -(-n // (grid * threads))
        adds = steps * threads // copies  # at most this many values add to one word
        bits = next((b for b in range(31, 0, -1) if adds * ((1 << b) - 1) < 2**32), 0)
        if bits and adds * ((max_fixed >> bits) + 1) < 2**31:
            return grid, bits
        if steps == 1:
            return grid, 0
        grid *= 2


def fixed_point_bits(n: int, max_abs: float) -> int:
    """The fixed-point kernel's s (sums in units of 2^-s): the largest s with N x max|x| x 2^s below
    2^SCALE_HEADROOM_BITS, so that no cluster's sum (nor any partial sum) can overflow int64; at
    most SCALE_MAX_BITS. Chosen once per data set, not per iteration."""
    import math

    if max_abs <= 0.0:
        return SCALE_MAX_BITS
    return min(SCALE_MAX_BITS, SCALE_HEADROOM_BITS - math.ceil(math.log2(max(n, 1) * max_abs)) - 1)


def refusal(
    variant: str,
    d: int,
    k: int,
    optin: int | None = None,
    tune: dict[str, int] | None = None,
    cc: str | None = None,
) -> str:
    """Why ``variant`` cannot run with D coordinates and K clusters here (on a GPU whose blocks may
    opt in to ``optin`` bytes of shared memory: by default the present one's), or "". ``tune``:
    the dot variant's overrides (``dot_shape``'s ppt, threads, cpair); ``cc``: the GPU's compute
    capability ("8.0"; default the present GPU's, unchecked where there is none)."""
    if variant == "torch":
        return torch_missing()
    assign = 4 * (k * d + THREADS)
    if variant in CLASSIC and assign > SHARED_LIMIT:
        return (
            f"the classic assignment stages all K x D = {k * d:,} centre coordinates in shared memory: "
            f"{assign:,} bytes exceeds the {SHARED_LIMIT:,} a block may have"
        )
    buffers = 4 * (k * (d + 1) + k + 1)
    if (variant == "shared_buffers" and buffers > SHARED_LIMIT) or (
        variant == "fused" and not fused_shape(d, k, optin)["COPIES"]
    ):
        return f"per-block cluster buffers of {buffers:,} bytes exceed the {SHARED_LIMIT:,} a block may have"
    if variant == "fused" and 4 * (k * d + k) > CONSTANT_LIMIT:
        return (
            f"the centres and their norms, {4 * (k * d + k):,} bytes, exceed the {CONSTANT_LIMIT:,} "
            f"bytes of constant memory"
        )
    if variant == "fused" and d > FUSED_MAX_D:
        return f"D = {d} coordinates per point in registers exceeds the {FUSED_MAX_D} this kernel allows"
    if variant == "dot":
        plan = dot_shape(d, k, **(tune or {}))
        if plan["PPT"] not in DOT_PPT or plan["CPAIR"] not in (1, 2) or plan["PREFETCH"] not in (0, 1):
            return (
                f"PPT = {plan['PPT']}, CPAIR = {plan['CPAIR']}, PREFETCH = {plan['PREFETCH']}: km_06 takes PPT in "
                f"{DOT_PPT}, CPAIR 1 or 2 and PREFETCH 0 or 1"
            )
        if plan["THREADS"] % 32 or not 32 <= plan["THREADS"] <= 1024:
            return f"THREADS = {plan['THREADS']}: a block of whole warps, 32 to 1024 threads"
        most = DOT_MAX_D_PPT8 if plan["PPT"] == 8 else DOT_MAX_D
        held = d * plan["PPT"] * (1 + plan["PREFETCH"])  # the next step's objects too, where prefetched
        if held > most:
            return (
                f"D x PPT{' x 2 (prefetch)' if plan['PREFETCH'] else ''} = {held} coordinates per thread in "
                f"registers exceeds the {most} this kernel allows at PPT = {plan['PPT']}"
            )
        room = (shared_optin() if optin is None else optin) - 4
        if plan["dynamic_bytes"] > room:
            return (
                f"the centres, the block's int64 sums and the warps' staging rows take "
                f"{plan['dynamic_bytes']:,} bytes of shared memory; a block may have {room:,}"
            )
    if variant == "tensor":
        cc = cc if cc is not None else compute_capability()
        if cc is not None and tuple(int(part) for part in cc.split(".")) < TENSOR_MIN_CC:
            return f"tensor-core TF32 (mma.sync) needs compute capability 8.0 or later; this GPU is {cc}"
        if k > TENSOR_MAX_K or d > TENSOR_MAX_D:
            return (
                f"D = {d}, K = {k}: this kernel keeps a lane's scores (K <= {TENSOR_MAX_K}) and coordinates "
                f"(D <= {TENSOR_MAX_D}) in registers"
            )
    if variant in ("tiled", "fixed"):
        plan = tiled_shape(d, k) if variant == "tiled" else fixed_shape(d, k)
        if plan["TQ"] > TILED_MAX_TQ:
            return (
                f"K = {k} centres over 32 lanes is {plan['TQ']} per thread, more than the {TILED_MAX_TQ} "
                f"scores per object this kernel keeps in registers"
            )
        room = (shared_optin() if optin is None else optin) - 4 * (k + 1)
        if plan["dynamic_bytes"] > room:
            return (
                f"the tile, the centres and each warp's {'int64 ' if variant == 'fixed' else ''}sums take "
                f"{plan['dynamic_bytes']:,} bytes of shared memory; a block may have {room:,}"
            )
    return ""


def release_cached_memory() -> None:
    """Free CuPy's pool and, where the PyTorch peer ran, PyTorch's cache, so that a problem of
    another size has the whole GPU (PyTorch keeps what it freed for itself)."""
    import sys

    require_cupy().get_default_memory_pool().free_all_blocks()
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        torch.cuda.empty_cache()


def torch_missing() -> str:
    """Why the PyTorch peer cannot run here, or "": the reason its rows give where it is absent."""
    try:
        import torch
    except ImportError:
        return "PyTorch is not installed here (pip install torch): the PyTorch peer needs it"
    if not torch.cuda.is_available():
        return f"PyTorch {torch.__version__} here sees no CUDA device"
    return ""


def _stage(stage: str, file: str, kernel: str, threads: int, shared: int = 0, options: tuple[str, ...] = ()) -> Launch:
    """One kernel of an iteration: a 1D block of ``threads``, labelled with the ``stage`` that times it."""
    return Launch(file, kernel, Dim3(threads), options=options, dynamic_shared_bytes=shared, labels={"stage": stage})


def _planned_pass(file: str, kernel: str, plan: dict[str, int], sizes: tuple[str, ...]) -> Launch:
    """A one-pass kernel built from a shape plan (``tiled_shape``, ``fixed_shape``, ``tensor_shape``):
    its compile-time constants from the plan, its block THREADS, its ``dynamic_bytes`` of shared memory."""
    knobs = {name: value for name, value in plan.items() if name != "dynamic_bytes"}
    options = (*sizes, *(f"-D{name}={value}" for name, value in knobs.items()))
    return _stage(ONE_PASS, file, kernel, plan["THREADS"], plan["dynamic_bytes"], options)


def stage_launches(
    variant: str,
    n: int,
    d: int,
    k: int,
    optin: int | None = None,
    file: str | Path | None = None,
    tune: dict[str, int] | None = None,
) -> dict[str, Launch]:
    """The kernels ``variant``'s iteration launches for N points, D coordinates and K clusters, by
    role (assign, delta, sum, average; pass, finalize), without compiling or a grid: each a
    ``Launch`` whose label ``stage`` names the stage that times it. ``optin``: the shared memory
    a block may opt in to (default: the present GPU's); ``file``: a copy of one kernel file (a
    scratch copy being edited) that the launches of that file's name build from instead
    (``Launch.from_copy``). The Runner launches exactly these; CuPy's own kernels (the ``cupy``
    variant) are not listed. ``tune``: the dot variant's overrides (``dot_shape``)."""
    return {role: spec.from_copy(file) for role, spec in _stage_launches(variant, n, d, k, optin, tune).items()}


def _stage_launches(
    variant: str, n: int, d: int, k: int, optin: int | None, tune: dict[str, int] | None = None
) -> dict[str, Launch]:
    blocks = -(-n // THREADS)
    reduce_threads = min(1024, 1 << max(0, (blocks - 1).bit_length()))
    delta = _stage("delta", "km_00_assign.cu", "compute_delta", reduce_threads, 4 * reduce_threads)
    if variant == "exact":
        return {
            "assign": _stage("assign", "km_08_sequential_order.cu", "assign_in_order", THREADS),
            "delta": delta,
            "average": _stage("update", "km_08_sequential_order.cu", "average_in_order", THREADS),
        }
    if variant in CLASSIC:
        out = {
            "assign": _stage("assign", "km_00_assign.cu", "find_nearest_cluster", THREADS, 4 * (k * d + THREADS)),
            "delta": delta,
        }
        if variant == "host_update":
            return out
        out["sum"] = (
            _stage("update", "km_01_device_update.cu", "update_clusters_sum", THREADS)
            if variant == "device_update"
            else _stage(
                "update", "km_02_shared_buffers.cu", "update_clusters_sum_shared", THREADS, 4 * (k * (d + 1) + k)
            )
        )
        out["average"] = _stage("update", "km_01_device_update.cu", "update_clusters_average", THREADS)
        return out
    sizes = (f"-DK={k}", f"-DD={d}")
    if variant == "fused":
        plan = fused_shape(d, k, optin)
        tile_bytes, threads = plan.pop("dynamic_bytes"), plan.pop("threads")
        knobs = {**FUSED_OPTIONS, **plan, "CENTRE_UNROLL": min(FUSED_OPTIONS["CENTRE_UNROLL"], k)}
        options = (*sizes, *(f"-D{name}={value}" for name, value in knobs.items()))
        return {
            "pass": _stage(ONE_PASS, "km_03_fused.cu", "kmeans_fused", threads, tile_bytes, options),
            "finalize": _stage("update", "km_03_fused.cu", "kmeans_finalize", FUSED_THREADS, options=options),
        }
    if variant == "tiled":
        return {
            "pass": _planned_pass("km_04_tiled.cu", "kmeans_tiled", tiled_shape(d, k), sizes),
            "finalize": _stage(
                "update", "km_03_fused.cu", "kmeans_finalize", FUSED_THREADS, options=(*sizes, "-DFINALIZE_ONLY=1")
            ),
        }
    if variant == "fixed":
        one = _planned_pass("km_05_fixed_point.cu", "kmeans_fixed", fixed_shape(d, k), sizes)
        return {
            "pass": one,
            "finalize": _stage(
                "update", "km_05_fixed_point.cu", "kmeans_fixed_finalize", FUSED_THREADS, options=one.options
            ),
        }
    if variant == "tensor":  # no finalize launch: the pass's last block finalizes
        return {"pass": _planned_pass("km_07_tensor_scores.cu", "kmeans_tensor", tensor_shape(d, k), sizes)}
    if variant == "dot":
        launches_of = lambda other: stage_launches(other, n, d, k, optin)  # noqa: E731
        plan = dot_shape(d, k, **(tune or {}))
        shared = plan.pop("dynamic_bytes")
        options = (f"-DD={d}", *(f"-D{name}={value}" for name, value in plan.items()))
        return {
            "pass": _stage(ONE_PASS, "km_06_dot_assign.cu", "kmeans_dot", plan["THREADS"], shared, options),
            # km_05's finalize, built as the fixed variant builds it: its blocking (G x TQ) must cover K
            "finalize": launches_of("fixed")["finalize"],
        }
    return {}


def launches(configs: Iterable[tuple[int, int, int]], cc: str | None = None) -> list[Launch]:
    """Every kernel launch of the ladder's variants and the exact one at each (n, d, k) of ``configs`` that
    ``refusal`` lets run, on a GPU of compute capability ``cc`` (the shared memory its blocks may
    opt in to decides the fused kernel's shape; default: the present GPU), labelled ``variant``
    (its label), ``stage``, ``shape`` (the N, or the D and K, that decide the launch; "any" where
    none does) and ``block`` (threads): ``stage_launches``, named for the chapter's tables."""
    optin = sm_limits(cc).max_shared_per_block if cc is not None else None
    out = []
    for n, d, k in configs:
        for variant in (*LADDER, "exact"):
            if refusal(variant, d, k, optin, cc=cc):
                continue
            for role, spec in stage_launches(variant, n, d, k, optin).items():
                shape = (
                    f"N = {n:,}"
                    if role == "delta"
                    else "any"
                    if spec.kernel
                    in ("update_clusters_sum", "update_clusters_average", "assign_in_order", "average_in_order")
                    else f"D = {d}, K = {k}"
                )
                labels = {"variant": VARIANTS[variant], "stage": spec.labels["stage"], "shape": shape}
                out.append(replace(spec, labels={**labels, "block": str(spec.block)}))
    return out


@dataclass
class Stage:
    name: str  # assign, delta, update, transfer, ...
    run: Callable[[], Any]
    on_device: bool = True  # timed with events; else with a wall clock after a sync


class Problem:
    """One data set on the device: the objects transposed ([D][N], as the classic CUDA code
    stores them, so a warp's loads coalesce), and row-major for CuPy's matrix multiply.
    ``points`` is a host array (copied to the device) or a device array (copied to the host
    only if a host stage or a check asks for it)."""

    def __init__(self, points, k: int):
        cp = require_cupy()
        on_device = not isinstance(points, np.ndarray)
        n, d = points.shape
        reference.check_k(k, n)
        require_memory((2 if on_device else 3) * 4 * n * d + (64 << 20), f"{n:,} objects of {d} coordinates")
        self._host = None if on_device else np.ascontiguousarray(points, dtype=np.float32)
        self.rows = cp.ascontiguousarray(points, dtype=cp.float32) if on_device else cp.asarray(self._host)
        self.xt = cp.ascontiguousarray(self.rows.T)
        self.n, self.d, self.k = n, d, k
        self.initial = cp.asnumpy(self.rows[:k])

    @property
    def points(self) -> np.ndarray:
        """The objects on the host, (N, D) float32."""
        if self._host is None:
            self._host = self.rows.get()
        return self._host


def blobs_on_device(n: int, d: int, k: int, seed: int, spread: float = 10.0, sigma: float = 1.0):
    """``reference.blobs`` drawn on the device (seconds faster for millions of points): ``k``
    centres uniform in [-spread, spread]^d, each point Gaussian (``sigma``) around one at random."""
    cp = require_cupy()
    require_memory(3 * 4 * n * d, f"{n:,} blob points of {d} coordinates")
    rng = cp.random.default_rng(seed)
    centres = (rng.random((k, d), dtype=cp.float32) * 2 - 1) * spread
    labels = rng.integers(0, k, n)
    points = rng.standard_normal((n, d), dtype=cp.float32) * cp.float32(sigma)
    points += centres[labels]
    return points


class Runner:
    """One variant's state for one problem; ``step()`` runs an iteration and returns the number
    of objects that changed cluster, ``last_times`` how long each stage took (ms)."""

    def __init__(
        self, problem: Problem, variant: str, file: str | Path | None = None, tune: dict[str, int] | None = None
    ):
        if variant not in VARIANTS:
            raise ValueError(f"unknown variant {variant!r}; variants: {', '.join(VARIANTS)}")
        if tune and variant != "dot":
            raise ValueError(f"tune ({tune}) is the dot variant's; {variant} takes none")
        why = refusal(variant, problem.d, problem.k, tune=tune)
        if why:
            raise LaunchRefused(why)
        cp = require_cupy()
        self.p, self.variant, self.file, self.tune = problem, variant, file, tune
        self.stream = cp.cuda.Stream(non_blocking=True)
        self.hold = StreamHold(self.stream)
        self.host_behind = False
        n, d, k = problem.n, problem.d, problem.k
        self.blocks = -(-n // THREADS)
        with self.stream:
            self.centres = cp.asarray(problem.initial)
            self.membership = cp.full(n, -1, dtype=cp.int32)
            self.sums = cp.zeros((k, d), dtype=cp.float32)
            self.sizes = cp.zeros(k, dtype=cp.int32)
            self.intermediates = cp.zeros(self.blocks, dtype=cp.int32)
            self.delta = cp.zeros(1, dtype=cp.int32)
        self.host_centres = problem.initial.copy()
        if variant == "host_update":
            _ = problem.points  # the host's copy of the objects, fetched once, outside any timed stage
        self.host_membership = np.empty(n, dtype=np.int32)
        self.changed = 0
        self.last_times: dict[str, float] = {}
        self._build()

    # ---- the stages of each variant

    def _build(self) -> None:
        """The iteration's stages for this variant."""
        build = (
            self._classic_stages
            if self.variant in CLASSIC
            else self._exact_stages
            if self.variant == "exact"
            else self._fused_stages
            if self.variant == "fused"
            else self._tiled_stages
            if self.variant in ("tiled", "fixed", "dot", "tensor")
            else self._torch_stages
            if self.variant == "torch"
            else self._cupy_stages
        )
        self.stages: list[Stage] = build()

    def _assign_and_delta(self, specs: dict[str, Launch]) -> list[Stage]:
        """The assign stage (one thread per object; each block writes its count of changed
        objects) and compute_delta over those counts: the classic code's, and the exact variant's."""
        p = self.p
        n, d, k = np.int32(p.n), np.int32(p.d), np.int32(p.k)
        at, dt = specs["assign"].with_grid(self.blocks), specs["delta"].with_grid(1)
        assign, delta = at.compiled(), dt.compiled()
        return [
            Stage(
                "assign",
                lambda: at(
                    (p.xt, self.centres, self.membership, self.intermediates, n, d, k),
                    kernel=assign,
                    stream=self.stream,
                ),
            ),
            Stage(
                "delta",
                lambda: dt((self.intermediates, np.int32(self.blocks), self.delta), kernel=delta, stream=self.stream),
            ),
        ]

    def _classic_stages(self) -> list[Stage]:
        """Lab 004 a-c: the classic assignment and compute_delta, then the centre update on the
        host (a), on the device (b), or on the device through shared buffers (c)."""
        p = self.p
        n, d, k = np.int32(p.n), np.int32(p.d), np.int32(p.k)
        specs = stage_launches(self.variant, p.n, p.d, p.k, file=self.file)
        assign_stage, delta_stage = self._assign_and_delta(specs)
        count = Stage("transfer", self._fetch_count, on_device=False)
        if self.variant == "host_update":
            return [
                assign_stage,
                delta_stage,
                count,
                Stage("transfer", self._membership_to_host, on_device=False),
                Stage(
                    "update",
                    lambda: reference.host_update(p.points, self.host_membership, self.host_centres),
                    on_device=False,
                ),
                Stage("transfer", self._centres_to_device, on_device=False),
            ]
        st = specs["sum"].with_grid(self.blocks)
        avg = specs["average"].with_grid(-(-p.k * p.d // specs["average"].threads))
        average, summed = avg.compiled(), st.compiled()
        if self.variant == "device_update":
            sum_launch = lambda: st(
                (p.xt, self.membership, self.sums, self.sizes, n, d), kernel=summed, stream=self.stream
            )
        else:
            sum_launch = lambda: st(
                (p.xt, self.membership, self.sums, self.sizes, n, d, k), kernel=summed, stream=self.stream
            )

        def update():
            with self.stream:
                self.sums.fill(0)
                self.sizes.fill(0)
            sum_launch()
            avg((self.centres, self.sums, self.sizes, k, d), kernel=average, stream=self.stream)

        return [assign_stage, delta_stage, Stage("update", update), count]

    def _exact_stages(self) -> list[Stage]:
        """Ours, exact (km_08): the sequential code's distances, compute_delta, then each
        cluster's sums in object order: the objects sorted by cluster (``cupy.argsort``, stable),
        each cluster's run located by its size (CUB's histogram) and a cumulative sum, and one
        thread per cluster and coordinate adding its run in order. The sort synchronizes with
        the host (Thrust), which no hold may wait across: the update is timed as a host stage,
        by the wall clock from an idle stream to the averages' end."""
        cp = require_cupy()
        p = self.p
        n, d, k = np.int32(p.n), np.int32(p.d), np.int32(p.k)
        specs = stage_launches("exact", p.n, p.d, p.k, file=self.file)
        avg = specs["average"].with_grid(-(-p.k * p.d // specs["average"].threads))
        average = avg.compiled()

        def update():
            with self.stream:
                order = cp.argsort(self.membership)  # stable: object order within a cluster
                sizes = cp.histogram(self.membership, bins=p.k, range=(0, p.k))[0].astype(cp.int32)
                starts = (cp.cumsum(sizes) - sizes).astype(cp.int32)
            avg((p.xt, order, starts, sizes, self.centres, n, d, k), kernel=average, stream=self.stream)
            self.stream.synchronize()

        return [
            *self._assign_and_delta(specs),
            Stage("update", update, on_device=False),
            Stage("transfer", self._fetch_count, on_device=False),
        ]

    def _fused_stages(self) -> list[Stage]:
        """Ours: the fused pass, then finalize (average, next constants, change count)."""
        cp = require_cupy()
        p = self.p
        n = np.int32(p.n)
        specs = stage_launches("fused", p.n, p.d, p.k, file=self.file)
        one, fin = specs["pass"], specs["finalize"].with_grid(1)
        tile_bytes, threads = one.dynamic_shared_bytes, one.threads
        module = load_module(one.file, one.options)
        fused, finalize = module.get_function(one.kernel), module.get_function(fin.kernel)
        self.constants = module.get_global("c_centres")
        self.next = cp.zeros(p.k * p.d + p.k, dtype=cp.float32)
        # a persistent grid: exactly the blocks that fit at once, so there is no tail wave
        allow_shared_memory(fused, tile_bytes)
        fit = resident_blocks(threads, fused.num_regs, fused.shared_size_bytes + tile_bytes + 1024, present_sm())
        one = one.with_grid(attributes()["MultiProcessorCount"] * max(1, fit["blocks_per_sm"]))
        self._write_constants(p.initial)

        count = self._count_in_host_memory()

        def finish():
            fin(
                (self.centres, self.sums, self.sizes, self.next, self.delta, count), kernel=finalize, stream=self.stream
            )
            self.constants.copy_from_device_async(self.next.data, self.next.nbytes, self.stream)

        return [
            Stage(
                ONE_PASS,
                lambda: one(
                    (p.xt, self.membership, self.sums, self.sizes, self.delta, self.next, n),
                    kernel=fused,
                    stream=self.stream,
                ),
            ),
            Stage("update", finish),
            Stage("transfer", self._read_count, on_device=False),
        ]

    def _tiled_stages(self) -> list[Stage]:
        """Ours, tiled: the register-tiled pass reading the centres' table from global memory
        (no constant copy), then the same finalize as the fused pass. The fixed variant: the same
        stages, with int64 sums in units of 2^-s (``fixed_point_bits`` of the data's largest |x|,
        found once here) and its own finalize; the dot variant, fixed's sums and finalize with its
        own pass, which also takes K. The tensor variant: fixed's sums, and its pass's last block
        finalizes (no finalize launch), with a grid and SPLIT from ``tensor_split``; it carries
        its sums from pass to pass and adds only the objects that moved (km_07 item 12), so a
        runner's sums and memberships start at zero and -1 and only its passes change them."""
        cp = require_cupy()
        p = self.p
        n = np.int32(p.n)
        specs = stage_launches(self.variant, p.n, p.d, p.k, file=self.file, tune=self.tune)
        self.next = cp.zeros(p.k * p.d + p.k, dtype=cp.float32)
        pass_args: tuple = (p.xt, self.membership, self.sums, self.sizes, self.delta, self.next, n)
        if self.variant in ("fixed", "dot", "tensor"):
            with self.stream:
                max_abs = float(cp.abs(p.xt).max())
                self.scale_bits = fixed_point_bits(p.n, max_abs)
                self.sums = cp.zeros((p.k, p.d), dtype=cp.int64)
            k_arg = (np.int32(p.k),) if self.variant == "dot" else ()
            pass_args = (*pass_args[:2], self.sums, *pass_args[3:], *k_arg, np.float32(2.0**self.scale_bits))
        one = specs["pass"]
        shared, threads = one.dynamic_shared_bytes, one.threads
        tiled = one.compiled()
        count = self._count_in_host_memory()
        self._write_table(p.initial)
        allow_shared_memory(tiled, shared)
        fit = resident_blocks(threads, tiled.num_regs, tiled.shared_size_bytes + shared + 1024, present_sm())
        one = one.with_grid(attributes()["MultiProcessorCount"] * max(1, fit["blocks_per_sm"]))
        if self.variant == "tensor":
            plan = tensor_shape(p.d, p.k)
            max_fixed = math.ceil(max_abs * 2.0**self.scale_bits)
            grid, split = tensor_split(p.n, max_fixed, threads, plan["COPIES"], one.grid.x)
            one = one.with_grid(grid)
            # [0] blocks finished (the last one finalizes and resets it); [1] nonzero: the sums and
            # sizes are zero, so the next pass adds every object (km_07 item 12: where few moved, a
            # pass adds only those, to the sums it carries from the pass before)
            self.done = cp.asarray(np.array([0, 1], dtype=np.uint32))
            self.loop_state = cp.zeros(2, dtype=cp.int32)  # the device loop's count and end flag
            finish = (self.centres, count, np.float64(2.0**-self.scale_bits), self.done)
            pass_args = (*pass_args, np.int32(split), *finish)
            self._device_loop = (one, tiled, pass_args)  # run_on_device adds its own loop arguments
            pass_args = (*pass_args, self.loop_state, np.float32(0.0), np.int32(-1))  # step(): every launch iterates
        stages = [Stage(ONE_PASS, lambda: one(pass_args, kernel=tiled, stream=self.stream))]
        transfer = Stage("transfer", self._read_count, on_device=False)
        if "finalize" not in specs:
            return [*stages, transfer]
        fin = specs["finalize"].with_grid(1)
        finalize = fin.compiled()
        finish_args: tuple = (self.centres, self.sums, self.sizes, self.next, self.delta, count)
        if self.variant in ("fixed", "dot"):
            finish_args = (*finish_args, np.float64(2.0**-self.scale_bits))
        return [*stages, Stage("update", lambda: fin(finish_args, kernel=finalize, stream=self.stream)), transfer]

    def _cupy_stages(self) -> list[Stage]:
        """The peer: distances by a matrix multiply, argmin, a scatter-add update."""
        cp = require_cupy()
        p = self.p
        state: dict[str, Any] = {}

        def distances():
            with self.stream:
                norms = (self.centres * self.centres).sum(axis=1)
                state["new"] = cp.argmin(norms[None, :] - 2 * (p.rows @ self.centres.T), axis=1).astype(cp.int32)

        def delta_count():
            with self.stream:
                self.delta[0] = (state["new"] != self.membership).sum()
                self.membership = state["new"]

        def update():
            with self.stream:
                # cupy.histogram over K unit bins, not cupy.bincount: bincount reads the largest
                # index back to the host to size its output, a synchronization inside the
                # iteration; the histogram (CUB's, the same counts) needs none
                counts = cp.histogram(self.membership, bins=p.k, range=(0, p.k))[0]
                sums = cp.zeros((p.k, p.d), dtype=cp.float32)
                cp.add.at(sums, self.membership, p.rows)
                self.centres = cp.where(
                    counts[:, None] > 0, sums / cp.maximum(counts, 1)[:, None].astype(cp.float32), self.centres
                )

        return [
            Stage("assign", distances),
            Stage("delta", delta_count),
            Stage("update", update),
            Stage("transfer", self._fetch_count, on_device=False),
        ]

    def _torch_stages(self) -> list[Stage]:
        """The peer a PyTorch user would write: distances by a matrix multiply (TF32 off, FP32 as
        every contestant), argmin, the sums and the sizes by ``index_add_`` (``torch.bincount``
        reads its largest index back to size its output: a sync inside the iteration, as
        ``cupy.bincount``). It runs on this runner's stream (``torch.cuda.ExternalStream``), so
        the same events and hold time it; its tensors share the runner's arrays through DLPack,
        so ``result`` and the change count read what it wrote."""
        import torch

        p = self.p
        torch.backends.cuda.matmul.allow_tf32 = False
        stream = torch.cuda.ExternalStream(self.stream.ptr)
        with torch.cuda.stream(stream):
            rows = torch.from_dlpack(p.rows)
            centres, membership = torch.from_dlpack(self.centres), torch.from_dlpack(self.membership)
            delta = torch.from_dlpack(self.delta)
            ones = torch.ones(p.n, dtype=torch.int32, device=rows.device)
        state: dict[str, Any] = {}

        def distances():
            with torch.cuda.stream(stream):
                norms = (centres * centres).sum(dim=1)
                state["new"] = torch.argmin(norms[None, :] - 2.0 * (rows @ centres.T), dim=1).to(torch.int32)

        def delta_count():
            with torch.cuda.stream(stream):
                delta.copy_((state["new"] != membership).sum().reshape(1))
                membership.copy_(state["new"])

        def update():
            with torch.cuda.stream(stream):
                sums = torch.zeros((p.k, p.d), dtype=torch.float32, device=rows.device).index_add_(0, membership, rows)
                sizes = torch.zeros(p.k, dtype=torch.int32, device=rows.device).index_add_(0, membership, ones)
                centres.copy_(torch.where(sizes[:, None] > 0, sums / sizes.clamp(min=1)[:, None], centres))

        return [
            Stage("assign", distances),
            Stage("delta", delta_count),
            Stage("update", update),
            Stage("transfer", self._fetch_count, on_device=False),
        ]

    def _write_table(self, centres: np.ndarray) -> None:
        """The one-pass kernels' table of the centres: -2 x centre, then |centre|^2."""
        c = np.asarray(centres, dtype=np.float32)
        host = np.concatenate([(-2.0 * c).ravel(), (c * c).sum(axis=1, dtype=np.float32)]).astype(np.float32)
        self.next.set(host, stream=self.stream)

    def _write_constants(self, centres: np.ndarray) -> None:
        self._write_table(centres)
        self.constants.copy_from_device_async(self.next.data, self.next.nbytes, self.stream)

    def _count_in_host_memory(self) -> np.uintp:
        """Where the one-pass kernels' finalize writes the change count: pinned host memory,
        which the GPU writes directly (unified addressing maps it), so that the host reads the
        count after the iteration without a copy of its own (a 4-byte copy costs ~20 us of
        the ~0.4 ms iteration)."""
        cp = require_cupy()
        self._count_memory = cp.cuda.alloc_pinned_memory(12)  # the count, then the device loop's count and end
        self._count = np.frombuffer(self._count_memory, dtype=np.int32, count=3)
        self._count[:] = 0
        return np.uintp(self._count_memory.ptr)

    def _read_count(self) -> None:
        self.changed = int(self._count[0])

    def _fetch_count(self) -> None:
        self.changed = int(self.delta.get(stream=self.stream)[0])

    def _membership_to_host(self) -> None:
        self.membership.get(stream=self.stream, out=self.host_membership)

    def _centres_to_device(self) -> None:
        self.centres.set(self.host_centres, stream=self.stream)
        self.stream.synchronize()

    # ---- running

    def step(self) -> int:
        """One iteration; returns how many objects changed cluster. Each run of on-device stages
        is enqueued behind a hold on the stream (``core.timing.StreamHold``) and released once the
        host has enqueued all of it, so the host's dispatch never lands between a stage's events:
        every variant, ours and CuPy's, is timed on the GPU alone. ``host_behind`` says whether a
        hold gave up before the host had finished (that iteration's times may include host gaps)."""
        cp = require_cupy()
        times: dict[str, float] = defaultdict(float)
        pending = []
        held = False
        self.host_behind = False

        def run_held_work() -> None:
            self.hold.release()
            self.stream.synchronize()
            self.host_behind |= self.hold.timed_out()

        for stage in self.stages:
            if stage.on_device:
                if not held:
                    self.hold.hold()
                    held = True
                start, end = cp.cuda.Event(), cp.cuda.Event()
                start.record(self.stream)
                stage.run()
                end.record(self.stream)
                pending.append((stage.name, start, end))
            else:
                if held:
                    run_held_work()
                    held = False
                self.stream.synchronize()
                t0 = time.perf_counter()
                stage.run()
                times[stage.name] += (time.perf_counter() - t0) * 1e3
        if held:
            run_held_work()
        self.stream.synchronize()
        for name, start, end in pending:
            times[name] += cp.cuda.get_elapsed_time(start, end)
        self.last_times = dict(times)
        return self.changed

    def run_on_device(self, threshold: float, max_loop: int, batch: int = LOOP_BATCH) -> dict[str, Any]:
        """A whole run to convergence with its loop on the device (``DEVICE_LOOP`` variants; km_07
        item 11): the pass itself applies the classic loop's test and, once the run has ended,
        every later launch returns at once. The host enqueues ``batch`` iterations at a time, one
        batch ahead of the GPU, and reads the end flag (in its own memory) once a batch has run:
        no sync and no test of the host's between two iterations. Returns the iterations, the
        wall time from the first enqueue to the end (ms), the summed GPU time of the iterations
        (an event pair around each launch) and of the launches after the end."""
        if self.variant not in DEVICE_LOOP:
            raise ValueError(f"{self.variant}: its loop needs the host; the device loop is {', '.join(DEVICE_LOOP)}'s")
        cp = require_cupy()
        one, kernel, args = self._device_loop
        with self.stream:
            self.loop_state.fill(0)
        self.stream.synchronize()
        self._count[1:] = 0
        run_args = (*args, self.loop_state, np.float32(threshold), np.int32(max_loop))
        events: list[tuple[Any, Any]] = []
        batches: list[Any] = []
        t0 = time.perf_counter()
        while True:
            for _ in range(batch):
                start, end = cp.cuda.Event(), cp.cuda.Event()
                start.record(self.stream)
                one(run_args, kernel=kernel, stream=self.stream)
                end.record(self.stream)
                events.append((start, end))
            batches.append(cp.cuda.Event(disable_timing=True))
            batches[-1].record(self.stream)
            if len(batches) > 1:
                batches[-2].synchronize()  # the batch before this one has run: has the run ended?
                if self._count[2]:
                    break
            if len(events) > max_loop + 1 + 2 * batch:
                self.stream.synchronize()
                raise MeasurementError(f"{self.variant}: the device loop did not end after {len(events)} launches")
        self.stream.synchronize()
        wall_ms = (time.perf_counter() - t0) * 1e3
        iterations = int(self._count[1]) + 1
        times = [cp.cuda.get_elapsed_time(start, end) for start, end in events]
        self.changed = int(self._count[0])
        return {
            "iterations": iterations,
            "wall_ms": wall_ms,
            "gpu_ms": sum(times[:iterations]),
            "after_end_ms": sum(times[iterations:]),
            "launches": len(events),
        }

    def result(self) -> tuple[np.ndarray, np.ndarray]:
        """(centres, membership) on the host."""
        self.stream.synchronize()
        return self.centres.get(), self.membership.get()


def run_to_convergence(
    problem: Problem,
    variant: str,
    threshold: float = reference.THRESHOLD,
    max_loop: int = reference.MAX_LOOP,
    *,
    loop_on: str = "auto",
) -> dict[str, Any]:
    """The whole k-means, as the classic code loops: iterate while the changed fraction exceeds
    ``threshold``, at most ``max_loop`` more times. Returns the iteration count, the wall time of
    the loop, the summed time of each stage and the GPU's share of them (ms), and where the loop
    ran: ``loop_on`` "host" (a step and the host's test per iteration), "device" (``DEVICE_LOOP``
    variants: ``Runner.run_on_device``), or "auto", the device where the variant allows. Both
    loops run the same iterations in the same order: the same bits."""
    if loop_on not in ("auto", "host", "device"):
        raise ValueError(f"loop_on {loop_on!r}: auto, host or device")
    runner = Runner(problem, variant)
    if loop_on == "device" or (loop_on == "auto" and variant in DEVICE_LOOP):
        run = runner.run_on_device(threshold, max_loop)
        centres, membership = runner.result()
        return {
            "iterations": run["iterations"],
            "total_ms": run["wall_ms"],
            "stages_ms": {ONE_PASS: run["gpu_ms"]},
            "gpu_ms": run["gpu_ms"],
            "loop": "device",
            "centres": centres,
            "membership": membership,
        }
    totals: dict[str, float] = defaultdict(float)
    on_device = {stage.name for stage in runner.stages if stage.on_device}
    loop = 0
    t0 = time.perf_counter()
    while True:
        changed = runner.step()
        for name, ms in runner.last_times.items():
            totals[name] += ms
        if not (np.float32(changed) / np.float32(problem.n) > np.float32(threshold) and loop < max_loop):
            break
        loop += 1
    wall_ms = (time.perf_counter() - t0) * 1e3
    centres, membership = runner.result()
    return {
        "iterations": loop + 1,
        "total_ms": wall_ms,
        "stages_ms": dict(totals),
        "gpu_ms": sum(ms for stage, ms in totals.items() if stage in on_device),
        "loop": "host",
        "centres": centres,
        "membership": membership,
    }


def time_iterations(
    problem: Problem,
    variant: str,
    iterations: int,
    warmup: int = WARMUP,
    file: str | Path | None = None,
    tune: dict[str, int] | None = None,
) -> pd.DataFrame:
    """Per-iteration stage times of ``variant`` from the initial centres: ``warmup`` untimed
    iterations (compilation, caches), then ``iterations`` timed ones. One row per iteration and
    stage (``time_ms``). An iteration whose host fell behind the stream's hold (``Runner.step``)
    is run again, up to HELD_TRIES times, then a ``MeasurementError``. ``file``: a copy of a
    kernel file to build instead (``stage_launches``); ``tune``: the dot variant's overrides
    (``dot_shape``)."""
    runner = Runner(problem, variant, file, tune)
    for _ in range(warmup):
        runner.step()
    rows = []
    for it in range(iterations):
        for _ in range(HELD_TRIES):
            runner.step()
            if not runner.host_behind:
                break
        else:
            raise MeasurementError(
                f"{variant}: the host fell behind the stream's hold in {HELD_TRIES} tries of iteration {it}"
            )
        rows += [{"iteration": it, "stage": name, "time_ms": ms} for name, ms in runner.last_times.items()]
    return pd.DataFrame(rows)


def check_against_float64(
    problem: Problem,
    variant: str,
    iterations: int,
    tie_rtol: float = reference.TIE_RTOL,
    centre_rtol: float = 1e-4,
    file: str | Path | None = None,
    tune: dict[str, int] | None = None,
) -> pd.DataFrame:
    """Lockstep check of ``variant`` against the float64 reference, iteration by iteration from
    the same initial centres: each iteration's memberships against float64's nearest centres
    for the centres the variant started from (a disagreement counts as wrong unless that point's
    two nearest centres are within ``tie_rtol``: a near tie), and the variant's new centres
    against the float64 means of its own memberships (relative to the data's spread). ``file``: a
    copy of a kernel file to build instead (``stage_launches``); ``tune``: the dot variant's
    overrides (``dot_shape``)."""
    runner = Runner(problem, variant, file, tune)
    scale = float(np.abs(problem.points).max()) or 1.0
    start = problem.initial.astype(np.float64)
    rows = []
    for it in range(iterations):
        runner.step()
        centres, membership = runner.result()
        expected, gap = reference.assign64(problem.points, start)
        differ = membership != expected
        ties = differ & (gap <= tie_rtol)
        wrong = int((differ & ~ties).sum())
        means = reference.means64(problem.points, membership, start)
        err = float(np.abs(centres - means).max() / scale)
        ok = wrong == 0 and err <= centre_rtol
        rows.append(
            {
                "variant": variant,
                "iteration": it,
                "n": problem.n,
                "d": problem.d,
                "k": problem.k,
                "membership_mismatches": wrong,
                "near_ties": int(ties.sum()),
                "centre_rel_error": err,
                "status": "ok" if ok else "wrong",
                "reason": "" if ok else f"{wrong} memberships differ beyond near ties; centre error {err:.2g}",
            }
        )
        start = centres.astype(np.float64)
    return pd.DataFrame(rows)
