"""Figures for the report: seaborn, units on every axis, failures marked, sources named."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

COLOURS = sns.color_palette("colorblind", 10)
# Beyond ten kernels in one figure: the light shades of tab20, so no two lines share a colour.
_MORE_COLOURS = list(sns.color_palette("tab20", 20))[1::2]
# One colour per GPU and per kernel family throughout the report. What a source is comes from its
# label: the lab's numbers are labelled "(published, ...)", everything else was measured by us.
MEASURED, PUBLISHED = (0, 9), (1, 3, 5, 8)
# Kernel families, by a word of their name (first match wins): the same family is the same colour
# in every chapter's figures, a library reference (cuBLAS, CuPy, a copy) always grey.
BASELINE = 7  # the colour of the library baselines below
FAMILIES = (
    ("cublas", BASELINE),
    ("cupy", BASELINE),
    ("copy", BASELINE),
    ("published", 1),
    ("kslice", 5),
    ("segment", 2),
    ("row", 4),
    ("tile", 3),
    ("coalesced", 1),
    ("register", 6),
    ("shared", 4),
    ("global", 8),
    ("basic", 0),
    ("fused", 2),
    ("vecmax00", 0),
    ("vecmax01", 1),
    ("vecmax02", 2),
)


def natural_key(value) -> tuple:
    """Sort key that orders "kslices 4" before "kslices 16" (numbers by value, not as text)."""
    return tuple(
        (0, float(part), "") if re.fullmatch(r"\d+(\.\d+)?", part) else (1, 0.0, part.lower())
        for part in re.split(r"(\d+(?:\.\d+)?)", str(value))
        if part
    )


def natural_order(values: Iterable) -> list:
    """The distinct values in their natural order (numbers inside labels compared as numbers)."""
    return sorted(pd.unique(pd.Series(list(values))), key=natural_key)


def palette(values: Iterable, *, sources: bool = False) -> dict:
    """A colour for each value, the same in every figure of the report.

    ``sources``: the values name where numbers come from (a GPU measured here, or a lab's
    published numbers): measured ones are blue, published ones orange/red. Otherwise values are
    kernels: coloured by family (``FAMILIES``), the rest from the colours left, in natural order."""
    names = natural_order(values)
    if sources:
        measured = [v for v in names if "published" not in str(v)]
        published = [v for v in names if "published" in str(v)]
        return {
            **{v: COLOURS[MEASURED[i % len(MEASURED)]] for i, v in enumerate(measured)},
            **{v: COLOURS[PUBLISHED[i % len(PUBLISHED)]] for i, v in enumerate(published)},
        }
    chosen: dict = {}
    for v in names:
        family = next((c for word, c in FAMILIES if word in str(v).lower()), None)
        if family is not None and COLOURS[family] not in chosen.values():
            chosen[v] = COLOURS[family]
    # The baselines' colour (cuBLAS, CuPy, a copy) is never handed out: a figure without its
    # baseline (a fraction-of-cuBLAS panel) then colours every other kernel as the one with it.
    spare = [c for c in COLOURS if c not in chosen.values() and c != COLOURS[BASELINE]] + _MORE_COLOURS
    for v in names:
        if v not in chosen:
            chosen[v] = spare.pop(0) if spare else COLOURS[len(chosen) % len(COLOURS)]
    return chosen


def setup() -> None:
    """One look for every chapter: readable on screen and on a printed handout."""
    sns.set_theme(context="notebook", style="whitegrid", palette="colorblind")
    plt.rcParams.update(
        {"figure.figsize": (7.5, 4.2), "figure.dpi": 110, "savefig.bbox": "tight", "axes.titleweight": "bold"}
    )


def lines(
    data: pd.DataFrame,
    x: str,
    y: str,
    hue: str,
    *,
    xlabel: str,
    ylabel: str,
    title: str,
    logx: bool = False,
    logy: bool = False,
    style: str | None = None,
    ax=None,
    errorbars: tuple[str, str] | None = None,
):
    """One line per ``hue`` value; ``errorbars`` names the (low, high) columns of the spread."""
    ax = ax or plt.subplots()[1]
    ok = data[data["status"].eq("ok")] if "status" in data else data
    order = natural_order(ok[hue])
    # Labels (object or, from pandas 3, str dtype) get the report's fixed colours; numbers a scale.
    colours = None if pd.api.types.is_numeric_dtype(ok[hue]) else palette(order, sources=hue == "source")
    sns.lineplot(
        data=ok,
        x=x,
        y=y,
        hue=hue,
        style=style or hue,
        markers=True,
        dashes=False,
        ax=ax,
        hue_order=order if colours else None,
        palette=colours,
    )
    if errorbars:
        lo, hi = errorbars
        for _, grp in ok.groupby(hue):
            ax.vlines(grp[x], grp[lo], grp[hi], color="0.4", linewidth=1)
    ax.set(xlabel=xlabel, ylabel=ylabel, title=title)
    if logx:
        ax.set_xscale("log", base=2)
    if logy:
        ax.set_yscale("log")
    mark_failures(ax, data, x, y)
    place_legend(ax)
    return ax


def place_legend(ax, *, fontsize: int = 8, title: str | None = None) -> None:
    """The legend beside the axes when it has many entries, so it never covers data."""
    handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return
    if len(labels) > 4:
        ax.legend(
            handles, labels, fontsize=fontsize, title=title, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False
        )
    else:
        ax.legend(handles, labels, fontsize=fontsize, title=title, loc="best")


def shared_legend(axes, *, below, fontsize: int = 8, ncol: int = 3) -> None:
    """One legend for axes stacked over one x: every label of them once (the first axes' line
    for a label they share), under the axes ``below``, and none on the axes themselves, so that
    no legend covers a curve."""
    handles: dict[str, Any] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, handle)
        if ax.get_legend() is not None:
            ax.get_legend().remove()
    below.legend(
        list(handles.values()),
        list(handles),
        fontsize=fontsize,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.14),
        ncol=ncol,
        frameon=False,
    )


def mark_failures(ax, data: pd.DataFrame, x: str, y: str) -> None:
    """A red cross on the x axis for every point whose result was wrong: never a speedup."""
    if "status" not in data:
        return
    bad = data[data["status"].eq("wrong")]
    if len(bad):
        ax.scatter(
            bad[x],
            [ax.get_ylim()[0]] * len(bad),
            marker="x",
            color="red",
            s=80,
            zorder=5,
            label="wrong result (not counted)",
            clip_on=False,
        )


def compare_bars(data: pd.DataFrame, x: str, y: str, source: str, *, xlabel: str, ylabel: str, title: str, ax=None):
    """Bars of the same quantity from different sources (published lab vs measured here)."""
    ax = ax or plt.subplots()[1]
    sns.barplot(
        data=data,
        x=x,
        y=y,
        hue=source,
        ax=ax,
        order=natural_order(data[x]),
        hue_order=natural_order(data[source]),
        palette=palette(data[source], sources=True),
    )
    for container in ax.containers:
        ax.bar_label(container, fmt="%.1f", padding=2, fontsize=8)
    ax.set(xlabel=xlabel, ylabel=ylabel, title=title)
    ax.margins(y=0.12)
    sns.move_legend(ax, "upper left", bbox_to_anchor=(1.01, 1.0), ncol=1, title=None, fontsize=8, frameon=False)
    return ax


def bars_per_panel(
    data: pd.DataFrame, panel: str, x: str, source: str, *, xlabel: str, title: str, unit: str = ""
) -> plt.Figure:
    """One row of horizontal bars per value of ``panel`` (each source's ``x``, labelled with its
    value), each row on its own scale: for quantities of different sizes side by side, such as one
    chapter's points of different recipes (a 60 ms kernel beside a 0.1 ms one)."""
    import textwrap

    panels = list(dict.fromkeys(data[panel]))
    colours = palette(data[source], sources=True)
    fig, axes = plt.subplots(len(panels), 1, figsize=(7.5, 0.6 + 1.05 * len(panels)), squeeze=False)
    for ax, value in zip(axes[:, 0], panels, strict=True):
        rows = data[data[panel] == value]
        bars = ax.barh([str(v) for v in rows[source]], rows[x], color=[colours[v] for v in rows[source]], height=0.7)
        ax.bar_label(bars, labels=[f"{v:.3g} {unit}".strip() for v in rows[x]], padding=3, fontsize=8)
        ax.set_xlim(0, float(rows[x].max()) * 1.3 or 1.0)
        ax.invert_yaxis()
        ax.set_title(textwrap.fill(str(value), 100), fontsize=8, loc="left")
        ax.tick_params(labelsize=8)
        ax.spines[["top", "right"]].set_visible(False)
    axes[-1, 0].set_xlabel(xlabel)
    fig.suptitle(title, fontsize=10, x=0.01, ha="left")
    fig.tight_layout()
    return fig


NOT_PUBLISHED = "not published"


def is_published_column(column) -> bool:
    """A column holding a lab's numbers: named for the lab ("lab_time_s", "lab 002: ...") or a
    published source ("GeForce GTX 680 (published, lab 000 ...)")."""
    text = str(column).lower()
    return "published" in text or text.startswith("lab")


LONG_WORD = 16  # characters: a longer word in a text column may break after _ or + in print (``styled``)


def _longest_word(column: pd.Series) -> int:
    """The longest run without a space among a text column's values (0 for a numeric column)."""
    if pd.api.types.is_numeric_dtype(column) or not len(column):
        return 0
    words = column.dropna().astype(str).str.split().explode().dropna()
    return int(words.str.len().max()) if len(words) else 0


def _with_breaks(value) -> str:
    """``value`` as HTML text where a line may break after each _ or + (a long identifier)."""
    import html

    return html.escape(str(value)).replace("_", "_<wbr>").replace("+", "+<wbr>")


def styled(
    frame: pd.DataFrame,
    formats=None,
    *,
    caption: str | None = None,
    index: bool = False,
    whole_header_words: bool = False,
    small_print: bool = False,
):
    """A table as the report shows it: ``formats`` (one format, or a dict by column) applied, a
    missing lab number read as "not published" and any other gap as "–", never ``NaN``.

    In print, headers may break anywhere so that a wide table keeps every column on the page;
    ``whole_header_words`` keeps each header word whole, for a table whose headers are short
    words that fit (the report's CSS class ``cudalab-words``); ``small_print``, a smaller type and
    whole header words, for a table of many columns that would not fit otherwise (``cudalab-wide``). In a text column with a word longer
    than LONG_WORD characters (a kernel name: update_clusters_sum_shared), a line may also break
    after each _ or + (``<wbr>``: nothing is added to the text a reader copies): such a word sets
    its column's narrowest width, and a few of them push the last columns off the page."""
    st = frame.style
    classes = (["cudalab-words"] if whole_header_words else []) + (["cudalab-wide"] if small_print else [])
    if classes:
        st = st.set_table_attributes(f'class="{" ".join(classes)}"')
    for column in frame.columns:
        fmt = formats.get(column) if isinstance(formats, dict) else formats
        if fmt is None and _longest_word(frame[column]) > LONG_WORD:
            fmt = _with_breaks
        st = st.format(fmt, subset=[column], na_rep=NOT_PUBLISHED if is_published_column(column) else "–")
    if not index:
        st = st.hide(axis="index")
    return st.set_caption(caption) if caption else st


def size(nbytes: float) -> str:
    """A byte count in binary units: 512 B, 48 KiB, 256 MiB, 1.5 GiB."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(nbytes) >= scale:
            return f"{nbytes / scale:.3g} {unit}"
    return f"{nbytes:.0f} B"


def roofline(
    points: pd.DataFrame,
    *,
    memory: dict[str, float],
    compute: dict[str, float] | None = None,
    ops: str = "operations",
    title: str = "",
    ax=None,
):
    """A roofline: each kernel placed by its arithmetic intensity (``intensity``, ops per byte of
    its bytes model) and achieved rate (``ops_per_s``), under the ceilings measured in the same run:
    ``memory`` roofs (bytes/s, slanted: intensity x bandwidth) and ``compute`` roofs (ops/s, flat).

    ``points`` needs ``label``, ``intensity`` and ``ops_per_s``; a ``status`` other than "ok" is
    left out (a wrong result is never placed). Kernels take their family's colour."""
    import numpy as np

    ax = ax or plt.subplots(figsize=(8, 4.8))[1]
    ok = points[points["status"].eq("ok")] if "status" in points else points
    ok = ok[(ok["intensity"] > 0) & (ok["ops_per_s"] > 0)]
    compute = compute or {}
    lo = (
        min([ok["intensity"].min() / 4] + [c / m / 8 for c in compute.values() for m in memory.values()])
        if len(ok)
        else 0.01
    )
    hi = (
        max([ok["intensity"].max() * 4] + [c / m * 8 for c in compute.values() for m in memory.values()])
        if len(ok)
        else 100
    )
    x = np.logspace(np.log10(lo), np.log10(hi), 200)
    top = max(compute.values()) if compute else np.inf
    for i, (name, bw) in enumerate(memory.items()):
        ax.plot(
            x,
            np.minimum(x * bw, top),
            color="black",
            linestyle=["-", "--", ":"][i % 3],
            linewidth=1.4,
            label=f"{name}: {bw / 1e9:,.0f} GB/s",
        )
    for i, (name, rate) in enumerate(compute.items()):
        ax.axhline(
            rate,
            color="0.35",
            linestyle=["-", "--", ":"][i % 3],
            linewidth=1.0,
            label=f"{name}: {rate / 1e12:,.2f} T{ops}/s",
        )
    colours = palette(ok["label"])
    named: set[str] = set()  # a kernel placed at several sizes is named once in the legend
    for r in ok.itertuples():
        ax.scatter(
            r.intensity,
            r.ops_per_s,
            s=55,
            color=colours[r.label],
            edgecolor="black",
            linewidth=0.5,
            zorder=5,
            label="_nolegend_" if r.label in named else r.label,
        )
        named.add(r.label)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    rates = list(ok["ops_per_s"]) + list(compute.values())
    if rates:  # every roof and point in view (a flat roof does not widen the axis by itself)
        ax.set_ylim(min(rates) / 3, max(rates) * 2.5)
    ax.set_xlim(lo, hi)
    ax.set(
        xlabel=f"arithmetic intensity ({ops} per byte, from the bytes model)",
        ylabel=f"achieved {ops}/s",
        title=title or "Roofline",
    )
    place_legend(ax, fontsize=7)
    return ax


def roofline_table(
    points: pd.DataFrame, *, memory: dict[str, float], compute: dict[str, float] | None = None
) -> pd.DataFrame:
    """Each kernel's roof at its intensity (the lower of bandwidth x intensity and the compute
    ceiling) and the fraction of it that the kernel reached, with the roof that binds."""
    ok = points[points["status"].eq("ok")] if "status" in points else points
    rows = []
    for r in ok.itertuples():
        roofs = {name: r.intensity * bw for name, bw in memory.items()} | dict(compute or {})
        binding = min(roofs, key=roofs.get)
        fraction = r.ops_per_s / roofs[binding]
        rows.append(
            {
                "kernel": r.label,
                "intensity_ops_per_B": r.intensity,
                "achieved_ops_per_s": r.ops_per_s,
                "roof_ops_per_s": roofs[binding],
                "fraction_of_roof": fraction,
                "bound_by": binding
                if fraction <= 1
                else f"{binding}; above it: caches serve traffic the bytes model counts",
            }
        )
    return pd.DataFrame(rows)


def roofline_report(
    points: pd.DataFrame,
    *,
    memory: dict[str, float],
    compute: dict[str, float] | None = None,
    ops: str = "operations",
    title: str = "",
    caption: str = "",
):
    """A chapter's roofline section: the figure, then the table of each kernel's roof and the
    fraction of it reached. Without a memory roof (chapter 00 was not part of the run) it says
    so instead of drawing half a roofline."""
    from IPython.display import Markdown, display

    if not memory:
        display(Markdown("*No roofline: the copy ceiling (chapter 00) was not measured in this run.*"))
        return None
    roofline(points, memory=memory, compute=compute, ops=ops, title=title)
    plt.show()
    rate = lambda v: f"{v / 1e12:.2f} T" if v >= 1e11 else f"{v / 1e9:.1f} G"  # noqa: E731
    return styled(
        roofline_table(points, memory=memory, compute=compute),
        {
            "intensity_ops_per_B": "{:.3g}",
            "achieved_ops_per_s": rate,
            "roof_ops_per_s": rate,
            "fraction_of_roof": "{:.0%}",
        },
        caption=caption or f"each kernel's roof at its intensity ({ops}/s) and the fraction it reaches",
    )


def bytes_axis(ax, axis: str = "x") -> None:
    """Label a log2 byte axis in KiB/MiB/GiB rather than raw byte counts."""
    from matplotlib.ticker import FuncFormatter

    getattr(ax, f"{axis}axis").set_major_formatter(FuncFormatter(lambda v, _: size(v)))


def _three_digits(x: float) -> str:
    """x to three significant digits, trailing zeros kept (36.0, not 36, beside 36.1), never in
    exponent form (999.7 reads 1000)."""
    text = f"{x:#.3g}"
    return f"{x:.0f}" if "e" in text else text.rstrip(".")


def duration(ms: float) -> str:
    """A time in the unit that reads best: 850 us, 12.3 ms, 36.0 ms, 4.56 s, 3.20 min."""
    if ms < 1:
        return f"{ms * 1e3:.0f} us"
    if ms < 1e3:
        return f"{_three_digits(ms)} ms"
    if ms < 120e3:
        return f"{_three_digits(ms / 1e3)} s"
    return f"{_three_digits(ms / 60e3)} min"
