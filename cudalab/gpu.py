"""The GPU that is present (if any): detection, attributes, provenance.

Everything degrades gracefully without CuPy or a CUDA device, because the
report must also build by replay on machines that have neither.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import socket
import subprocess
from functools import cache
from typing import Any, Optional

from cudalab.paths import ROOT


@cache
def cupy_or_none():
    """CuPy if it imports and sees at least one CUDA device, else None."""
    try:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() > 0:
            return cupy
    except Exception:  # no CuPy, no driver, no device: all mean "no GPU here"
        return None
    return None


def gpu_available() -> bool:
    return cupy_or_none() is not None


def require_cupy():
    cp = cupy_or_none()
    if cp is None:
        raise RuntimeError("no CUDA device is present (or CuPy is not installed); "
                           "measurements need a GPU, replay needs recorded results")
    return cp


def gpu_name() -> Optional[str]:
    cp = cupy_or_none()
    if cp is None:
        return None
    name = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


def attributes() -> dict[str, int]:
    """All cudaDeviceAttr values of the current device, by CuPy's names."""
    cp = require_cupy()
    return dict(cp.cuda.Device().attributes)


def _nvidia_smi(query: str) -> Optional[str]:
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20, check=True).stdout
        return out.strip().splitlines()[0].strip() if out.strip() else None
    except Exception:
        return None


def _version(v: int) -> str:
    return f"{v // 1000}.{(v % 1000) // 10}"


def git_commit() -> dict[str, Any]:
    """The commit measured; on the GPU host the tree travels without .git, so the
    caller passes it in CUDALAB_GIT_COMMIT (and CUDALAB_GIT_DIRTY)."""
    commit = os.environ.get("CUDALAB_GIT_COMMIT")
    dirty = os.environ.get("CUDALAB_GIT_DIRTY")
    if not commit:
        try:
            commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                                    text=True, timeout=10, check=True).stdout.strip()
            status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                                    capture_output=True, text=True, timeout=10, check=True).stdout
            dirty = "1" if status.strip() else "0"
        except Exception:
            commit = "unknown"
    return {"git_commit": commit, "git_dirty": dirty == "1" if dirty is not None else None}


def provenance() -> dict[str, Any]:
    """Who measured: GPU, driver, CUDA and CuPy versions, host, date and commit."""
    import numpy

    info: dict[str, Any] = {
        "date_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "hostname": socket.gethostname(),
        "python": platform.python_version(),
        "numpy": numpy.__version__,
    }
    info.update(git_commit())
    cp = cupy_or_none()
    if cp is None:
        info["gpu_name"] = None
        return info
    dev = cp.cuda.Device()
    props = cp.cuda.runtime.getDeviceProperties(dev.id)
    info.update({
        "gpu_name": gpu_name(),
        "compute_capability": f"{props['major']}.{props['minor']}",
        "gpu_memory_MiB": round(props["totalGlobalMem"] / 2**20),
        "driver_version": _nvidia_smi("driver_version"),
        "cuda_driver_api": _version(cp.cuda.runtime.driverGetVersion()),
        "cuda_runtime": _version(cp.cuda.runtime.runtimeGetVersion()),
        "cupy": cp.__version__,
    })
    return info
