"""How many blocks of a kernel fit on one SM, and which resource limits them.

The same arithmetic as CUDA's occupancy calculator, for the limits that matter to the chapters'
kernels (threads, registers allocated per warp in units of 256, shared memory, blocks); a GPU
test checks it against the driver's own answer.
"""

from __future__ import annotations

from typing import Any

from cudalab.core.gpu import attributes


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
    return {"blocks_per_sm": blocks, "warps_per_sm": blocks * warps,
            "limited_by": ", ".join(k for k, v in limits.items() if v == blocks)}


def present_sm() -> dict[str, int]:
    attrs = attributes()
    return {"threads": attrs["MaxThreadsPerMultiProcessor"], "registers": attrs["MaxRegistersPerMultiprocessor"],
            "shared_bytes": attrs["MaxSharedMemoryPerMultiprocessor"], "blocks": attrs["MaxBlocksPerMultiprocessor"]}
