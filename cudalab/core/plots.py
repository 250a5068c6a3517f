"""Figures for the report: seaborn, units on every axis, failures marked, sources named."""

from __future__ import annotations

from typing import Optional

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns


def setup() -> None:
    """One look for every chapter: readable on screen and on a printed handout."""
    sns.set_theme(context="notebook", style="whitegrid", palette="colorblind")
    plt.rcParams.update({"figure.figsize": (7.5, 4.2), "figure.dpi": 110, "savefig.bbox": "tight",
                         "axes.titleweight": "bold"})


def lines(data: pd.DataFrame, x: str, y: str, hue: str, *, xlabel: str, ylabel: str, title: str,
          logx: bool = False, logy: bool = False, style: Optional[str] = None, ax=None, errorbars: Optional[tuple[str, str]] = None):
    """One line per ``hue`` value; ``errorbars`` names the (low, high) columns of the spread."""
    ax = ax or plt.subplots()[1]
    ok = data[data["status"].eq("ok")] if "status" in data else data
    sns.lineplot(data=ok, x=x, y=y, hue=hue, style=style or hue, markers=True, dashes=False, ax=ax)
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
    ax.legend(fontsize=8, loc="best")
    return ax


def mark_failures(ax, data: pd.DataFrame, x: str, y: str) -> None:
    """A red cross on the x axis for every point whose result was wrong: never a speedup."""
    if "status" not in data:
        return
    bad = data[data["status"].eq("wrong")]
    if len(bad):
        ax.scatter(bad[x], [ax.get_ylim()[0]] * len(bad), marker="x", color="red", s=80, zorder=5,
                   label="wrong result (not counted)", clip_on=False)


def compare_bars(data: pd.DataFrame, x: str, y: str, source: str, *, xlabel: str, ylabel: str, title: str, ax=None):
    """Bars of the same quantity from different sources (published lab vs measured here)."""
    ax = ax or plt.subplots()[1]
    sns.barplot(data=data, x=x, y=y, hue=source, ax=ax)
    for container in ax.containers:
        ax.bar_label(container, fmt="%.1f", padding=2, fontsize=8)
    ax.set(xlabel=xlabel, ylabel=ylabel, title=title)
    ax.margins(y=0.12)
    sns.move_legend(ax, "upper left", bbox_to_anchor=(1.01, 1.0), ncol=1, title=None, fontsize=8, frameon=False)
    return ax


def duration(ms: float) -> str:
    """A time in the unit that reads best: 850 us, 12.3 ms, 4.56 s, 3.2 min."""
    if ms < 1:
        return f"{ms * 1e3:.0f} us"
    if ms < 1e3:
        return f"{ms:.3g} ms"
    if ms < 120e3:
        return f"{ms / 1e3:.3g} s"
    return f"{ms / 60e3:.3g} min"
