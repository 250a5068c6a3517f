"""Catching an outlier baseline: a library call's sweep median checked against a standalone
back-to-back timing of the same call in the same run.

A chapter's baseline (cuBLAS in chapter 05, ``cupy.max`` in chapter 02, the vectorized CuPy
k-means iteration in chapter 06) is what its kernels are a fraction of, so one slow sample run
must not become a headline. ``check`` compares the sweep's median at one point with
``timing.back_to_back`` (50 calls between one event pair); a point off by more than
``TOLERANCE`` is measured once more, and if still off it is flagged in the row the chapter
records and shows, never dropped or replaced silently.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd

TOLERANCE = 0.03  # relative difference between a sweep median and its back-to-back reference
CALLS = 50  # calls of the back-to-back reference

OK, REMEASURED, FLAGGED = "ok", "remeasured", "flagged"


def off_by(time_ms: float, reference_ms: float) -> float:
    """Relative difference of a median from its reference (0.05: 5% slower or faster)."""
    return abs(time_ms / reference_ms - 1.0)


def verdict(swept_ms: float, reference_ms: float, remeasured_ms: float | None, tolerance: float = TOLERANCE) -> str:
    """``ok`` where the sweep's median is within ``tolerance`` of the reference, ``remeasured``
    where it was not but the one re-measurement is, ``flagged`` where that is off as well (or
    there was none)."""
    if off_by(swept_ms, reference_ms) <= tolerance:
        return OK
    if remeasured_ms is not None and off_by(remeasured_ms, reference_ms) <= tolerance:
        return REMEASURED
    return FLAGGED


def check(
    baseline: str,
    point: dict[str, Any],
    swept_ms: float,
    measure_again: Callable[[], float],
    reference: Callable[[], float],
    tolerance: float = TOLERANCE,
) -> dict[str, Any]:
    """One row of a chapter's ``baseline_check`` table: ``baseline`` (what was timed) at ``point``
    (its axis values), the sweep's median ``swept_ms``, the back-to-back ``reference()``
    (milliseconds per call), and, where the two differ by more than ``tolerance``, one
    ``measure_again()`` with the sweep's own timing. ``time_ms`` is the figure to use: the
    re-measured one where it agrees with the reference, else the sweep's, whose row then says
    ``flagged``."""
    reference_ms = float(reference())
    again = None if off_by(swept_ms, reference_ms) <= tolerance else float(measure_again())
    status = verdict(swept_ms, reference_ms, again, tolerance)
    use = again if status == REMEASURED else swept_ms
    return {
        "baseline": baseline,
        **point,
        "sweep_time_ms": float(swept_ms),
        "back_to_back_time_ms": reference_ms,
        "back_to_back_calls": CALLS,
        "remeasured_time_ms": again,
        "time_ms": float(use),
        "off_by": off_by(use, reference_ms),
        "tolerance": tolerance,
        "status": status,
        "reason": ""
        if status == OK
        else f"sweep median {swept_ms:.4g} ms is {off_by(swept_ms, reference_ms):.1%} off {CALLS} back-to-back calls "
        f"({reference_ms:.4g} ms per call); "
        + (
            f"re-measured {again:.4g} ms agrees"
            if status == REMEASURED
            else f"re-measured {again:.4g} ms is still {off_by(again, reference_ms):.1%} off: flagged"
        ),
    }


def markdown(table: pd.DataFrame | None) -> str:
    """A chapter's line on its baseline check: each row's verdict in words, or, for a recording
    made before the check existed, a note that it was not recorded."""
    if table is None or table.empty:
        return (
            "**Baseline check:** not recorded by this recording (made before each baseline was checked "
            "against a back-to-back timing); its baseline figures were timed with one synchronized call per sample."
        )
    lines = []
    for r in table.itertuples():
        where = ", ".join(f"{c} = {getattr(r, c)}" for c in table.columns if c in ("n", "d", "k"))
        head = f"{r.baseline}" + (f" at {where}" if where else "")
        if r.status == OK:
            lines.append(
                f"- {head}: sweep median {r.sweep_time_ms:.4g} ms, {int(r.back_to_back_calls)} back-to-back calls "
                f"{r.back_to_back_time_ms:.4g} ms per call ({r.off_by:.1%} apart): agrees."
            )
        else:
            flag = "**FLAGGED:** " if r.status == FLAGGED else ""
            lines.append(f"- {flag}{head}: {r.reason}.")
    return "**Baseline check** (within {:.0%} of a standalone back-to-back timing):\n\n".format(
        float(table["tolerance"].iloc[0])
    ) + "\n".join(lines)
