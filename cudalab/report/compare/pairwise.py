"""Comparing two recordings point by point: same, faster or slower, by the recorded spread.

Two recordings (two GPUs, two commits, or two profiles on one GPU) are joined table by table on
the axis columns each table recorded (``Chapter.table(..., axes=...)``). For every point both
measured correctly, the ratio of median times is labelled the way ``nvbench_compare`` does: the
noise of each side is its relative spread (interquartile range over median), and a difference
within the smaller of the two noises (or within ``threshold``, if larger) is ``same``; otherwise
the second recording is ``faster`` or ``slower``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from cudalab.chapter.recorded import PROVENANCE
from cudalab.core.errors import NoRecordedResults

TIME = "time_ms"


def _axes(recording: Path, chapter: str) -> dict[str, list[str]]:
    path = recording / chapter / PROVENANCE
    return json.loads(path.read_text()).get("axes", {}) if path.is_file() else {}


def _spread(frame: pd.DataFrame) -> pd.Series:
    if {f"{TIME}_q1", f"{TIME}_q3"} <= set(frame.columns):
        return (frame[f"{TIME}_q3"] - frame[f"{TIME}_q1"]) / frame[TIME]
    return pd.Series(0.0, index=frame.index)


def compare_table(a: pd.DataFrame, b: pd.DataFrame, axes: list[str], threshold: float = 0.0) -> pd.DataFrame:
    """The points of two tables with the same axes, joined on them: both medians, both relative
    spreads, the ratio b/a and the label. Points not 'ok' on either side are left out."""
    keep = []
    for frame in (a, b):
        f = frame[frame["status"].eq("ok")] if "status" in frame else frame
        f = f.assign(spread=_spread(f))[[*axes, TIME, "spread"]].dropna(subset=[TIME])
        keep.append(f.drop_duplicates(subset=axes))
    joined = keep[0].merge(keep[1], on=axes, suffixes=("_a", "_b"))
    joined["ratio_b_over_a"] = joined[f"{TIME}_b"] / joined[f"{TIME}_a"]
    noise = np.maximum(np.minimum(joined["spread_a"], joined["spread_b"]), threshold)
    diff = joined["ratio_b_over_a"] - 1
    joined["label"] = np.where(diff.abs() <= noise, "same", np.where(diff < 0, "faster", "slower"))
    return joined


def compare_recordings(
    a: Path, b: Path, chapters: list[str] | None = None, threshold: float = 0.0
) -> dict[tuple[str, str], pd.DataFrame]:
    """Every timed table the two recordings share, compared point by point: {(chapter, table): frame}."""
    if not a.is_dir() or not b.is_dir():
        raise NoRecordedResults(f"no recording at {a if not a.is_dir() else b}")
    shared = sorted({p.name for p in a.iterdir() if p.is_dir()} & {p.name for p in b.iterdir() if p.is_dir()})
    out = {}
    for chapter in chapters or shared:
        axes_a, axes_b = _axes(a, chapter), _axes(b, chapter)
        for table, axes in sorted(axes_a.items()):
            if axes_b.get(table) != axes:
                continue
            fa, fb = pd.read_csv(a / chapter / f"{table}.csv"), pd.read_csv(b / chapter / f"{table}.csv")
            if TIME not in fa or TIME not in fb:
                continue
            joined = compare_table(fa, fb, axes, threshold)
            if len(joined):
                out[(chapter, table)] = joined
    return out


def to_markdown(
    results: dict[tuple[str, str], pd.DataFrame], a_label: str, b_label: str, threshold: float = 0.0
) -> str:
    """The comparison as Markdown: a count of labels, then a table per (chapter, table)."""
    lines = [
        f"# {b_label} against {a_label}",
        "",
        f"Ratio = median time of {b_label} / median time of {a_label}; *same* where the difference is within "
        "the smaller recorded relative spread (interquartile range / median) of the two"
        + (f", or within {threshold:.1%}" if threshold else "")
        + ".",
        "",
    ]
    if not results:
        return "\n".join(lines + ["No timed table with the same axes in both recordings."]) + "\n"
    total = pd.concat([f["label"] for f in results.values()]).value_counts()
    lines += ["Points: " + ", ".join(f"{total.get(k, 0)} {k}" for k in ("faster", "same", "slower")), ""]
    for (chapter, table), f in results.items():
        axes = [
            c
            for c in f.columns
            if c not in {f"{TIME}_a", f"{TIME}_b", "spread_a", "spread_b", "ratio_b_over_a", "label"}
        ]
        lines += [
            f"## {chapter} / {table}",
            "",
            "| " + " | ".join(axes) + f" | {a_label} (ms) | {b_label} (ms) | ratio | label |",
            "|" + "---|" * len(axes) + "---:|---:|---:|---|",
        ]
        for r in f.to_dict("records"):
            lines.append(
                "| "
                + " | ".join(str(r[x]) for x in axes)
                + f" | {r[f'{TIME}_a']:.4g} | {r[f'{TIME}_b']:.4g} | {r['ratio_b_over_a']:.4f} | {r['label']} |"
            )
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"
