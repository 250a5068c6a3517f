"""Correct before fast: a result against its reference, as a status every table carries."""

from __future__ import annotations

from typing import Any


def compare(result, reference, what: str = "the reference") -> dict[str, Any]:
    """Status of an exact result (NumPy or CuPy) against its reference: 'ok', or 'wrong' with the
    mismatch count. A 'wrong' row is never counted as a speedup or a best."""
    mismatches = int((result != reference).sum())
    return {
        "status": "ok" if mismatches == 0 else "wrong",
        "mismatches": mismatches,
        "reason": "" if mismatches == 0 else f"{mismatches} of {result.size} entries differ from {what}",
    }


def compare_close(
    result, reference, scale, tolerance: float, what: str = "the reference", scale_name: str = "the scale"
) -> dict[str, Any]:
    """Status of a rounded result (floating point) against its reference: 'ok' where every entry
    satisfies ``|result - reference| <= tolerance * scale`` (``scale`` elementwise, e.g. ``|A||B|``
    for a matrix product), else 'wrong' with how many entries fail. ``max_rel_error`` is the worst
    ``|result - reference| / scale``, the number to set beside ``tolerance``; NaN fails."""
    xp = _array_module(result)
    err = xp.abs(result - reference) / xp.maximum(scale, xp.finfo(xp.float32).tiny)
    bad = int((~(err <= tolerance)).sum())
    worst = float(xp.nan_to_num(err, nan=xp.inf).max()) if err.size else 0.0
    return {
        "status": "ok" if bad == 0 else "wrong",
        "mismatches": bad,
        "max_rel_error": worst,
        "reason": ""
        if bad == 0
        else f"{bad} of {result.size} entries differ from {what} by more than "
        f"{tolerance:.2g} x {scale_name} (worst {worst:.3g})",
    }


def _array_module(array):
    """CuPy for device arrays, NumPy otherwise, without importing CuPy where it is absent."""
    if type(array).__module__.startswith("cupy"):
        import cupy

        return cupy
    import numpy

    return numpy
