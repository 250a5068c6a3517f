"""Chapter 00's deviceQuery: what it prints for the present GPU, beside the lab GPU's published spec."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

# FP32 lanes per multiprocessor by compute capability (as deviceQuery's _ConvertSMVer2Cores).
_CORES_PER_SM = {
    (3, 0): 192,
    (3, 5): 192,
    (3, 7): 192,
    (5, 0): 128,
    (5, 2): 128,
    (5, 3): 128,
    (6, 0): 64,
    (6, 1): 128,
    (6, 2): 128,
    (7, 0): 64,
    (7, 2): 64,
    (7, 5): 64,
    (8, 0): 64,
    (8, 6): 128,
    (8, 7): 128,
    (8, 9): 128,
    (9, 0): 128,
    (10, 0): 128,
    (10, 3): 128,
    (12, 0): 128,
}

# (spec field, unit, description, CuPy attribute, scale from the attribute's unit)
_FIELDS: list[tuple[str, str, str, str | None, float]] = [
    ("compute_capability", "", "compute capability", None, 1),
    ("multiprocessors", "", "multiprocessors (SMs)", "MultiProcessorCount", 1),
    ("cuda_cores_per_multiprocessor", "", "FP32 cores per SM", None, 1),
    ("gpu_clock_MHz", "MHz", "GPU max clock", "ClockRate", 1e-3),
    ("memory_clock_MHz", "MHz", "memory clock", "MemoryClockRate", 1e-3),
    ("memory_bus_width_bits", "bit", "memory bus width", "GlobalMemoryBusWidth", 1),
    ("global_memory_MiB", "MiB", "global memory", None, 1),
    ("l2_cache_bytes", "B", "L2 cache", "L2CacheSize", 1),
    ("constant_memory_bytes", "B", "constant memory", "TotalConstantMemory", 1),
    ("shared_memory_per_block_bytes", "B", "shared memory per block", "MaxSharedMemoryPerBlock", 1),
    ("shared_memory_per_block_optin_bytes", "B", "shared memory per block (opt-in)", "MaxSharedMemoryPerBlockOptin", 1),
    ("shared_memory_per_multiprocessor_bytes", "B", "shared memory per SM", "MaxSharedMemoryPerMultiprocessor", 1),
    ("registers_per_block", "", "32-bit registers per block", "MaxRegistersPerBlock", 1),
    ("registers_per_multiprocessor", "", "32-bit registers per SM", "MaxRegistersPerMultiprocessor", 1),
    ("warp_size", "", "warp size", "WarpSize", 1),
    ("max_threads_per_block", "", "threads per block (max)", "MaxThreadsPerBlock", 1),
    ("max_threads_per_multiprocessor", "", "threads per SM (max)", "MaxThreadsPerMultiProcessor", 1),
    ("max_blocks_per_multiprocessor", "", "blocks per SM (max)", "MaxBlocksPerMultiprocessor", 1),
    ("peak_dram_bandwidth_GBps", "GB/s", "DRAM bandwidth, theoretical (2 x clock x bus)", None, 1),
    ("fp32_peak_GFLOPs", "GFLOP/s", "FP32 peak, theoretical (2 x cores x SMs x clock)", None, 1),
]


def _peak_bandwidth(spec: dict[str, Any]) -> float:
    clock, bus = spec.get("memory_clock_MHz"), spec.get("memory_bus_width_bits")
    if not clock or not bus:
        return math.nan
    return 2 * clock * 1e6 * bus / 8 / 1e9


def fp32_peak_GFLOPs(spec: dict[str, Any]) -> float:
    """The FP32 peak of a spec: 2 flops per FMA x FP32 lanes per SM x SMs x max clock (GFLOP/s)."""
    try:
        return 2 * spec["cuda_cores_per_multiprocessor"] * spec["multiprocessors"] * spec["gpu_clock_MHz"] / 1e3
    except (KeyError, TypeError):
        return math.nan


def present_spec() -> dict[str, Any]:
    """deviceQuery's numbers for the present GPU, keyed like ``DeviceSpec``."""
    from cudalab.core.gpu import attributes, gpu_name, require_cupy

    cp = require_cupy()
    attrs = attributes()
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    cc = (props["major"], props["minor"])
    spec: dict[str, Any] = {
        "name": gpu_name(),
        "compute_capability": f"{cc[0]}.{cc[1]}",
        "cuda_cores_per_multiprocessor": _CORES_PER_SM.get(cc, math.nan),
        "global_memory_MiB": props["totalGlobalMem"] / 2**20,
    }
    for key, _, _, attr, scale in _FIELDS:
        if attr is not None:
            value = attrs.get(attr)
            spec[key] = value * scale if value is not None else math.nan
    spec["peak_dram_bandwidth_GBps"] = _peak_bandwidth(spec)
    spec["fp32_peak_GFLOPs"] = fp32_peak_GFLOPs(spec)
    return spec


def spec_frame(spec: dict[str, Any]) -> pd.DataFrame:
    """A spec as a tidy table: ``value`` as displayed text (so "9.0" stays a compute
    capability), ``value_numeric`` as a number where the property is one."""
    rows = [
        {
            "key": key,
            "property": label,
            "unit": unit,
            "value": _fmt(spec.get(key)),
            "value_numeric": _number(spec.get(key)),
        }
        for key, unit, label, _, _ in _FIELDS
    ]
    return pd.DataFrame(rows)


def _number(v: Any) -> float:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else math.nan


def side_by_side(present: pd.DataFrame, present_name: str, lab: Any | None) -> pd.DataFrame:
    """The present GPU's spec table with the lab GPU's published values beside it (``lab``: the
    profile's device spec, anything with ``name`` and ``model_dump()``)."""
    table = present[["key", "property", "unit"]].fillna("").copy()
    table[present_name] = present["value"].fillna("–").astype(str)
    if lab is not None:
        lab_spec = lab.model_dump()
        lab_spec["peak_dram_bandwidth_GBps"] = _peak_bandwidth(lab_spec)
        lab_spec["fp32_peak_GFLOPs"] = fp32_peak_GFLOPs(lab_spec)
        inferred = getattr(lab, "inferred", {}) or {}
        table[f"{lab.name} (published)"] = table["key"].map(
            lambda k: _fmt(lab_spec.get(k)) + (" †" if k in inferred and lab_spec.get(k) is not None else "")
        )
    return table.drop(columns="key").set_index("property")


def _fmt(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    if isinstance(v, float):
        return f"{v:,.0f}" if v >= 100 else f"{v:g}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)
