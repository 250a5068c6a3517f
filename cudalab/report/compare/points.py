"""The numbers of a comparison report: headlines side by side and tables joined point by point.

Every ratio is labelled the way ``compare.pairwise`` labels two recordings (``compare_table``):
*same* within the smaller recorded relative spread of the two sides (or ``threshold``), else
*faster* or *slower*, the later source against the first. Tables recorded on different grids are
joined on the axis points they share; the points only some sources have are returned as well, so
the report lists them rather than dropping them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from cudalab.report.compare.pairwise import TIME, compare_table
from cudalab.report.compare.sources import Source

THRESHOLD = 0.01  # as tools/compare_recordings.py: a 1% difference always reads as same
SIZE_AXES = ("n", "d", "k", "v", "e", "transfer_bytes")  # a headline's size; the other axes its configuration
# the axes that say which configuration won (not which quantity a headline is about)
CHOICE_AXES = ("variant", "kernel", "instruction", "block", "blocks", "threads_per_block", "block_factor", "config")
LOWER_IS_BETTER = {"ms", "s", "us"}
HIGHER_IS_BETTER = {"GB/s", "x", "fraction", "relaxations/s", "TFLOP/s", "GFLOP/s", "T/s"}


def _number(value: Any) -> float | None:
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if math.isfinite(out) else None


def _match(frame: pd.DataFrame, rows: dict[str, Any]) -> pd.DataFrame:
    """The rows of ``frame`` at the axis values ``rows`` (numbers compared as numbers)."""
    keep = pd.Series(True, index=frame.index)
    for col, value in rows.items():
        if col not in frame:
            return frame.iloc[0:0]
        num = _number(value)
        if num is not None and not isinstance(value, bool):
            keep &= pd.to_numeric(frame[col], errors="coerce").eq(num)
        else:
            keep &= frame[col].astype(str).eq(str(value))
    return frame[keep]


def spread_at(source: Source, chapter: str, table: str, rows: dict[str, Any]) -> float:
    """The recorded relative spread (IQR / median of time) at a headline's rows; 0 where unknown."""
    frame = source.table(chapter, table) if table else None
    if frame is None or not rows or f"{TIME}_q1" not in frame:
        return 0.0
    hit = _match(frame, rows)
    if hit.empty:
        return 0.0
    r = hit.iloc[0]
    value = (r[f"{TIME}_q3"] - r[f"{TIME}_q1"]) / r[TIME]
    return float(value) if _number(value) is not None else 0.0


def sized_rows(source: Source, chapter: str, entry: dict[str, Any]) -> dict[str, Any]:
    """A headline's rows with its size: where the rows name no size (a full run named by its
    variant alone), the size columns its one matching table row holds (``n``, ``d``, ``k``), so
    that two GPUs measured at different sizes are never ranked as if at the same one."""
    rows = dict(entry.get("rows") or {})
    if any(k in SIZE_AXES for k in rows) or not rows or not entry.get("table"):
        return rows
    frame = source.table(chapter, entry["table"])
    hit = _match(frame, rows) if frame is not None else None
    if hit is None or len(hit) != 1:
        return rows
    return rows | {k: hit.iloc[0][k] for k in SIZE_AXES if k in hit and _number(hit.iloc[0][k]) is not None}


def label(ratio: float, noise: float, unit: str) -> str:
    """same / faster / slower for ``ratio`` = later over first, by the unit's better direction."""
    if abs(ratio - 1) <= max(noise, THRESHOLD):
        return "same"
    better = ratio < 1 if unit in LOWER_IS_BETTER else ratio > 1
    return "faster" if better else "slower"


def config_of(rows: dict[str, Any]) -> str:
    """A headline's configuration in words, its size apart: 'variant 8x8'."""
    return ", ".join(f"{v}" for k, v in rows.items() if k not in SIZE_AXES)


def size_of(rows: dict[str, Any]) -> str:
    return ", ".join(f"{k.upper() if k == 'n' else k} = {fmt_int(v)}" for k, v in rows.items() if k in SIZE_AXES)


def where_of(rows: dict[str, Any]) -> str:
    """A headline's configuration and size in words: 'variant 8x8, N = 3,072'."""
    return ", ".join(x for x in (config_of(rows), size_of(rows)) if x)


def fmt_int(v: Any) -> str:
    num = _number(v)
    return f"{int(num):,}" if num is not None and num == int(num) else str(v)


def fmt_value(value: Any, unit: str) -> str:
    num = _number(value)
    if num is None:
        return str(value)
    if unit == "fraction":
        return f"{num:.2%}"  # two decimals: a fraction beside a goal such as 0.93 must not round onto it
    if unit == "x":
        return f"{num:,.2f}x"
    if unit in ("relaxations/s",):
        return f"{num / 1e12:.2f} T/s"
    if abs(num) >= 100:
        return f"{num:,.0f} {unit}"
    return f"{num:.3g} {unit}"


@dataclass
class HeadlineRow:
    """One headline across the sources: each source's value and rows, and each later source's
    ratio to the first (with its label, or why there is none)."""

    key: str
    unit: str
    cells: dict[str, dict[str, Any] | None]  # source label -> the headline entry, or None
    verdicts: dict[str, str] = field(default_factory=dict)  # later source label -> "1.23x, faster"


def headlines(sources: list[Source], chapter: str) -> list[HeadlineRow]:
    """Every headline key any source recorded for the chapter (the first source's order), plus
    the summary row's speedup over the lab's baseline, where the lab's own figure is the lab's."""
    per: dict[str, dict[str, dict[str, Any]]] = {}
    for s in sources:
        entries = list(s.headlines(chapter))
        card = s.scorecard(chapter)
        if card.get("speedup_x") is not None:
            entries.append(
                {
                    "key": "speedup over the baseline",
                    "value": card["speedup_x"],
                    "unit": "x",
                    "text": f"over {card.get('baseline', '')}",
                    "table": "",
                    "rows": {},
                }
            )
        per[s.label] = {e["key"]: e for e in entries}
    lab = next((s for s in sources if s.is_lab), None)
    if lab is not None:  # the lab's figure for the same comparison, from a recording of its profile
        card = next((s.scorecard(chapter) for s in sources if not s.is_lab and s.profile == lab.profile), {})
        if card.get("lab_speedup_x") is not None:
            per[lab.label]["speedup over the baseline"] = {
                "key": "speedup over the baseline",
                "value": card["lab_speedup_x"],
                "unit": "x",
                "text": card.get("lab", ""),
                "table": "",
                "rows": {},
            }
    keys: list[str] = []
    for s in sources:
        keys += [k for k in per[s.label] if k not in keys]
    out = []
    for key in keys:
        cells = {s.label: per[s.label].get(key) for s in sources}
        present = [s for s in sources if cells[s.label] is not None]
        unit = present[0] and cells[present[0].label]["unit"]
        row = HeadlineRow(key, unit, cells)
        first = present[0]
        for s in present[1:]:
            row.verdicts[s.label] = _verdict(first, s, cells[first.label], cells[s.label], chapter)
        out.append(row)
    return out


def _metric_column(frame: pd.DataFrame, entry: dict[str, Any]) -> str | None:
    """The column of ``frame`` that a headline's value was read from: the one holding that value
    at the headline's rows."""
    hit = _match(frame, entry.get("rows") or {})
    value = _number(entry.get("value"))
    if len(hit) != 1 or value is None:
        return None
    row = hit.iloc[0]
    for col in frame.columns:
        got = _number(row[col]) if not isinstance(row[col], bool) else None
        if got is not None and math.isclose(got, value, rel_tol=1e-9):
            return col
    return None


def at_shared_size(
    a: Source, b: Source, ea: dict[str, Any], eb: dict[str, Any], chapter: str
) -> tuple[float, float, dict[str, Any]] | None:
    """Two headlines recorded at different sizes, compared at one both recorded: the value each
    source's table holds at the first's rows (its configuration and size), else at the second's,
    in the column the headline was read from. None where no such point exists in both."""
    ta = a.table(chapter, ea.get("table", "")) if ea.get("table") else None
    tb = b.table(chapter, eb.get("table", "")) if eb.get("table") else None
    if ta is None or tb is None:
        return None
    col = _metric_column(ta, ea)
    if col is None or col not in tb:
        return None
    for rows in (sized_rows(a, chapter, ea), sized_rows(b, chapter, eb)):
        if not any(k in SIZE_AXES for k in rows):
            continue  # rows that name no size are no size both recorded
        ha, hb = _match(ta, rows), _match(tb, rows)
        if len(ha) != 1 or len(hb) != 1:
            continue
        if any("status" in h and h.iloc[0]["status"] != "ok" for h in (ha, hb)):
            continue
        va, vb = _number(ha.iloc[0][col]), _number(hb.iloc[0][col])
        if va and vb is not None:
            return va, vb, rows
    return None


@dataclass(frozen=True)
class Ratio:
    """A later source's headline over the first's: the ratio, its label, and where it was taken
    (``rows``; the headlines' own, or a size both recorded), or why there is none (``why``)."""

    value: float | None
    text: str
    rows: dict[str, Any] = field(default_factory=dict)

    def speed(self, unit: str) -> float | None:
        """How much faster the later source is (a time's inverse ratio, a rate's ratio), or None."""
        if self.value is None or self.value <= 0:
            return None
        if unit in LOWER_IS_BETTER:
            return 1 / self.value
        return self.value if unit in HIGHER_IS_BETTER - {"x", "fraction"} else None


def ratio_of(a: Source, b: Source, ea: dict[str, Any], eb: dict[str, Any], chapter: str) -> Ratio:
    """``b``'s headline over ``a``'s, at one size: a "different sizes" pair is compared at a size
    both recorded (``at_shared_size``) or says why it cannot be."""
    va, vb, unit = _number(ea["value"]), _number(eb["value"]), ea["unit"]
    if unit not in LOWER_IS_BETTER | HIGHER_IS_BETTER or va is None or vb is None or va == 0:
        return Ratio(None, "same" if str(ea["value"]) == str(eb["value"]) else "differs")
    rows_a, rows_b = ea.get("rows") or {}, eb.get("rows") or {}
    size_a, size_b = size_of(sized_rows(a, chapter, ea)), size_of(sized_rows(b, chapter, eb))
    where = ""
    if size_a != size_b:
        shared = at_shared_size(a, b, ea, eb, chapter)
        if shared is None:
            return Ratio(
                None,
                f"{vb / va:,.3f}x, not ranked: recorded at different sizes ({size_a or '?'} vs {size_b or '?'}) "
                "and at no size in both",
            )
        va, vb, rows_a = shared
        rows_b = rows_a
        where = f" at {where_of(rows_a)} (both recorded it; the headlines differ in size)"
    ratio = vb / va
    noise = min(
        spread_at(a, chapter, ea.get("table", ""), rows_a),
        spread_at(b, chapter, eb.get("table", ""), rows_b),
    )
    return Ratio(ratio, f"{ratio:,.3f}x, {label(ratio, noise, unit)}{where}", rows_a)


def _verdict(a: Source, b: Source, ea: dict[str, Any], eb: dict[str, Any], chapter: str) -> str:
    return ratio_of(a, b, ea, eb, chapter).text


@dataclass
class Joined:
    """One table joined across the sources that have it."""

    table: str
    axes: list[str]
    points: pd.DataFrame  # axes, each source's time_ms, each later source's ratio and label
    only: dict[
        str, list[dict[str, Any]]
    ]  # points some sources lack (or did not run correctly): source set -> axis values
    sources: list[str]
    against: str = ""  # the published table a lab source is joined from
    not_published: int = 0  # (lab joins) recorded points the lab published nothing for, counted not listed


def _ok_points(frame: pd.DataFrame, axes: list[str]) -> pd.DataFrame:
    f = frame[frame["status"].eq("ok")] if "status" in frame else frame
    return f.dropna(subset=[TIME]).drop_duplicates(subset=axes)


def join_table(frames: dict[str, pd.DataFrame], axes: list[str], table: str) -> Joined:
    """The points every source measured correctly, with each later source's ratio to the first
    and its label (``compare_table``), and the points the others lack."""
    labels = list(frames)
    ok = {k: _ok_points(f, axes) for k, f in frames.items()}
    first = labels[0]
    points = ok[first][axes + [TIME]].rename(columns={TIME: f"{TIME} | {first}"})
    for other in labels[1:]:
        pair = compare_table(frames[first], frames[other], axes, THRESHOLD)
        pair = pair[[*axes, f"{TIME}_b", "ratio_b_over_a", "label"]].rename(
            columns={
                f"{TIME}_b": f"{TIME} | {other}",
                "ratio_b_over_a": f"ratio | {other}",
                "label": f"label | {other}",
            }
        )
        points = points.merge(pair, on=axes, how="inner")
    keys = {k: {tuple(map(_key, r)) for r in f[axes].itertuples(index=False)} for k, f in ok.items()}
    every = set.union(*keys.values())
    only: dict[str, list[dict[str, Any]]] = {}
    for point in sorted(every - set.intersection(*keys.values()), key=_natural):
        have = ", ".join(k for k in labels if point in keys[k])
        only.setdefault(have, []).append(dict(zip(axes, point)))
    return Joined(table, axes, points.reset_index(drop=True), only, labels)


def _key(value: Any) -> str:
    """An axis value as text, 5000 and 5000.0 alike."""
    num = _number(value)
    return str(int(num)) if num is not None and num == int(num) and not isinstance(value, str) else str(value)


def _natural(point: tuple) -> tuple:
    return tuple((0, float(p), "") if _number(p) is not None else (1, 0.0, p) for p in point)


def joined_tables(sources: list[Source], chapter: str) -> list[Joined]:
    """Every timed table that at least two recordings of the chapter hold with the same axes, and
    every published table of a lab source joined with a recorded table on its coordinates."""
    recs = [s for s in sources if not s.is_lab]
    out = []
    names: list[str] = []
    for s in recs:
        names += [t for t in s.axes(chapter) if t not in names]
    for name in names:
        frames, axes = {}, None
        for s in recs:
            a = s.axes(chapter).get(name)
            frame = s.table(chapter, name) if a else None
            if frame is None or TIME not in frame or (axes is not None and a != axes):
                continue
            axes = axes or a
            frames[s.label] = frame
        if len(frames) >= 2:
            out.append(join_table(frames, list(axes), name))
    for lab in (s for s in sources if s.is_lab):
        for pub_name, pub in lab.published(chapter).items():
            coords = [c for c in pub.attrs.get("coordinates", []) if c in pub and pub[c].notna().all()]
            if TIME not in pub or not coords:
                continue
            for name in names:
                frames = {}
                for s in recs:
                    frame = s.table(chapter, name)
                    if frame is not None and TIME in frame and set(coords) <= set(frame.columns):
                        frames[s.label] = frame
                published = pub.dropna(subset=[TIME])
                # only the recordings that measured some published point: the others' grids miss it
                frames = {k: f for k, f in frames.items() if len(compare_table(published, f, coords, THRESHOLD))}
                if frames:
                    j = join_table({lab.label: published, **frames}, coords, name)
                    if len(j.points):
                        named = f"{pub_name}, " if pub_name != "published" else ""
                        j.against = f"{named}{pub.attrs.get('gpu', '')} ({pub.attrs.get('where', '')})"
                        # a lab publishes a few points of a grid: list the published points a recording lacks,
                        # count the recorded points the lab has no number for
                        j.not_published = sum(len(v) for k, v in j.only.items() if lab.label not in k)
                        j.only = {k: v for k, v in j.only.items() if lab.label in k}
                        out.append(j)
                        break
    return out


def geomean(values: pd.Series) -> float:
    v = pd.to_numeric(values, errors="coerce").dropna()
    v = v[v > 0]
    return float(np.exp(np.log(v).mean())) if len(v) else float("nan")
