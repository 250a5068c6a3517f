"""A student's file across a chapter's whole sweep (``--kernels``, issue 67): besides the few graded
points, every point of the table the chapter's point recipe measures (``PointRecipe.table``, rows
keyed by the recipe's axes and choices) that the chapter measured, that builds from the student's
file and that the file builds for (its family's kit lists the point's launches: ``fw_blocked.cu``
at BF 128 needs 128 KiB of shared memory, so on a GPU with less that is no point of its series).

Each such point is measured as a graded point is (``section.measured_together``: the reference file and the
student's, each in a process of its own, every timed call on an input of its own, the answers
judged outside it on the last timed input and one fresh input, a harsh one of the point's size
(``checked_lightly``); the graded points alone get every check input and the race checks), and drawn in
the chapter's declared figures of that table beside the reference, as its own series: "yours" and
the first 8 hex digits of the file's sha256. A point that is not correct is a red cross at the foot
of the axes, never a time.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from cudalab.grading import plan
from cudalab.grading import results as R

TABLE = "yours_sweep"  # <chapter data>/yours_sweep.csv


def label(sha256: str) -> str:
    """A student's series in a legend: "yours" and the first 8 hex digits of the file's sha256."""
    return f"{R.YOURS} {sha256[:8]}"


def _plain(value: Any) -> Any:
    """A table cell as a point's value: numpy scalars as Python's, whole floats as int."""
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def point_keys(task: plan.ChapterTask, table: pd.DataFrame) -> list[str]:
    """The columns of the recipe's table that make a point: its axes and choices the table holds."""
    recipe = plan.recipe_of(task.yours.recipe)
    return [k for k in (*recipe.axes, *recipe.kernel_choices) if k in table]


def point_launches(yours: Any, point: dict[str, Any], cc: str) -> list:
    """The ``core.launch.Launch``es one point of a chapter's ``yours`` declaration makes on the GPU of
    compute capability ``cc``, as its family's checks kit builds them (``labs.checks.Checks.launches``)
    or, without one, its point recipe (a ``launches(point)`` of its own); empty where they cannot be
    known (then the file builds with its defaults)."""
    from cudalab.core.errors import CudalabError
    from cudalab.grading.trials import kit_of

    kit = kit_of(yours.checks.kit) if yours.checks is not None else None
    own = getattr(plan.recipe_of(yours.recipe), "launches", None)
    if kit is not None and kit.launches is not None:
        make = kit.launches
    elif callable(own):
        make = lambda p, _cc: own(p)  # noqa: E731
    else:
        return []
    try:
        return list(make(dict(point), cc))
    except (CudalabError, KeyError, ValueError, TypeError):
        return []  # a point its family cannot build: the sweep would skip it, saying why


def builds_for(yours: Any, cc: str):
    """Whether a point builds from its file: where the family's kit lists a point's launches, a
    point with none is one the file does not build for (``fw_blocked.cu`` at BF 128); elsewhere
    every point of the sweep is taken."""
    from cudalab.grading.trials import kit_of

    kit = kit_of(yours.checks.kit) if yours.checks is not None else None
    if kit is None or kit.launches is None:
        return None
    return lambda point: bool(point_launches(yours, point, cc))


def sweep_task(
    task: plan.ChapterTask, table: pd.DataFrame, files: set[str], builds: Any = None
) -> plan.ChapterTask | None:
    """``task`` (one ``yours`` group) over every point of the chapter's measured ``table`` that
    builds from one of ``files`` and that ``builds(point)`` allows (the file builds for it), in the
    table's order; None where there is none."""
    recipe = plan.recipe_of(task.yours.recipe)
    keys = point_keys(task, table)
    if not keys:
        return None
    if "status" in table:  # a point the chapter skipped (over its time budget, refused) is not in its figures
        table = table[table["status"].eq(R.OK)]
    points = []
    for values in table[keys].dropna().drop_duplicates().itertuples(index=False):
        point = {k: _plain(v) for k, v in zip(keys, values, strict=True)}
        if any(str(point[k]) not in map(str, choices) for k, choices in recipe.kernel_choices.items() if k in point):
            continue  # a row of another kind in the same table (the ladder's other kernels)
        file = recipe.kernel_file_for(point)
        if file in files and (builds is None or builds(point)):
            points.append((point, file))
    return task.keeping(tuple(points)) if points else None


def recorded_table(chapter: str, table: str, profile: str, gpu_name: str | None, results: Path | None = None):
    """``--grade --sweep``: the chapter's ``table`` as the recording of ``profile`` holds it (that of
    this GPU where there is one, else the profile's newest), from which the sweep's points are
    taken (a grading run measures no chapter); None where the profile has no recording of it."""
    from cudalab.chapter import recorded
    from cudalab.core.errors import NoRecordedResults
    from cudalab.core.paths import RESULTS_DIR

    results = results or RESULTS_DIR
    found = None
    for gpu in (gpu_name, None) if gpu_name else (None,):
        try:
            found, _ = recorded.find(profile, results, gpu=gpu)
            break
        except NoRecordedResults:
            continue
    path = found.path / chapter / f"{table}.csv" if found is not None else None
    return pd.read_csv(path) if path is not None and path.is_file() else None


def with_the_sweep(task: plan.ChapterTask, table: pd.DataFrame | None, cc: str) -> plan.ChapterTask:
    """``task`` (a submission's graded points) followed by the other points of the chapter's sweep
    in ``table`` that build from its files on the GPU of ``cc`` (``--grade --sweep``); ``task``
    itself where there are none. Every point is then checked as a graded one."""
    if table is None:
        return task
    whole = sweep_task(task, table, set(task.files), builds_for(task.yours, cc))
    if whole is None:
        return task
    done = {plan.point_label(p) for p, _ in task.points}
    return task.keeping(task.points + tuple((p, f) for p, f in whole.points if plan.point_label(p) not in done))


def checked_lightly(task: plan.ChapterTask) -> plan.ChapterTask:
    """``task`` as a sweep point is checked, not a graded one (those get every check input the
    chapter declares, a fresh input of the timed kind, and the race checks): on its last timed
    input and one fresh input, the first of the chapter's harsh check inputs drawn at the point's
    own size. Where none is drawn at the point's size, the fresh input is of the timed kind, beside
    the first harsh input at the size it names. The timed kind alone can pass a wrong kernel: the
    labs' GenMatrix graphs have so many zero-weight edges that a Floyd-Warshall that skips a pivot
    at one blocking factor still finds every distance on them. The worker solves these and no
    others (the request's ``checks``): at n = 16384 each is a 1 GiB answer."""
    checks = task.yours.checks
    if checks is None or not checks.inputs:
        return task
    at_the_point = [c for c in checks.inputs if c.n is None]
    kept = tuple((at_the_point or list(checks.inputs))[:1])  # else the first, at the size it names
    lighter = checks.model_copy(update={"inputs": kept, "fresh": not at_the_point})
    yours = task.yours.model_copy(update={"checks": lighter})
    return plan.ChapterTask(task.chapter, yours, task.points, task.group)


def as_table(measured: pd.DataFrame, task: plan.ChapterTask, sha256: dict[str, str]) -> pd.DataFrame:
    """``section.measured_together``'s rows (a row per point and source) with each point's keys as columns,
    the table's axes the chapter says a series point stands for (``Yours.series_axes``) and
    ``series``: "reference" or the student's label (``label``) for the file at that point."""
    by_label = {plan.point_label(p): p for p, _ in task.points}
    rows = []
    for _, row in measured.iterrows():
        point = by_label.get(str(row["point"]), {})
        mine = row["source"] == R.YOURS
        rows.append(
            {
                **task.yours.series_axes,
                **point,
                **row.to_dict(),
                "series": label(sha256.get(str(row["file"]), "")) if mine else R.REFERENCE,
            }
        )
    return pd.DataFrame(rows)


def draw(
    frame: pd.DataFrame,
    x: str,
    y: str,
    *,
    title: str,
    ylabel: str,
    logx: bool,
    logy: bool,
    by: list[str],
    ceiling: tuple[float, str] | None = None,
):
    """One declared figure over the sweep: a line per source and value of ``by`` (the other keys
    of a point), the student's dashed; a point that is not correct a red cross at the foot of the
    axes, labelled with its status, never a time; ``ceiling`` (value, what it is) a dotted line
    across. Returns the figure."""
    import matplotlib.pyplot as plt
    import matplotlib.transforms as transforms

    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    good = frame[frame["status"].eq(R.OK) & frame[y].notna()] if y in frame else frame.iloc[0:0]
    groups = ["series", *[b for b in by if b != x and b in frame]]
    for key, part in good.groupby(groups, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        name = ", ".join(str(k) for k in key)
        mine = str(key[0]) != R.REFERENCE
        part = part.sort_values(x)
        ax.plot(part[x], part[y], marker="o", linestyle="--" if mine else "-", linewidth=2 if mine else 1.2, label=name)
    bad = frame[frame["series"].ne(R.REFERENCE) & frame["status"].ne(R.OK)]
    if len(bad):
        foot = transforms.blended_transform_factory(ax.transData, ax.transAxes)
        for status, part in bad.groupby("status", sort=False):
            ax.scatter(part[x], [0.03] * len(part), transform=foot, marker="x", s=90, color="#c00", zorder=5,
                       label=f"yours: {status} (no time)", clip_on=False)  # fmt: skip
    if ceiling is not None:
        ax.axhline(ceiling[0], color="black", linestyle=":", linewidth=1.2, label=ceiling[1])
    ax.set_xlabel(x.replace("_", " "))
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    if logx:
        ax.set_xscale("log", base=2)
    if logy:
        ax.set_yscale("log")
    ax.legend(fontsize=7, ncol=2, loc="best")
    fig.tight_layout()
    return fig


def draw_bars(
    frame: pd.DataFrame,
    x: str,
    y: str,
    *,
    title: str,
    ylabel: str,
    logy: bool,
    by: list[str],
    order: Sequence[Any] | None = None,
):
    """One declared bar figure over the sweep (a ladder: ``x`` a step's name): a bar per source at
    each ``x`` value the student's series holds, in ``order`` (the recipe's, where it lists them)
    else the table's, the student's hatched; a point that is not correct a red cross at the foot of
    its place, labelled with its status, never a bar. Where the point's other keys (``by``: its n)
    take several values, the bars are those of the value most of the student's points have (the
    table's; a graded point at another n is in the section's table, not beside bars of another
    size), named in the legend. Returns the figure."""
    import matplotlib.pyplot as plt
    import matplotlib.transforms as transforms
    import numpy as np

    frame = frame.dropna(subset=[x])
    other = [b for b in by if b != x and b in frame]
    mine = frame[frame["series"].ne(R.REFERENCE)]
    if other and len(mine):
        where = frame[other].astype(str).agg(", ".join, axis=1)
        frame = frame[where.eq(where[mine.index].value_counts().index[0])]
        mine = frame[frame["series"].ne(R.REFERENCE)]
    present = list(dict.fromkeys(mine[x])) or list(dict.fromkeys(frame[x]))
    steps = [v for v in order if v in present] + [v for v in present if v not in order] if order else present
    frame = frame[frame[x].isin(steps)]
    names = sorted(dict.fromkeys(frame["series"]), key=lambda s: str(s) != R.REFERENCE)  # the reference first
    width = 0.8 / max(1, len(names))
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    foot = transforms.blended_transform_factory(ax.transData, ax.transAxes)
    at_n = (", " + ", ".join(str(frame[o].iloc[0]) for o in other)) if other and len(frame) else ""
    for i, name in enumerate(names):
        part = frame[frame["series"].eq(name)]
        at = {step: j + (i - (len(names) - 1) / 2) * width for j, step in enumerate(steps)}
        good = part[part["status"].eq(R.OK) & part[y].notna()]
        yours = str(name) != R.REFERENCE
        ax.bar([at[v] for v in good[x]], good[y], width=width, label=f"{name}{at_n}", hatch="//" if yours else None,
               edgecolor="black", linewidth=0.6)  # fmt: skip
        for status, bad in part[part["status"].ne(R.OK)].groupby("status", sort=False) if yours else ():
            ax.scatter([at[v] for v in bad[x]], [0.03] * len(bad), transform=foot, marker="x", s=90, color="#c00",
                       zorder=5, clip_on=False, label=f"yours: {status} (no time)")  # fmt: skip
    ax.set_xticks(np.arange(len(steps)), [str(v) for v in steps], rotation=15, ha="right", fontsize=8)
    ax.set_xlabel(x.replace("_", " "))
    ax.set_title(title)
    shown = frame[frame["status"].eq(R.OK)][y].dropna()
    logy = logy and len(shown) > 0 and shown.max() > 10 * shown.min()  # log only where the steps span a decade:
    if logy:  # bars on a log axis cut at the shortest read as ratios no one meant
        ax.set_yscale("log")
    ax.set_ylabel(ylabel if logy else ylabel.replace(", log)", ")"))
    ax.legend(fontsize=7, ncol=2, loc="best")
    fig.tight_layout()
    return fig


def draw_declared(frame: pd.DataFrame, spec: Any, by: list[str], order: Sequence[Any] | None = None, **kw: Any):
    """The chapter's declared figure ``spec`` (``declarations.Figure``) over the sweep: its lines
    (``draw``) or its bars (``draw_bars``, its steps in ``order``)."""
    if spec.kind == "bar":
        return draw_bars(
            frame, spec.x, spec.y, title=spec.title, ylabel=spec.ylabel, logy=spec.logy, by=by, order=order
        )
    return draw(frame, spec.x, spec.y, title=spec.title, ylabel=spec.ylabel, logx=spec.logx, logy=spec.logy, by=by,
                **kw)  # fmt: skip


def figures_of(chapter: str, table: str) -> list[Any]:
    """The chapter's declared figures (``declarations.Figure``) drawn from ``table``."""
    from cudalab.chapter import declarations

    return [f for f in declarations.of(chapter).figures if f.table == table]


def write(frame: pd.DataFrame, out_dir: Path) -> Path:
    """The series kept beside the chapter's tables: ``yours_sweep.csv``."""
    path = Path(out_dir) / f"{TABLE}.csv"
    frame.to_csv(path, index=False)
    return path
