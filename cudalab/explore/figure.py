"""Drawing what the explorer selected, in the report's figure style.

One line per colour value and source (this run solid, a recording dashed, a lab's published
numbers as large open markers, the report's measured-blue/published-orange when the colour is the
source), one panel per facet value, the spread as error bars where the table has it. A row that
was wrong or skipped is never drawn as a time: it is marked on the x axis (a red cross, a grey
triangle) and listed with its reason in the rows table. "Your measurements" (points measured
from the explorer) are drawn as large marked points over the curves.

Built on a bare ``matplotlib.figure.Figure`` (no pyplot state, nothing shown by the notebook's
inline backend) and returned as a Figure, or PNG bytes for the explorer's image.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogFormatter

from cudalab.core import plots
from cudalab.explore.alike import Aligned, align
from cudalab.explore.data import OK, PUBLISHED, RUN, YOURS, TableData, metric_label, select

SOURCE = "source"  # colour or facet by where the numbers come from
NONE = ""  # no colour or facet
# Each source's line style and marker: this run solid with dots, each recording its own dashes and
# marker, a lab's published numbers large open diamonds without a line.
RECORDING_STYLES = (("--", "s"), (":", "^"), ("-.", "v"), ((0, (5, 1)), "P"), ((0, (1, 3)), "X"))
MAX_FACETS = 6
MAX_LEGEND_COLOURS = 24


@dataclass(frozen=True)
class Style:
    linestyle: Any
    marker: str
    published: bool = False


def source_styles(data: TableData) -> dict[str, Style]:
    """A line style and marker per source, fixed by the source's place in the table's sources."""
    styles, recorded = {}, 0
    for src in data.sources:
        if src.kind == RUN:
            styles[src.label] = Style("-", "o")
        elif src.kind == PUBLISHED:
            styles[src.label] = Style("none", "D", published=True)
        elif src.kind == YOURS and src.label.startswith(YOURS):
            styles[src.label] = Style((0, (6, 2)), "*")  # the student's series: long dashes, stars
        else:
            styles[src.label] = Style(*RECORDING_STYLES[recorded % len(RECORDING_STYLES)])
            recorded += 1
    return styles


@dataclass
class Selection:
    """What to draw: the explorer's controls, as values."""

    metric: str
    x: str
    colour: str = NONE  # an axis, SOURCE, or NONE
    facet: str = NONE
    filters: dict[str, Any] = field(default_factory=dict)  # axis -> values, or (low, high)
    overlays: list[str] = field(default_factory=list)  # source labels set beside this run
    logx: bool = False
    logy: bool = False


def default_selection(data: TableData, view: Any = None) -> Selection:
    """A first view: the chapter's declared ``view`` (``chapter.declarations.View``) where it is of
    this table and names its columns; else the first metric (a time where there is one) over the
    numeric axis with the most values, coloured by the first other axis; log scales where the
    values span decades."""
    declared = _declared(data, view)
    if declared is not None:
        return declared
    numeric = data.numeric_axes()
    x = max(numeric, key=lambda a: len(data.values(a))) if numeric else data.axes[0]
    others = [a for a in data.axes if a != x]
    colour = next((a for a in others if a in data.categorical_axes()), others[0] if others else SOURCE)
    metric = next(iter(data.metrics))
    return Selection(
        metric=metric,
        x=x,
        colour=colour,
        overlays=[s.label for s in data.sources if s.kind in (PUBLISHED, YOURS)],
        logx=_spans_decades(data.frame[x]),
        logy=_spans_decades(data.frame[metric]),
    )


def _declared(data: TableData, view: Any) -> Selection | None:
    """The declared view as a Selection, where it is of ``data``'s table and every column it
    names is there (a recording from before a column existed falls back to the default)."""
    if view is None or view.table != data.table:
        return None
    choosable = data.choosable()
    named = [view.x, *(c for c in (view.colour, view.facet) if c and c != SOURCE), *view.filters]
    if view.y not in data.metrics or not all(c in choosable for c in named):
        return None
    filters = {}
    for column, wanted in view.filters.items():
        values = data.values(column)
        filters[column] = [v for v in values if any(_same_value(v, w) for w in wanted)] or values
    return Selection(
        metric=view.y,
        x=view.x,
        colour=view.colour,
        facet=view.facet,
        filters=filters,
        overlays=[s.label for s in data.sources if s.kind in (PUBLISHED, YOURS)],
        logx=_spans_decades(data.frame[view.x]) if view.logx is None else view.logx,
        logy=_spans_decades(data.frame[view.y]) if view.logy is None else view.logy,
    )


def _same_value(value: Any, wanted: Any) -> bool:
    """A table's value is a declared one: the same text, or the same number (8.0 is 8; True is True)."""
    if isinstance(value, bool) or isinstance(wanted, bool):
        return str(value) == str(wanted)
    try:
        return float(value) == float(wanted)
    except (TypeError, ValueError):
        return str(value) == str(wanted)


def _spans_decades(series: pd.Series) -> bool:
    values = pd.to_numeric(series, errors="coerce").dropna()
    values = values[values > 0]
    return len(values) > 1 and values.max() / values.min() >= 30


def _positions(values: pd.Series, order: list) -> pd.Series:
    """Where a categorical x value sits: its place in natural order."""
    where = {v: i for i, v in enumerate(order)}
    return values.map(where)


def selected(data: TableData, sel: Selection) -> tuple[pd.DataFrame, Aligned]:
    """The rows the selection picks (``select``), and those of them drawn like with like (``align``)."""
    rows = select(data, filters=sel.filters, sources=sel.overlays)
    return rows, align(rows, data.axes, sel.metric, sel.x, sel.colour, sel.facet, MAX_FACETS)


def draw(
    data: TableData, sel: Selection, *, points: pd.DataFrame | None = None, aligned: Aligned | None = None
) -> Figure:
    """The selection as a Figure: one panel per facet value, one line per colour value and source.
    ``aligned``: the selection's rows as ``selected`` aligned them, where the caller has them."""
    aligned = aligned or selected(data, sel)[1]
    rows, facet_axis = aligned.rows, aligned.facet
    if facet_axis != sel.facet:
        sel = replace(sel, facet=facet_axis)
    facets = plots.natural_order(rows[sel.facet].dropna()) if sel.facet else [None]
    facets = facets[:MAX_FACETS] or [None]
    cols = min(3, len(facets))
    nrows = math.ceil(len(facets) / cols)
    fig = Figure(
        figsize=(8.5 if cols == 1 else 4.2 * cols + 2, 4.2 if nrows == 1 else 3.4 * nrows), dpi=90, layout="constrained"
    )
    axes = fig.subplots(nrows, cols, squeeze=False, sharey=True).ravel()
    numeric_x = data.is_numeric(sel.x)
    order = None if numeric_x else plots.natural_order(rows[sel.x].dropna())
    colour_values = plots.natural_order(rows[sel.colour].dropna()) if sel.colour else []
    colours = plots.palette(colour_values, sources=sel.colour == SOURCE) if colour_values else {}
    label = data.metrics.get(sel.metric, sel.metric)
    styles = source_styles(data)
    for ax, facet in zip(axes, facets):
        part = rows if facet is None else rows[rows[sel.facet].eq(facet)]
        _draw_panel(ax, part, sel, order, colours, styles)
        _mark_not_ok(ax, part, sel, order)
        if points is not None and len(points) and sel.metric in points and sel.x in points:
            mine = points if facet is None or sel.facet not in points else points[points[sel.facet].eq(facet)]
            _draw_points(ax, mine, sel, order)
        ax.set_title(f"{sel.facet} = {facet}" if facet is not None else "", fontsize=10)
        ax.set_xlabel(axis_label(sel.x))
        if sel.logx and numeric_x:
            ax.set_xscale("log", base=2)
            ax.xaxis.set_major_formatter(_PLAIN)
        if sel.logy:
            ax.set_yscale("log")
            ax.yaxis.set_major_formatter(PlainLogFormatter())
            ax.yaxis.set_minor_formatter(PlainLogFormatter(labelOnlyBase=False))
        if order is not None:
            ax.set_xticks(range(len(order)), [str(v) for v in order], rotation=30 if len(order) > 4 else 0, ha="right")
    for ax in axes[len(facets) :]:
        ax.set_visible(False)
    axes[0].set_ylabel(label)
    fig.suptitle(_title(data, sel, rows, aligned), fontsize=11, fontweight="bold")
    handles, labels = _legend(rows, sel, colours, styles)
    for ax in axes[: len(facets)]:  # the markers of wrong, skipped and your points
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    if handles:  # right of the first row's last panel, under the title (a figure legend would reach up beside it)
        anchor = axes[min(cols, len(facets)) - 1]
        anchor.legend(
            handles, labels, fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0, frameon=False
        )
    return fig


def legend_texts(fig: Figure) -> list[str]:
    """The entries of the figure's legend (what a test reads)."""
    legends = [*fig.legends, *(ax.get_legend() for ax in fig.axes if ax.get_legend() is not None)]
    return [t.get_text() for legend in legends for t in legend.get_texts()]


def axis_label(column: str) -> str:
    """An axis's label: its name, with its unit where the name states one ("transfer bytes (bytes)")."""
    return metric_label(column)


def _plain(value: float, pos=None) -> str:
    """A tick as a plain number: 8192, 0.01, 30,000; a power of two from 2^16 up in binary units
    (65536 reads "64Ki", 4194304 "4Mi"), never "1.04858e+06"."""
    if value == int(value) and abs(value) >= 1e4:
        whole = int(value)
        if whole >= 2**16 and whole & (whole - 1) == 0:
            for unit, size in (("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
                if whole >= size:
                    return f"{whole // size}{unit}"
        return f"{whole:,}"
    return f"{value:g}"


_PLAIN = FuncFormatter(_plain)


class PlainLogFormatter(LogFormatter):
    """Log-axis labels as plain numbers ("3", "40", "1000"), not "3×10⁰": speedups and times read
    as numbers; the minor ticks are labelled where the axis spans less than a decade or so."""

    def _num_to_string(self, x, vmin, vmax):
        return _plain(x)


def _legend(rows: pd.DataFrame, sel: Selection, colours: dict, styles: dict[str, Style]) -> tuple[list, list]:
    """One entry per colour value, then one per source (its line style and marker, in grey)."""
    from matplotlib.lines import Line2D

    handles, labels = [], []
    drawn = rows[rows[sel.metric].notna() | ~rows["status"].eq(OK)]  # a source with nothing to draw has no entry
    shown = [s for s in styles if s in set(drawn["source"])]
    if sel.colour and sel.colour != SOURCE:
        for value in sorted(colours, key=plots.natural_key)[:MAX_LEGEND_COLOURS]:
            handles.append(Line2D([], [], color=colours[value], marker="o", linestyle="-"))
            labels.append(str(value))
    for source in shown:
        st = styles[source]
        colour = colours.get(source, "0.35") if sel.colour == SOURCE else "0.35"
        handles.append(
            Line2D(
                [], [], color=colour, linestyle=st.linestyle, marker=st.marker, mfc="none" if st.published else colour
            )
        )
        labels.append(source)
    return handles, labels


def _title(data: TableData, sel: Selection, rows: pd.DataFrame, aligned: Aligned) -> str:
    """The table and metric; the axes folded into each point (a median over the same values at
    every point: ``align`` saw to that), named with their values; what ``align`` did."""
    measured = rows[~rows["kind"].eq(PUBLISHED)]
    folded = [a for a in aligned.folded if a != sel.facet and measured[a].nunique() > 1]
    over = "; ".join(f"{a} = {', '.join(str(v) for v in plots.natural_order(measured[a].dropna()))}" for a in folded)
    parts = [p for p in (f"median over {over}, the same at every point" if folded else "", aligned.note) if p]
    title = f"{data.table}: {data.metrics.get(sel.metric, sel.metric)}"
    return title + (f"\n({'; '.join(parts)})" if parts else "")


def _draw_panel(
    ax, rows: pd.DataFrame, sel: Selection, order: list | None, colours: dict, styles: dict[str, Style]
) -> None:
    ok = rows[rows["status"].eq(OK) & rows[sel.metric].notna()]
    keys = [k for k in ("kind", SOURCE, sel.colour) if k]
    keys = list(dict.fromkeys(keys))
    spread = (sel.metric + "_q1", sel.metric + "_q3")
    for key, grp in ok.groupby(keys, sort=False, dropna=False):
        key = dict(zip(keys, key if isinstance(key, tuple) else (key,)))
        kind, source = key["kind"], key[SOURCE]
        cols = [sel.metric] + [c for c in spread if c in grp]
        line = grp.groupby(sel.x, dropna=True)[cols].median().reset_index()
        # a point of this line that was not correct breaks it there: the line never bridges a wrong point
        mine = rows
        for k, v in key.items():
            mine = mine[mine[k].isna()] if pd.isna(v) else mine[mine[k].eq(v)]
        gaps = set(mine.loc[~mine["status"].eq(OK), sel.x].dropna()) - set(line[sel.x])
        if gaps:
            line = pd.concat([line, pd.DataFrame({sel.x: sorted(gaps, key=str)})], ignore_index=True)
        xs = line[sel.x] if order is None else _positions(line[sel.x], order)
        line = line.assign(_x=xs).dropna(subset=["_x"]).sort_values("_x")
        if gaps:  # only a gap between two drawn points says anything
            drawn = line.loc[line[sel.metric].notna(), "_x"]
            line = line[line[sel.metric].notna() | line["_x"].between(drawn.min(), drawn.max(), inclusive="neither")]
        colour = colours.get(key.get(sel.colour), plots.COLOURS[0]) if sel.colour else _source_colour(kind)
        st = styles[source]
        ax.plot(
            line["_x"],
            line[sel.metric],
            linestyle=st.linestyle,
            marker=st.marker,
            markersize=9 if st.published else 5,
            markerfacecolor="none" if st.published else colour,
            color=colour,
        )
        if all(c in line for c in spread) and kind != PUBLISHED:
            ax.vlines(line["_x"], line[spread[0]], line[spread[1]], color="0.4", linewidth=1)


def _source_colour(kind: str):
    return plots.COLOURS[plots.PUBLISHED[0] if kind == PUBLISHED else plots.MEASURED[0]]


def _mark_not_ok(ax, rows: pd.DataFrame, sel: Selection, order: list | None) -> None:
    """Wrong and skipped rows on the x axis: never a time (as ``plots.mark_failures``). A student's
    series has more ways to fail (timed out, crashed, a race, above the ceiling): each is a red
    cross labelled with its status."""
    mine = rows[rows["kind"].eq(YOURS)] if "kind" in rows else rows.iloc[0:0]  # a recording's own words stay its own
    others = [s for s in pd.unique(mine["status"].dropna().astype(str)) if s not in (OK, "wrong", "skipped")]
    for status, marker, colour, text in (
        ("wrong", "x", "red", "wrong result (not counted)"),
        ("skipped", "v", "0.45", "skipped (see the rows table)"),
        *((s, "x", "red", f"{s} (not counted)") for s in others),
    ):
        bad = mine if status in others else rows
        bad = bad[bad["status"].eq(status)]
        if not len(bad):
            continue
        xs = bad[sel.x] if order is None else _positions(bad[sel.x], order)
        # the panel's x range takes the marks in (a blended transform is not autoscaled): a mark
        # outside it would be drawn, unclipped, over the next panel
        ax.update_datalim([(x, 1.0) for x in pd.to_numeric(xs, errors="coerce").dropna()], updatey=False)
        ax.autoscale_view(scaley=False)
        ax.scatter(
            xs,
            [0] * len(bad),
            marker=marker,
            color=colour,
            s=60,
            zorder=5,
            label=text,
            clip_on=False,
            transform=ax.get_xaxis_transform(),
        )


def _draw_points(ax, points: pd.DataFrame, sel: Selection, order: list | None) -> None:
    """Your measurements: a large star per point measured from the explorer (a wrong one a red X)."""
    status = points["status"] if "status" in points else pd.Series(OK, index=points.index)
    good = points[status.eq(OK)]
    xs = good[sel.x] if order is None else _positions(good[sel.x], order)
    if len(good):
        ax.scatter(
            xs, good[sel.metric], marker="*", s=260, color="gold", edgecolor="black", zorder=6, label="your measurement"
        )
    bad = points[~status.eq(OK)]
    if len(bad):
        bx = bad[sel.x] if order is None else _positions(bad[sel.x], order)
        ax.scatter(
            bx,
            [0] * len(bad),
            marker="X",
            s=120,
            color="red",
            edgecolor="black",
            zorder=6,
            label="your measurement: not ok",
            transform=ax.get_xaxis_transform(),
            clip_on=False,
        )


def png(fig: Figure) -> bytes:
    """The figure as PNG bytes (the explorer's image)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight")
    return buf.getvalue()
