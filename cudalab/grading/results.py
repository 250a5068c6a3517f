"""One measured point of a submission (or of the reference) as one result, and the words and
limits every path shares: statuses, the reduction of a recipe's rows to one time, and messages
scrubbed of the machine's paths."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

YOURS, REFERENCE = "yours", "reference"
OK, WRONG = "ok", "wrong"
DOES_NOT_COMPILE, MISFIT = "does not compile", "does not fit the launch"
CRASHED, TIMED_OUT, NOT_RUN, REFUSED = "crashed", "timed out", "not run", "refused"
COMPILED_ONLY = "compiled only"
RACE = "race"  # compute-sanitizer found a hazard in a kernel the point launches
ABOVE_CEILING = "above the ceiling"  # a rate past the physical ceiling measured in the same run: not a result

# A path of the machine inside a message: every folder part goes, the file's name stays.
_PATH = re.compile(r"(?:[A-Za-z]:)?(?:[/\\][^\s/\\:;,'\"()<>]+)+[/\\](?P<name>[^\s/\\:;,'\"()<>]+)")


def scrubbed(text: str, limit: int = 400) -> str:
    """``text`` (an error's message) with every path of the machine cut to its file name, on one
    line and at most ``limit`` characters: nothing of the grading machine is ever printed."""
    one = " ".join(str(text).split())
    one = _PATH.sub(lambda m: m.group("name"), one)
    return one if len(one) <= limit else one[: limit - 1] + "…"


def compile_failure(error: Any) -> str:
    """A ``KernelCompileError`` as a student reads it: ``fw_blocked.cu:103: expected a ";"`` (the
    file's name and line, never its path)."""
    where = f"{error.path.name}:{error.line}" if error.line else error.path.name
    return scrubbed(f"{where}: {error.message}")


def one_time(rows: pd.DataFrame, how: str) -> dict[str, Any]:
    """A recipe's rows for one point as one result: ``status``/``reason`` (the first row that is
    not ok decides), and ``time_ms`` with its quartiles: the row's (``how="row"``, the first row),
    or the median iteration's stages summed (``how="median_iteration"``)."""
    if rows is None or not len(rows):
        return {"status": NOT_RUN, "reason": "the recipe measured no row"}
    status = rows["status"].astype(str) if "status" in rows else pd.Series([OK] * len(rows))
    bad = rows[~status.eq(OK)]
    out: dict[str, Any] = {"status": OK, "reason": ""}
    if len(bad):
        first = bad.iloc[0]
        reason = first.get("reason", "")
        out = {"status": str(first["status"]), "reason": "" if pd.isna(reason) else scrubbed(reason)}
    if "time_ms" not in rows or rows["time_ms"].isna().all():
        return out
    if how == "median_iteration" and "iteration" in rows:
        per = rows.groupby("iteration")["time_ms"].sum()
        out.update(
            time_ms=float(per.median()), time_ms_q1=float(per.quantile(0.25)), time_ms_q3=float(per.quantile(0.75))
        )
    else:
        first = rows.iloc[0]
        out["time_ms"] = float(first["time_ms"])
        for q in ("time_ms_q1", "time_ms_q3"):
            if q in rows and pd.notna(first[q]):
                out[q] = float(first[q])
    return out


def rate_of(point: Mapping[str, Any], time_ms: float | None, expression: str | None) -> float | None:
    """What a point reaches per second (the chapter's ``yours.rate`` over the point's axes and its
    time), or None where the chapter declares no rate or there is no time."""
    if expression is None or time_ms is None or not time_ms > 0:
        return None
    frame = pd.DataFrame([{**point, "time_ms": time_ms}])
    return float(frame.eval(expression, engine="python").iloc[0])


def spread(result: Mapping[str, Any]) -> float:
    """A measurement's spread: its interquartile range over its median (0 where it has none)."""
    mid, q1, q3 = (result.get(k) for k in ("time_ms", "time_ms_q1", "time_ms_q3"))
    if mid is None or q1 is None or q3 is None or not mid > 0:
        return 0.0
    return max(0.0, float(q3) - float(q1)) / float(mid)


def above_ceiling(rate: float | None, rate_spread: float, ceiling: float | None, ceiling_spread: float) -> bool:
    """Whether ``rate`` is past ``ceiling`` by more than the two measurements' spreads together: a
    rate no kernel can reach on this GPU, so a wrong result or a wrong timing, never a rank."""
    if rate is None or not ceiling or not ceiling > 0:
        return False
    return rate / ceiling - 1.0 > rate_spread + ceiling_spread


def shown_file(path: str | Path) -> str:
    """A kernel file as a student reads it: its name only."""
    return Path(path).name


def progress_line(student: str, chapter: str, result: dict) -> str:
    """One line of the grader's progress for a (student, chapter) worker's result: each point's
    status, and each case as answered (its verdict is the grader's, on the scoreboard)."""
    said = ", ".join("case answered" if p["status"] == "solved" else p["status"] for p in result["points"])
    return f"graded {student} {chapter}: {said} ({result['wall_s']:.1f} s)"
