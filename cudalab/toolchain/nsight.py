"""Hardware counters read with Nsight Compute (``ncu``), one row per profiled kernel launch.

``ncu`` profiles a child Python process (a target module that launches the kernels of interest,
which its caller names) and this module turns its CSV into a tidy frame in our units. Where
``ncu`` is missing, or may not read the counters (``ERR_NVGPUCTRPERM`` without admin rights),
``CountersUnavailable`` says why, and the caller falls back to a model it states.
"""

from __future__ import annotations

import io
import subprocess
import sys
from collections.abc import Sequence

import pandas as pd

from cudalab.core.errors import CountersUnavailable
from cudalab.toolchain.nvcc import cuda_tool


def _ncu() -> str:
    path = cuda_tool("ncu")
    if path is None:
        raise CountersUnavailable("Nsight Compute (ncu) is not installed on this host")
    return path


def profile_launches(
    target: Sequence[str],
    metrics: dict[str, tuple[str, float]],
    kernel_filter: str,
    expected: int,
    timeout_s: float = 300,
) -> pd.DataFrame:
    """Run ``python TARGET...`` under ``ncu`` and return one row per profiled launch, in launch
    order: a column per entry of ``metrics`` ({our column: (ncu metric, factor from its base
    unit)}). ``kernel_filter`` is ncu's ``--kernel-name`` (e.g. ``regex:phase3``); exactly
    ``expected`` launches must be profiled."""
    names = ",".join(m for m, _ in metrics.values())
    cmd = [
        _ncu(),
        "--csv",
        "--print-units",
        "base",
        "--metrics",
        names,
        "--kernel-name",
        kernel_filter,
        sys.executable,
        *target,
    ]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise CountersUnavailable(f"ncu did not finish within {timeout_s:.0f} s") from None
    text = proc.stdout
    if "ERR_NVGPUCTRPERM" in text + proc.stderr:
        raise CountersUnavailable("ncu may not read the GPU's performance counters here (ERR_NVGPUCTRPERM)")
    start = text.find('"ID"')
    if proc.returncode != 0 or start < 0:
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-8:]
        raise CountersUnavailable("ncu did not profile the kernels: " + " | ".join(tail))
    raw = pd.read_csv(io.StringIO(text[start:]), thousands=",")
    values = raw.pivot_table(index="ID", columns="Metric Name", values="Metric Value", aggfunc="first")
    if len(values) != expected:
        raise CountersUnavailable(f"ncu profiled {len(values)} launches, expected {expected}")
    rows = []
    for _, got in values.sort_index().iterrows():
        rows.append(
            {
                column: float(got[metric]) * factor if metric in got else float("nan")
                for column, (metric, factor) in metrics.items()
            }
        )
    return pd.DataFrame(rows)
