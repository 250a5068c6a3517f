"""Like with like: which values each drawn point of the explorer may fold.

A point of the explorer's figure is a median over the axes the figure does not show. Two series,
or two points of one, compare like with like only where they fold the same values: a run at
N = 5000 beside a recording's median of N = 8192 and 16384 compares different experiments.
``align`` keeps the values every point shares, else draws a panel per differing value, else the
values most points have, and says which it did (the figure's title, the caption under it).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from cudalab.explore.data import NOT_STATED, OK, PUBLISHED


@dataclass(frozen=True)
class Aligned:
    """The rows to draw after ``align``: ``facet`` (the one asked for, or one chosen here) and a
    ``note`` saying what was done (for the figure's title), "" where nothing was."""

    rows: pd.DataFrame
    facet: str
    note: str
    folded: tuple[str, ...] = ()  # the axes each point is a median over (after ``facet``)


def _folded_sets(rows: pd.DataFrame, keys: list[str], folded: list[str]) -> list[set]:
    """For each point of each series (``keys``: source, colour, x), the combinations of the folded
    axes its value would be a median over."""
    tuples = rows[folded].apply(tuple, axis=1) if len(rows) else pd.Series(dtype=object)
    return [set(group) for _, group in tuples.groupby([rows[k] for k in keys], dropna=False, sort=False)]


def _keep(rows: pd.DataFrame, folded: list[str], allowed: set) -> pd.Series:
    """Rows whose folded combination is allowed; a published row that does not state a folded
    axis stays (the lab did not say), as does one whose stated values are allowed."""
    combos = rows[folded].apply(tuple, axis=1)
    measured = ~rows["kind"].eq(PUBLISHED)
    allowed_by_axis = [{c[i] for c in allowed} | {NOT_STATED} for i in range(len(folded))]
    published_ok = pd.Series(
        [all(v in allowed_by_axis[i] for i, v in enumerate(c)) for c in combos], index=rows.index, dtype=bool
    )
    return (measured & combos.isin(allowed)) | (~measured & published_ok)


def _represented(rows: pd.DataFrame, axis: str, shown: set[str]) -> bool:
    """Whether a recorded ``axis`` is drawn through the shown columns: at each of their value
    combinations, in every source alike, it has one value (chapter 04's ``variant`` when x is its
    ``block_factor``, the colour its ``kernel`` and the facet ``n``). An axis that has one value
    per point but a different one in another source (this run's N = 5000 beside a recording's
    8192) is not: those points are not alike."""
    columns = [c for c in shown if c in rows and c != axis]
    if not columns or not len(rows):
        return False
    return bool(rows.groupby(columns, dropna=False)[axis].nunique(dropna=False).max() == 1)


def align(
    rows: pd.DataFrame, axes: list[str], metric: str, x: str, colour: str = "", facet: str = "", max_facets: int = 6
) -> Aligned:
    """Like with like: a drawn point is a median over the axes the figure does not show (the
    folded axes), so every point of every series must fold the same values, or the lines compare
    different experiments (a run at N = 5000 beside a recording's median of N = 8192 and 16384).

    In each panel, only the combinations of folded values that every point of every series has
    are kept (the shared points). Where the series share none, the figure is faceted by the
    folded axis that differs (at most ``max_facets`` panels, each then aligned again), else it
    keeps the combination most points have and says that the others were left out. Published
    rows that do not state a folded axis stay. ``colour`` and ``facet`` are axis names, "" or
    "source"."""
    shown = {x, colour, facet} - {"", "source"}
    drawable = rows[rows["status"].eq(OK) & rows[metric].notna() & ~rows["kind"].eq(PUBLISHED)]
    folded = [a for a in axes if a not in shown and drawable[a].nunique() > 1 and not _represented(drawable, a, shown)]
    if not folded:
        return Aligned(rows, facet, "")
    folds = tuple(folded)
    keys = ["source", *([colour] if colour and colour != "source" else []), x]
    panel_keys = [facet] if facet and facet != "source" else []

    def shared_in(part: pd.DataFrame) -> set:
        sets = _folded_sets(part, keys, folded)
        return set.intersection(*sets) if sets else set()

    def panels(frame: pd.DataFrame) -> list[pd.DataFrame]:
        return [frame] if not panel_keys else [g for _, g in frame.groupby(panel_keys, sort=False)]

    def panel_of(part: pd.DataFrame) -> tuple:
        return tuple(part[panel_keys].iloc[0]) if panel_keys else ()

    allowed_by_panel = {panel_of(p): shared_in(p) for p in panels(drawable)}
    if all(allowed_by_panel.values()):
        keep = pd.Series(True, index=rows.index)
        for part in panels(rows):
            allowed = allowed_by_panel.get(panel_of(part))
            if allowed is not None:
                keep.loc[part.index] = _keep(part, folded, allowed)
        if keep.loc[drawable.index].all():
            return Aligned(rows, facet, "", folds)
        everywhere = set.intersection(*allowed_by_panel.values())
        if len(folded) == 1 and len(everywhere) == 1:
            (only,) = everywhere
            note = f"at {folded[0]} = {only[0]}, the {folded[0]} every series has"
        else:
            note = "at the " + ", ".join(folded) + " values every series has"
        return Aligned(rows[keep], facet, note, folds)
    if not panel_keys:  # no panels yet: one per value of the folded axis that differs
        for axis in folded:
            if 1 < drawable[axis].nunique() <= max_facets:
                faceted = align(rows, axes, metric, x, colour, axis, max_facets)
                if faceted.facet == axis and not faceted.note.startswith("only"):
                    reason = f"panels by {axis}: the series were measured at different {axis}"
                    note = reason + (f"; {faceted.note}" if faceted.note else "")
                    return Aligned(faceted.rows, axis, note, faceted.folded)
    sets = _folded_sets(drawable, keys, folded)
    counts: dict = {}
    for s in sets:
        for combo in s:
            counts[combo] = counts.get(combo, 0) + 1
    best = max(counts, key=lambda c: counts[c])
    text = ", ".join(f"{a} = {v}" for a, v in zip(folded, best))
    return Aligned(
        rows[_keep(rows, folded, {best})],
        facet,
        f"only {text}: the series share no {', '.join(folded)}; others left out",
        folds,
    )
