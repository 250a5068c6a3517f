"""Correct before fast: a result against its reference, as a status every table carries."""

from __future__ import annotations

from typing import Any


def compare(result, reference, what: str = "the reference") -> dict[str, Any]:
    """Status of an exact result (NumPy or CuPy) against its reference: 'ok', or 'wrong' with the
    mismatch count. A 'wrong' row is never counted as a speedup or a best."""
    mismatches = int((result != reference).sum())
    return {"status": "ok" if mismatches == 0 else "wrong", "mismatches": mismatches,
            "reason": "" if mismatches == 0 else f"{mismatches} of {result.size} entries differ from {what}"}
