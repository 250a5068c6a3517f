"""The GPU that is present (if any): detection and attributes.

Everything degrades gracefully without CuPy or a CUDA device, because the
report must also build by replay on machines that have neither.
"""

from __future__ import annotations

from functools import cache

from cudalab.core.errors import NoGPU


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
        raise NoGPU(
            "no CUDA device is present (or CuPy is not installed); "
            "measurements need a GPU, replay needs recorded results"
        )
    return cp


def gpu_name() -> str | None:
    cp = cupy_or_none()
    if cp is None:
        return None
    name = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


def compute_capability() -> str | None:
    """The present GPU's compute capability ("9.0"), None where there is none."""
    cp = cupy_or_none()
    if cp is None:
        return None
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    return f"{props['major']}.{props['minor']}"


def attributes() -> dict[str, int]:
    """All cudaDeviceAttr values of the current device, by CuPy's names."""
    cp = require_cupy()
    return dict(cp.cuda.Device().attributes)
