"""A student's file in one chapter, judged once from the chapter's rows (``yours.csv``,
``section.measured_together`` or ``section.compiled``): the verdict the console prints (``build_report.py
--kernels``) and the row that leads the report's first page, with the best point, the geometric
mean of its speed beside the reference and its slowest point.

A file with one point that is not correct gets the verdict of what went wrong, and no best, mean
or slowest: a wrong result is never counted as a speed. Untimed (no GPU, or a replay), a file is
"compiled only", with the registers and theoretical occupancy of the builds its graded points
launch, beside the reference's.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import pandas as pd

from cudalab.grading import results as R

SHOWN_SPEEDS = 4  # more points than this, and the console line gives their geometric mean alone
REASON_CHARS = 240


@dataclass(frozen=True)
class FileVerdict:
    """One file in one chapter: ``said`` is the console's words; ``correct`` is true for a file
    correct at every point (or compiled only, untimed); ``best``, ``geomean_x`` and ``slowest``
    are set for a correct timed file alone; ``compiled`` for an untimed one."""

    file: str
    chapter: str
    said: str
    correct: bool
    best: str = ""
    geomean_x: float | None = None
    slowest: str = ""
    compiled: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def text(value: Any) -> str:
    """A cell as text ("" for a missing one), on one line and at most ``REASON_CHARS`` long."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    one = " ".join(str(value).split())
    return one if len(one) <= REASON_CHARS else one[: REASON_CHARS - 1] + "…"


def of_chapter(
    frame: pd.DataFrame, chapter: str, timed: bool, occupancy: pd.DataFrame | None = None
) -> list[FileVerdict]:
    """Each student's file that ``frame`` (a chapter's ``yours.csv``) holds rows of, judged."""
    if not len(frame) or "source" not in frame:
        return []
    mine = frame[frame["source"].astype(str).eq(R.YOURS)]
    return [of_file(mine[mine["file"].astype(str).eq(f)], f, chapter, timed, occupancy) for f in mine["file"].unique()]


def of_file(
    rows: pd.DataFrame, file: str, chapter: str, timed: bool, occupancy: pd.DataFrame | None = None
) -> FileVerdict:
    """One file's verdict from its rows (``source`` yours) of a chapter's ``yours.csv``."""
    untimed = not timed or "point" not in rows
    fine = (R.OK, R.COMPILED_ONLY) if untimed else (R.OK,)
    bad = rows[~rows["status"].astype(str).isin(fine)]
    if len(bad):
        return FileVerdict(file, chapter, what_went_wrong(bad), False)
    if untimed:
        return FileVerdict(file, chapter, R.COMPILED_ONLY, True, compiled=compiled_at_points(rows, occupancy))
    speeds = _speeds(rows)
    mean = geomean(speeds)
    slowest = min(speeds) if speeds else None
    return FileVerdict(
        file,
        chapter,
        how_fast(rows, speeds),
        True,
        best=_best(rows),
        geomean_x=mean,
        slowest=f"{slowest[0]:.2f}x at {slowest[1]}" if slowest else "",
    )


def what_went_wrong(bad: pd.DataFrame) -> str:
    """The statuses of the rows that are not correct, each once: a file's own (does not compile,
    does not fit) with its reason, a point's with where (wrong, race, above the ceiling, timed out
    and any other, named as the row names it)."""
    said = []
    for _, row in bad.iterrows():
        status, reason = str(row["status"]), text(row.get("reason"))
        if status == R.DOES_NOT_COMPILE:  # the reason is the compiler's FILE:LINE: message
            words = f"does not compile {reason}" if reason else status
        elif status == R.MISFIT:
            words = f"{status}: {reason}" if reason else status
        else:
            where = text(row.get("point"))
            words = status + (f" at {where}" if where else "") + (f": {reason}" if reason else "")
        if words not in said:
            said.append(words)
    return "; ".join(said)


def _speeds(rows: pd.DataFrame) -> list[tuple[float, str]]:
    """(speed beside the reference, point) of each row that has one."""
    return [
        (float(x), text(p))
        for x, p in zip(rows["speed_vs_reference"], rows["point"], strict=True)
        if text(x) and float(x) > 0
    ]


def geomean(speeds: list[tuple[float, str]]) -> float | None:
    """The geometric mean of the speeds (``_speeds``), or None where there is none."""
    return math.exp(sum(math.log(x) for x, _ in speeds) / len(speeds)) if speeds else None


def how_fast(rows: pd.DataFrame, speeds: list[tuple[float, str]] | None = None) -> str:
    """A correct file's speed beside the reference at its points: the one ratio, or their
    geometric mean with each (at most ``SHOWN_SPEEDS``)."""
    speeds = _speeds(rows) if speeds is None else speeds
    if not speeds:
        return "correct (the reference has no time to set beside it)"
    mean = geomean(speeds)
    if len(speeds) == 1 and len(rows) == 1:
        return f"correct and {mean:.2f}x the reference"
    each = ", ".join(f"{x:.2f}x at {p}" for x, p in speeds) if len(speeds) <= SHOWN_SPEEDS else ""
    untimed = f"; {len(rows) - len(speeds)} without a reference time" if len(speeds) < len(rows) else ""
    return (
        f"correct and {mean:.2f}x the reference (geometric mean of {len(speeds)} points"
        + (f": {each}" if each else "")
        + f"{untimed})"
    )


def _best(rows: pd.DataFrame) -> str:
    """The best correct point: the highest fraction of the chapter's ceiling where the rows have
    one, else the highest speed beside the reference; with its time and that fraction."""
    timed = rows[pd.to_numeric(rows["time_ms"], errors="coerce").notna()]
    if not len(timed):
        return ""
    fraction = pd.to_numeric(timed.get("fraction_of_ceiling"), errors="coerce")
    speed = pd.to_numeric(timed.get("speed_vs_reference"), errors="coerce")
    key = fraction if fraction is not None and fraction.notna().any() else speed
    row = timed.loc[key.idxmax()] if key is not None and key.notna().any() else timed.iloc[0]
    of = ""
    if pd.notna(row.get("fraction_of_ceiling")):
        ceiling = text(row.get("ceiling")) or "the chapter's ceiling"
        of = f", {float(row['fraction_of_ceiling']):.1%} of {ceiling}"
    return f"{text(row['point'])}: {float(row['time_ms']):.3f} ms{of}"


def compiled_at_points(rows: pd.DataFrame, occupancy: pd.DataFrame | None) -> str:
    """Untimed: each graded point's launches of the file with their registers and theoretical
    occupancy, the student's beside the reference's (``section.occupancy_at_points``); without
    them, each kernel's registers as compiled."""
    by_point: dict[str, list[str]] = {}
    if occupancy is not None and len(occupancy) and "registers_per_thread" in occupancy:
        keys = [k for k in ("point", "kernel", "threads_per_block") if k in occupancy]
        kernels = set(rows["kernel"].astype(str)) if "kernel" in rows else None
        for key, group in occupancy.groupby(keys, sort=False):
            at = dict(zip(keys, key if isinstance(key, tuple) else (key,), strict=True))
            by = group.set_index("source")
            if (kernels is not None and str(at.get("kernel")) not in kernels) or R.YOURS not in by.index:
                continue
            mine, ref = by.loc[R.YOURS], by.loc[R.REFERENCE] if R.REFERENCE in by.index else None
            beside = (
                f" (reference {int(ref['registers_per_thread'])}, {float(ref['occupancy_fraction']):.0%})"
                if ref is not None
                else ""
            )
            by_point.setdefault(str(at.get("point") or ""), []).append(
                f"{at.get('kernel')} {int(mine['registers_per_thread'])} registers, "
                f"{float(mine['occupancy_fraction']):.0%} occupancy{beside}"
            )
    parts = [(f"{p}: " if p else "") + ", ".join(dict.fromkeys(each)) for p, each in by_point.items()]
    if not parts and "registers_per_thread" in rows:
        for _, row in rows.drop_duplicates(["kernel", "registers_per_thread"]).iterrows():
            if pd.notna(row.get("registers_per_thread")):
                where = f"{text(row.get('point'))}: " if text(row.get("point")) else ""
                parts.append(f"{where}{text(row.get('kernel'))} {int(row['registers_per_thread'])} registers")
    return "; ".join(dict.fromkeys(parts))
