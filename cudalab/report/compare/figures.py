"""The comparison report's figures: each chapter's main tables with the sources overlaid.

One colour per source (GPU and profile) throughout the report (``source_colours``): recordings
take the measured colours, a lab's published numbers the published orange, as in the chapters.
Lines or markers tell a chapter's configurations apart (block shape, kernel), at most
``MAX_SERIES`` of them: the fastest at each source's largest size, named in the caption.
"""

from __future__ import annotations

import base64
import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from cudalab.chapter.declarations import Figure  # noqa: E402
from cudalab.core import plots  # noqa: E402
from cudalab.core.sweep import whole_numbers  # noqa: E402
from cudalab.report.compare.sources import Source  # noqa: E402

MAX_SERIES = 4
_RECORDING_COLOURS = (0, 4, 2, 9, 5, 7)  # blue, purple, green, sky, brown, grey: never the lab's orange
_LAB_COLOURS = (1, 8)  # the published orange, then yellow


def source_colours(sources: list[Source]) -> dict[str, tuple]:
    """The colour of each source, the same in every figure and table of the report."""
    out, recs, labs = {}, 0, 0
    for s in sources:
        if s.is_lab:
            out[s.label] = plots.COLOURS[_LAB_COLOURS[labs % len(_LAB_COLOURS)]]
            labs += 1
        else:
            out[s.label] = plots.COLOURS[_RECORDING_COLOURS[recs % len(_RECORDING_COLOURS)]]
            recs += 1
    return out


def hex_colour(rgb: tuple) -> str:
    return "#" + "".join(f"{int(round(c * 255)):02x}" for c in rgb[:3])


def _lower_is_better(column: str) -> bool:
    return column.endswith("_ms") or column.endswith("_s")


def _named(label: str, series: str | None, value) -> str:
    """A line's legend entry: its source, and its series' value (a number with the series' name:
    "block x 16", where a bare 16 would say nothing)."""
    if value is None:
        return label
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{label}: {str(series).replace('_', ' ')} {value}"
    return f"{label}: {value}"


def _frames(spec: Figure, sources: list[Source], chapter: str) -> dict[str, pd.DataFrame]:
    out = {}
    for s in sources:
        frame = s.table(chapter, spec.table)
        if frame is None and s.is_lab:  # a published table with the figure's columns
            frame = next(
                (p for p in s.published(chapter).values() if {spec.x, spec.y} <= set(p.columns)),
                None,
            )
        if frame is None or not {spec.x, spec.y} <= set(frame.columns):
            continue
        frame = frame[frame["status"].eq("ok")] if "status" in frame else frame
        frame = frame.dropna(subset=[spec.x, spec.y])
        if spec.series and spec.series not in frame:
            continue
        if spec.series:
            frame = whole_numbers(frame, [spec.series])
        if spec.best_over:
            keys = [c for c in (spec.x, spec.series) if c]
            pick = (
                frame.groupby(keys)[spec.y].idxmin if _lower_is_better(spec.y) else frame.groupby(keys)[spec.y].idxmax
            )
            frame = frame.loc[pick()]
        if len(frame):
            out[s.label] = frame.assign(source=s.label)
    return out


def _top_series(spec: Figure, frames: dict[str, pd.DataFrame]) -> list:
    """The series to draw: those every source with the series has, fastest first at each source's
    largest x, at most ``MAX_SERIES``."""
    if not spec.series:
        return []
    ranked: list = []
    for frame in frames.values():
        at = frame[frame[spec.x].eq(frame[spec.x].max())] if spec.kind == "line" else frame
        order = at.sort_values(spec.y, ascending=_lower_is_better(spec.y))[spec.series].tolist()
        ranked += [v for v in order if v not in ranked]
    shared = [v for v in ranked if sum(v in set(f[spec.series]) for f in frames.values()) >= min(2, len(frames))]
    return (shared or ranked)[:MAX_SERIES]


def draw(spec: Figure, sources: list[Source], chapter: str, colours: dict[str, tuple]) -> tuple[str, str] | None:
    """The figure as a base64 PNG and its caption, or None where fewer than two sources have its table."""
    frames = _frames(spec, sources, chapter)
    if len(frames) < 2:
        return None
    series = _top_series(spec, frames)
    data = pd.concat(frames.values(), ignore_index=True)
    if series:
        data = data[data[spec.series].isin(series)]
    fig, ax = plt.subplots(figsize=(8.5, 4.2))
    if spec.kind == "bar":
        order = plots.natural_order(data[spec.x])
        sns.barplot(
            data=data,
            x=spec.x,
            y=spec.y,
            hue="source",
            order=order,
            palette=colours,
            ax=ax,
            hue_order=[s for s in colours if s in frames],
        )
        ax.tick_params(axis="x", rotation=35, labelsize=7)
        for t in ax.get_xticklabels():
            t.set_horizontalalignment("right")
    else:
        markers = ["o", "s", "^", "D", "v", "P"]
        for label, frame in frames.items():
            f = frame[frame[spec.series].isin(series)] if series else frame
            for i, (value, grp) in enumerate(
                sorted(f.groupby(spec.series), key=lambda kv: series.index(kv[0]) if kv[0] in series else 99)
                if spec.series
                else [(None, f)]
            ):
                grp = grp.sort_values(spec.x)
                style = "--" if "published" in label else "-"
                ax.plot(
                    grp[spec.x],
                    grp[spec.y],
                    style,
                    marker=markers[i % len(markers)],
                    color=colours[label],
                    label=_named(label, spec.series, value),
                    markersize=5,
                    linewidth=1.3,
                )
        if spec.logx:
            ax.set_xscale("log", base=2)
    if spec.logy:
        ax.set_yscale("log")
    ax.set(xlabel=spec.x.replace("_", " "), ylabel=spec.ylabel, title=spec.title)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80, bbox_inches="tight")
    plt.close(fig)
    shown = (
        f"; {spec.series} shown: {', '.join(map(str, series))} (the fastest at the largest {spec.x})" if series else ""
    )
    caption = f"{spec.table}: {spec.y} over {spec.x}, a colour per source{shown}"
    return base64.b64encode(buf.getvalue()).decode(), caption
