"""How many blocks of a kernel fit on one SM, and which resource limits them.

Two ways in:

* ``resident_blocks(threads, registers, shared_bytes, sm)`` for the GPU present, from the per-SM
  limits the driver reports (``present_sm()``); the chapters that size a persistent grid use it.
* ``occupancy(cc, threads, registers, shared_bytes)`` for any compute capability, from the
  architecture's limits in ``SM_LIMITS``: the theoretical occupancy of a launch configuration on
  the profile's GPU, with the binding limit named. ``occupancy_table`` makes a tidy frame of it.

``occupancy`` follows the rules of CUDA's occupancy calculator as the toolkit ships them in
``include/cuda_occupancy.h`` (``cudaOccMaxActiveBlocksPerMultiprocessor``), which is what the
driver's occupancy API answers on a real GPU (a GPU test checks that):

* warps: a block takes ceil(threads / 32) warp slots; blocks <= max warps per SM // warps per block;
* blocks: at most the architecture's resident blocks per SM;
* registers: allocated per warp, regs x 32 rounded up to the allocation unit (256); the register
  file is split among the SM's sub-partitions (the occupancy calculator's "warp allocation
  granularity": 4, 2 on cc 6.0), each holding a whole number of warps, so
  blocks <= (regs per SM / sub-partitions // regs per warp) x sub-partitions // warps per block;
  a block whose warps, rounded up to the sub-partitions, need more than the registers a block may
  have, or a thread with more registers than the architecture allows, cannot launch;
* shared memory: static + dynamic + the driver's reserved bytes per block (1 KiB from cc 8.0),
  rounded up to the allocation unit (256 B up to cc 7.x, 128 B from cc 8.0); blocks <= shared
  memory per SM (the largest carve-out, the driver's default for the occupancy API) // that; a
  block needing more than the opt-in maximum per block cannot launch (the chapters opt in with
  ``cudaFuncAttributeMaxDynamicSharedMemorySize`` where they need more than 48 KiB).

Not modelled, as none of the chapters' kernels meets them: partitioned global caching (cc 5.2,
5.3, 6.x, only with loads cached in L1), a shared-memory carve-out below the maximum, block
barriers and clusters (cc 9.0+).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from cudalab.core.errors import ProfileError
from cudalab.core.gpu import attributes, require_cupy

KIB = 1024


def resident_blocks(threads: int, registers: int, shared_bytes: int, sm: dict[str, int]) -> dict[str, Any]:
    """Blocks of a kernel that fit on one SM, and which resource limits them.

    ``sm`` holds the per-SM limits (threads, registers, shared_bytes, blocks). Registers are
    allocated per warp in units of 256, as the occupancy calculator does."""
    warps = -(-threads // 32)
    regs_per_warp = -(-registers * 32 // 256) * 256
    limits = {"threads": sm["threads"] // (warps * 32), "blocks": sm["blocks"]}
    if registers:
        limits["registers"] = sm["registers"] // (regs_per_warp * warps)
    if shared_bytes:
        limits["shared memory"] = sm["shared_bytes"] // shared_bytes
    blocks = min(limits.values())
    return {
        "blocks_per_sm": blocks,
        "warps_per_sm": blocks * warps,
        "limited_by": ", ".join(k for k, v in limits.items() if v == blocks),
    }


def present_sm() -> dict[str, int]:
    attrs = attributes()
    return {
        "threads": attrs["MaxThreadsPerMultiProcessor"],
        "registers": attrs["MaxRegistersPerMultiprocessor"],
        "shared_bytes": attrs["MaxSharedMemoryPerMultiprocessor"],
        "blocks": attrs["MaxBlocksPerMultiprocessor"],
    }


def present_cc() -> str:
    """The present GPU's compute capability as ``"major.minor"`` (needs CuPy and a GPU)."""
    cp = require_cupy()
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    return f"{props['major']}.{props['minor']}"


# ---- the architectures' limits


@dataclass(frozen=True)
class SmLimits:
    """One compute capability's per-SM and per-block limits, as the occupancy calculator uses them."""

    max_threads_per_sm: int
    max_warps_per_sm: int
    max_blocks_per_sm: int
    registers_per_sm: int  # 32-bit registers in the SM's register file
    max_registers_per_block: int
    max_registers_per_thread: int
    max_shared_per_sm: int  # bytes: the largest shared-memory carve-out
    max_shared_per_block: int  # bytes: the opt-in maximum (48 KiB without opting in)
    shared_allocation_unit: int  # bytes
    reserved_shared_per_block: int  # bytes the driver keeps per block (cc 8.0 on)
    warp_allocation_granularity: int  # the SM's sub-partitions; the register file is split among them
    register_allocation_unit: int = 256
    register_allocation_granularity: str = "warp"
    max_threads_per_block: int = 1024
    warp_size: int = 32


def _sm(
    threads: int,
    blocks: int,
    regs: int,
    regs_per_block: int,
    regs_per_thread: int,
    smem_sm_kib: int,
    smem_block_kib: int,
    smem_unit: int,
    reserved: int,
    sub_partitions: int = 4,
) -> SmLimits:
    return SmLimits(
        threads,
        threads // 32,
        blocks,
        regs,
        regs_per_block,
        regs_per_thread,
        smem_sm_kib * KIB,
        smem_block_kib * KIB,
        smem_unit,
        reserved,
        sub_partitions,
    )


# Sources, for every number below:
#  * threads, warps and blocks per SM, registers per SM, per block and per thread, shared memory per
#    SM and per block: the CUDA C++ Programming Guide, "Technical Specifications per Compute
#    Capability" (the table of the CUDA 10 guide for cc 3.x, of the CUDA 12 guide from cc 5.0), the
#    same per-GPU values as NVIDIA's CUDA Occupancy Calculator spreadsheet's "GPU Data" sheet;
#    the per-SM shared memory is the largest carve-out (cc 3.x: 48 KiB with 16 KiB L1, 112 KiB on
#    cc 3.7), the per-block value the opt-in maximum (cc 7.0 on; 48 KiB before), which on cc 8.0 on
#    is the carve-out less the 1 KiB the driver reserves for each block ("1 KB of shared memory is
#    reserved for system use").
#  * allocation units and granularities, resident blocks per SM, sub-partitions: the toolkit's own
#    include/cuda_occupancy.h (CUDA 13.0): cudaOccSMemAllocationGranularity (256 B for cc 3-7, 128 B
#    for cc 8 on), cudaOccRegAllocationGranularity (256 registers, per warp),
#    cudaOccSubPartitionsPerMultiprocessor (4; 2 on cc 6.0), cudaOccMaxBlocksPerMultiprocessor.
#  * cc 3.0 allows 63 registers per thread (the Programming Guide; cuda_occupancy.h checks only 255).
# max threads/SM, blocks/SM, registers/SM, registers/block, registers/thread, shared KiB per SM and
# per block, shared allocation unit (B), reserved shared per block (B), sub-partitions
SM_LIMITS: dict[str, SmLimits] = {
    "3.0": _sm(2048, 16, 64 * KIB, 64 * KIB, 63, 48, 48, 256, 0),  # Kepler GK10x (GTX 680)
    "3.5": _sm(2048, 16, 64 * KIB, 64 * KIB, 255, 48, 48, 256, 0),  # Kepler GK110
    "3.7": _sm(2048, 16, 128 * KIB, 64 * KIB, 255, 112, 48, 256, 0),  # Kepler GK210 (K80)
    "5.0": _sm(2048, 32, 64 * KIB, 64 * KIB, 255, 64, 48, 256, 0),  # Maxwell GM10x
    "5.2": _sm(2048, 32, 64 * KIB, 64 * KIB, 255, 96, 48, 256, 0),  # Maxwell GM20x
    "5.3": _sm(2048, 32, 64 * KIB, 32 * KIB, 255, 64, 48, 256, 0),  # Maxwell GM20B (Tegra X1)
    "6.0": _sm(2048, 32, 64 * KIB, 64 * KIB, 255, 64, 48, 256, 0, 2),  # Pascal GP100
    "6.1": _sm(2048, 32, 64 * KIB, 64 * KIB, 255, 96, 48, 256, 0),  # Pascal GP10x
    "6.2": _sm(2048, 32, 64 * KIB, 32 * KIB, 255, 64, 48, 256, 0),  # Pascal GP10B (Tegra)
    "7.0": _sm(2048, 32, 64 * KIB, 64 * KIB, 255, 96, 96, 256, 0),  # Volta GV100
    "7.2": _sm(2048, 32, 64 * KIB, 64 * KIB, 255, 96, 96, 256, 0),  # Volta GV10B (Xavier)
    "7.5": _sm(1024, 16, 64 * KIB, 64 * KIB, 255, 64, 64, 256, 0),  # Turing
    "8.0": _sm(2048, 32, 64 * KIB, 64 * KIB, 255, 164, 163, 128, KIB),  # Ampere GA100
    "8.6": _sm(1536, 16, 64 * KIB, 64 * KIB, 255, 100, 99, 128, KIB),  # Ampere GA10x
    "8.7": _sm(1536, 16, 64 * KIB, 64 * KIB, 255, 164, 163, 128, KIB),  # Ampere GA10B (Orin)
    "8.9": _sm(1536, 24, 64 * KIB, 64 * KIB, 255, 100, 99, 128, KIB),  # Ada
    "9.0": _sm(2048, 32, 64 * KIB, 64 * KIB, 255, 228, 227, 128, KIB),  # Hopper (H100, H200)
    "10.0": _sm(2048, 32, 64 * KIB, 64 * KIB, 255, 228, 227, 128, KIB),  # Blackwell GB100 (B200)
    "12.0": _sm(1536, 24, 64 * KIB, 64 * KIB, 255, 100, 99, 128, KIB),  # Blackwell GB20x (RTX 50)
}


CC = str | tuple | float


def cc_key(cc: CC) -> str:
    """``"9.0"`` from ``"9.0"``, ``"sm_90"``, ``(9, 0)`` or ``9.0``; ``ProfileError`` for one not in ``SM_LIMITS``."""
    if isinstance(cc, tuple):
        key = ".".join(str(int(part)) for part in cc)
    else:
        text = str(cc).strip().lower()
        if text.startswith(("sm_", "compute_")):
            digits = text.split("_", 1)[1].rstrip("af")
            key = f"{digits[:-1]}.{digits[-1]}" if digits.isdigit() and len(digits) >= 2 else text
        else:
            key = text
    if key not in SM_LIMITS:
        raise ProfileError(
            f"compute capability {cc!r}: the occupancy rules know only "
            f'{", ".join(SM_LIMITS)} (give major.minor, e.g. "5.2" rather than "5.x")'
        )
    return key


def sm_limits(cc: CC) -> SmLimits:
    return SM_LIMITS[cc_key(cc)]


def _round_up(x: int, unit: int) -> int:
    return -(-x // unit) * unit


def _register_blocks(lim: SmLimits, registers: int, warps: int, sub_partitions: int) -> int | None:
    """Blocks the register file holds (None when the kernel uses no registers), 0 when one block can't fit."""
    per_warp = _round_up(registers * lim.warp_size, lim.register_allocation_unit)
    if per_warp == 0:
        return None
    # the hardware's per-block check assumes the warps are spread over every sub-partition
    assumed = per_warp * _round_up(warps, sub_partitions)
    if assumed > lim.max_registers_per_block or per_warp * warps > lim.max_registers_per_block:
        return 0
    warps_per_sub_partition = (lim.registers_per_sm // sub_partitions) // per_warp
    return warps_per_sub_partition * sub_partitions // warps


LIMIT_NAMES = {
    "limit_threads": "threads per SM",
    "limit_blocks": "blocks per SM",
    "limit_registers": "registers",
    "limit_shared": "shared memory",
}


def occupancy(cc: CC, threads: int, registers: int, shared_bytes: int, dynamic_shared_bytes: int = 0) -> dict[str, Any]:
    """Theoretical occupancy of one launch configuration on a GPU of compute capability ``cc``.

    ``threads`` per block, ``registers`` per thread and ``shared_bytes`` of static shared memory per
    block are the compiled kernel's (``ptxas -v`` for that architecture, or the function's
    attributes); ``dynamic_shared_bytes`` is the launch's. Returns the blocks each limit allows
    (``limit_threads``, ``limit_blocks``, ``limit_registers``, ``limit_shared``; None where the
    kernel uses none of that resource), ``blocks_per_sm`` (their minimum), ``warps_per_sm``,
    ``occupancy`` (resident warps / the SM's maximum) and ``limited_by``, the binding limit(s) in
    words. A block that cannot launch at all gets 0 blocks, ``limited_by`` naming the per-block
    limit it breaks and ``reason`` saying how (``reason`` is empty otherwise)."""
    key = cc_key(cc)
    lim = SM_LIMITS[key]
    if threads < 1:
        raise ProfileError(f"{threads} threads per block: a block has at least one thread")
    warps = -(-threads // lim.warp_size)
    smem = int(shared_bytes) + int(dynamic_shared_bytes)
    smem_allocated = _round_up(smem + lim.reserved_shared_per_block, lim.shared_allocation_unit)
    regs_allocated = _round_up(registers * lim.warp_size, lim.register_allocation_unit) * warps

    broken: list[tuple[str, str]] = []
    if threads > lim.max_threads_per_block:
        broken.append(
            (
                "threads per block",
                f"{threads} threads per block, more than the {lim.max_threads_per_block} a block may have",
            )
        )
    if registers > lim.max_registers_per_thread:
        broken.append(
            (
                "registers per thread",
                f"{registers} registers per thread, more than the "
                f"{lim.max_registers_per_thread} compute capability {key} allows",
            )
        )
    sub_partitions = lim.warp_allocation_granularity
    limit_registers = _register_blocks(lim, registers, warps, sub_partitions)
    if key == "6.0" and limit_registers:
        # cuda_occupancy.h: a block that could not run on GP10x (4 sub-partitions) is refused on GP100 too
        if _register_blocks(SM_LIMITS["6.1"], registers, warps, 4) == 0:
            limit_registers = 0
    if limit_registers == 0 and registers <= lim.max_registers_per_thread:
        broken.append(
            (
                "registers per block",
                f"{registers} registers per thread x {warps} warps (allocated per warp in units of "
                f"{lim.register_allocation_unit}, warps rounded up to {sub_partitions} sub-partitions) "
                f"need more than the {lim.max_registers_per_block} registers a block may have",
            )
        )
    if smem > lim.max_shared_per_block:
        broken.append(
            (
                "shared memory per block",
                f"{smem} B of shared memory per block, more than the {lim.max_shared_per_block} B a block may have",
            )
        )

    names = {name for name, _ in broken}
    limits = {
        "limit_threads": 0 if "threads per block" in names else lim.max_warps_per_sm // warps,
        "limit_blocks": lim.max_blocks_per_sm,
        "limit_registers": 0 if names & {"registers per thread", "registers per block"} else limit_registers,
        "limit_shared": 0
        if "shared memory per block" in names
        else (lim.max_shared_per_sm // smem_allocated if smem_allocated else None),
    }
    blocks = min(v for v in limits.values() if v is not None)
    if broken:
        limited_by = ", ".join(name for name, _ in broken)
        reason = "cannot launch: " + "; ".join(text for _, text in broken)
    else:
        limited_by = ", ".join(LIMIT_NAMES[k] for k, v in limits.items() if v == blocks)
        reason = ""
    return {
        "compute_capability": key,
        "threads_per_block": threads,
        "registers_per_thread": registers,
        "shared_bytes_per_block": smem,
        "allocated_shared_bytes_per_block": smem_allocated,
        "allocated_registers_per_block": regs_allocated,
        **limits,
        "blocks_per_sm": blocks,
        "warps_per_sm": blocks * warps,
        "max_warps_per_sm": lim.max_warps_per_sm,
        "occupancy": blocks * warps / lim.max_warps_per_sm,
        "limited_by": limited_by,
        "reason": reason,
    }


_ALIASES = {
    "threads_per_block": ("threads_per_block", "threads"),
    "registers_per_thread": ("registers_per_thread", "registers"),
    "shared_bytes": ("shared_bytes", "static_shared_bytes", "shared_bytes_per_block"),
    "dynamic_shared_bytes": ("dynamic_shared_bytes",),
}


def _launch_row(row: Any) -> tuple[dict[str, Any], dict[str, int]]:
    """(columns carried through, the launch's numbers) from a mapping or a tuple."""
    if isinstance(row, Mapping):
        carried, numbers, used = {}, {}, set()
        for field, names in _ALIASES.items():
            for name in names:
                if name in row:
                    numbers[field] = int(row[name])
                    used.add(name)
                    break
        missing = [f for f in ("threads_per_block", "registers_per_thread") if f not in numbers]
        if missing:
            raise ProfileError(f"a launch configuration needs {', '.join(missing)}: {dict(row)}")
        carried = {k: v for k, v in row.items() if k not in used}
        return carried, {"shared_bytes": 0, "dynamic_shared_bytes": 0, **numbers}
    kernel, threads, registers, shared, *rest = row
    return {"kernel": kernel}, {
        "threads_per_block": int(threads),
        "registers_per_thread": int(registers),
        "shared_bytes": int(shared),
        "dynamic_shared_bytes": int(rest[0]) if rest else 0,
    }


TABLE_COLUMNS = [
    "compute_capability",
    "threads_per_block",
    "registers_per_thread",
    "shared_bytes_per_block",
    "allocated_shared_bytes_per_block",
    "blocks_limit_threads",
    "blocks_limit_blocks",
    "blocks_limit_registers",
    "blocks_limit_shared",
    "blocks_per_sm",
    "warps_per_sm",
    "max_warps_per_sm",
    "occupancy_fraction",
    "limited_by",
    "reason",
]


def occupancy_table(rows: Iterable[Any], cc: CC):
    """A tidy frame of ``occupancy`` for launch configurations on compute capability ``cc``.

    Each row is a mapping with ``threads_per_block`` (or ``threads``), ``registers_per_thread`` (or
    ``registers``), optionally ``shared_bytes`` (static, per block) and ``dynamic_shared_bytes``;
    its other keys (``kernel``, a chapter's configuration) are carried through as leading columns.
    A tuple ``(kernel, threads, registers, shared_bytes[, dynamic_shared_bytes])`` works too.
    ``shared_bytes_per_block`` is static + dynamic; ``blocks_limit_*`` are the blocks per SM each
    limit allows (empty where the kernel uses none of it)."""
    import pandas as pd

    records = []
    for row in rows:
        carried, n = _launch_row(row)
        occ = occupancy(
            cc, n["threads_per_block"], n["registers_per_thread"], n["shared_bytes"], n["dynamic_shared_bytes"]
        )
        occ = {("blocks_" + k if k.startswith("limit_") else k): v for k, v in occ.items()}
        occ["occupancy_fraction"] = occ.pop("occupancy")
        records.append({**carried, **{c: occ[c] for c in TABLE_COLUMNS}})
    frame = pd.DataFrame.from_records(records)
    if frame.empty:
        return pd.DataFrame(columns=TABLE_COLUMNS)
    for column in ("blocks_limit_registers", "blocks_limit_shared"):
        frame[column] = frame[column].astype("Int64")
    return frame
