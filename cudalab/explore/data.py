"""What the explorer shows: one chapter table from every source that has it, as one tidy frame.

The sources of a table are this run's (the chapter handle's data folder), every recording under
``results/`` that recorded the same chapter's same table (any GPU, any profile), and the lab's
published numbers where the profile has them for the chapter and they share a column with the
table. Each row carries its ``source`` (a legend label) and ``kind`` ("run", "recorded",
"published"); what can be plotted (the metrics, columns with a unit in their name) and what was
varied (the axes, as recorded in ``provenance.json``) come from the recordings, so one explorer
serves every chapter. No widgets here: this module is fast and tested on its own.

Speedups are derived here, as the chapters compute them in their notebooks without recording
them: for a table with a time and a categorical axis (``variant``, ``kernel``), "speedup over
<baseline>" is the baseline's time over each row's time at the same values of the other axes,
within one source; where the chapter has a ``cpu_reference`` table (``cpu_time_ms`` by ``n``),
"speedup over the CPU" is the CPU's time over each row's at the same ``n`` (the lab's published
``speedup_vs_cpu`` sits beside it). Only rows whose status is ok count: a row or baseline that
was wrong or skipped has no speedup (missing, never a number).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from cudalab.chapter.recorded import PROVENANCE, all_recordings
from cudalab.core.paths import RESULTS_DIR

RUN, RECORDED, PUBLISHED = "run", "recorded", "published"
YOURS = "yours"  # a student's series over the sweep, and the reference measured beside it
OK = "ok"
NOT_STATED = "not stated"  # an axis a published row does not give (the lab did not say)
# Columns that describe a metric's spread, drawn as error bars, never offered as a metric.
SPREAD = ("_q1", "_q3", "_min", "_max")
# A metric's unit, from its name (first match wins): (pattern with the stem named, unit).
UNITS: tuple[tuple[str, str], ...] = (
    (r"^(?P<stem>gflop)_per_s$", "GFLOP/s"),
    (r"^(?P<stem>.+)_per_s$", "{stem}/s"),
    (r"^(?P<stem>.+)_ms$", "ms"),
    (r"^(?P<stem>.+)_us$", "µs"),
    (r"^(?P<stem>.+)_s$", "s"),
    (r"^(?P<stem>.+)_GBps$", "GB/s"),
    (r"^(?P<stem>.+)_MBps$", "MB/s"),
    (r"^(?P<stem>.+)_TFLOPs$", "TFLOP/s"),
    (r"^(?P<stem>.+)_GFLOPs$", "GFLOP/s"),
    (r"^(?P<stem>GOPS)$", "GOP/s"),
    (r"^(?P<stem>gflops)$", "GFLOP/s"),
    (r"^(?P<stem>.+)_MHz$", "MHz"),
    (r"^(?P<stem>.+_fraction)$", "fraction"),
    (r"^(?P<stem>fraction_of_.+)$", "fraction"),
    (r"^(?P<stem>speedup.*)$", "x"),
    (r"^(?P<stem>(?!block|grid|tile).+)_x$", "x"),
    (r"^(?P<stem>.+_over_.+)$", "x"),
    (r"^(?P<stem>.*bytes.*)$", "bytes"),
    (r"^(?P<stem>.+_per_(thread|block|sm|clock_per_sm))$", "count"),
    (r"^(?P<stem>mismatches|errors|launches|repeats|relaxations|iterations)$", "count"),
)
# The order metrics are offered in (the first is the default y): times, rates, ratios, then the rest.
METRIC_ORDER = ("time", "rate", "ratio", "other")
# A time's unit in seconds, so a lab's time_s can sit beside our time_ms.
TIME_SCALE = {"_s": 1.0, "_ms": 1e-3, "_us": 1e-6}
# Derived speedups: the CPU reference a chapter records (its time by n), the column the CPU
# speedup is kept in (the name the labs' published rows use), and the stem of a baseline's.
CPU_TABLE, CPU_TIME, CPU_AXIS = "cpu_reference", "cpu_time_ms", "n"
CPU_SPEEDUP = "speedup_vs_cpu"
CPU_SPEEDUP_LABEL = "speedup over the CPU (x)"
SPEEDUP_OVER = "speedup_over_"
# Columns that are never an axis of the explorer, and how many values a describing column may have.
NOT_AXES = ("status", "reason", "source", "kind")
MAX_LEVELS = 64


def _unit_match(column: str) -> tuple[str, str] | None:
    """(stem, unit) of a column whose name states its unit, else None."""
    for pattern, unit in UNITS:
        m = re.match(pattern, column)
        if m:
            stem = m.group("stem").replace("_", " ")
            return stem, unit.format(stem=stem)
    return None


def unit_of(column: str) -> str | None:
    """The unit a column's name states ("time_ms" -> "ms"), or None where it states none."""
    found = _unit_match(column)
    return found[1] if found else None


def metric_label(column: str) -> str:
    """A human label with the unit: "time_ms" -> "time (ms)", "relaxations_per_s" -> "relaxations/s"."""
    found = _unit_match(column)
    if found is None:
        return column.replace("_", " ")
    stem, unit = found
    return unit if stem.lower() in unit.lower() else f"{stem} ({unit})"


def _kind_of_unit(column: str) -> str:
    unit = unit_of(column) or ""
    if unit in ("ms", "s", "µs"):
        return "time"
    if unit.endswith("/s"):
        return "rate"
    if unit in ("x", "fraction"):
        return "ratio"
    return "other"


def is_metric(column: str, series: pd.Series) -> bool:
    return (
        pd.api.types.is_numeric_dtype(series)
        and not pd.api.types.is_bool_dtype(series)
        and not column.endswith(SPREAD)
        and unit_of(column) is not None
        and series.notna().any()
    )


@dataclass(frozen=True)
class Source:
    """Where a table's rows come from: a legend label, a kind, and the folder or lab."""

    label: str
    kind: str  # RUN, RECORDED, PUBLISHED or YOURS
    where: str  # the folder it was read from, or the lab and section


@dataclass
class TableData:
    """One table of one chapter from every source, tidy, with what the explorer offers on it."""

    chapter: str
    table: str
    frame: pd.DataFrame  # every source's rows; columns "source" and "kind" added
    axes: list[str]  # what was varied, as recorded
    metrics: dict[str, str]  # column -> label with its unit
    sources: list[Source]  # this run's first
    # derived "speedup over <baseline>" columns: categorical axis -> {baseline value: column},
    # the default baseline (the first in the run's table) first
    baselines: dict[str, dict[Any, str]] = field(default_factory=dict)

    @property
    def run_source(self) -> str:
        return self.sources[0].label

    @property
    def overlays(self) -> list[str]:
        """The sources that can be set beside this run: recordings, then the published numbers."""
        return [s.label for s in self.sources[1:]]

    def numeric_axes(self) -> list[str]:
        return [a for a in self.axes if _numeric(self.frame[a])]

    def is_numeric(self, column: str) -> bool:
        """Whether ``column`` (an axis or another choosable column) holds numbers: drawn to scale."""
        return column in self.frame and _numeric(self.frame[column])

    def choosable(self) -> list[str]:
        """What x, colour, facet and filters may be: the recorded axes, then every other column
        that describes a row rather than measures it (``block_factor``, ``kernel``, ``dpx``): not a
        metric, not the status, with 2 to ``MAX_LEVELS`` distinct values."""
        extra = [
            c
            for c in self.frame.columns
            if c not in self.axes
            and c not in NOT_AXES
            and not c.endswith(SPREAD)
            and not is_metric(c, self.frame[c])
            and c not in self.metrics
            and 2 <= self.frame[c].nunique() <= MAX_LEVELS
            and not _prose(self.frame[c])
        ]
        return [*self.axes, *extra]

    def categorical_axes(self) -> list[str]:
        return [a for a in self.axes if not _numeric(self.frame[a])]

    def offered_metrics(self) -> dict[str, str]:
        """The metrics the metric picker lists: every one, but one entry per speedup family (its
        default baseline, labelled "speedup over a <axis>"); the baseline is picked beside it."""
        others = {c for columns in self.baselines.values() for c in list(columns.values())[1:]}
        heads = {next(iter(columns.values())): axis for axis, columns in self.baselines.items() if columns}
        return {
            c: (f"speedup over a {heads[c]} (x)" if c in heads else label)
            for c, label in self.metrics.items()
            if c not in others
        }

    def baseline_family(self, column: str) -> str | None:
        """The categorical axis whose "speedup over" family ``column`` is in, else None."""
        return next((axis for axis, columns in self.baselines.items() if column in columns.values()), None)

    def values(self, axis: str) -> list:
        """The distinct values of an axis, in natural order (numbers by value; a whole number as
        an int, 1048576 not 1048576.0, where a missing value made the column float)."""
        from cudalab.core.plots import natural_order

        return [
            int(v) if isinstance(v, float) and v.is_integer() else v for v in natural_order(self.frame[axis].dropna())
        ]


def _prose(series: pd.Series) -> bool:
    """A column of sentences (a ladder step's description), not of names: no axis."""
    text = series.dropna()
    return not _numeric(series) and len(text) > 0 and text.astype(str).str.len().mean() > 30


def _numeric(series: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)


def source_label(gpu_name: str, profile: str, kind: str) -> str:
    """ "NVIDIA H100 80GB HBM3 · h100 (this run)", "… · gtx680 (recorded)"."""
    return f"{gpu_name} · {profile} ({'this run' if kind == RUN else 'recorded'})"


def published_label(lab: str, gpu: str) -> str:
    """ "lab 000, GeForce GTX 680 (published)"."""
    return f"lab {lab}, {gpu} (published)"


def run_tables(provenance: dict[str, Any]) -> dict[str, list[str]]:
    """This run's tables and their recorded axes."""
    axes = provenance.get("axes", {})
    return {t: list(axes.get(t, [])) for t in provenance.get("tables", [])}


def recorded_sources(chapter: str, table: str, results: Path = RESULTS_DIR) -> list[tuple[Source, Path, dict]]:
    """Every recording of ``chapter`` that holds ``table``: (source, its CSV, its provenance)."""
    found = []
    for rec in all_recordings(results):
        folder = rec.path / chapter
        if not (folder / PROVENANCE).is_file() or not (folder / f"{table}.csv").is_file():
            continue
        info = json.loads((folder / PROVENANCE).read_text())
        if table not in info.get("tables", []):
            continue
        label = source_label(info.get("gpu_name") or rec.gpu_name, info.get("profile") or rec.profile, RECORDED)
        found.append((Source(label, RECORDED, str(folder)), folder / f"{table}.csv", info))
    return found


def _same_measurement(a: dict, b: dict) -> bool:
    """Two provenances of one measurement (a replay's copy of its recording)."""
    keys = ("gpu_name", "profile", "date_utc", "git_commit")
    return all(a.get(k) == b.get(k) for k in keys)


def _align_time_units(frame: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """A published ``time_s`` as ``time_ms`` where the table has that (and any time unit so)."""
    frame = frame.copy()
    for col in list(frame.columns):
        suffix = next((s for s in TIME_SCALE if col.endswith(s) and not col.endswith("_per_s")), None)
        if suffix is None:
            continue
        stem = col[: -len(suffix)]
        for target in TIME_SCALE:
            want = stem + target
            if want != col and want in columns and want not in frame.columns:
                frame[want] = frame[col] * TIME_SCALE[suffix] / TIME_SCALE[target]
    return frame


def _fill_axes(
    published: pd.DataFrame, measured: pd.DataFrame, axes: list[str], coordinates: list[str]
) -> pd.DataFrame:
    """Give published rows the table's axes they lack, where the coordinates they share determine
    it in the measured table (lab 000's ``block_edge`` 16 is our ``variant`` "16x16"; its kernel,
    threads per block and segment size are chapter 02's variant); else "not stated". A numeric
    axis (a size) is never inferred: that this run's ladder is all N = 8192 says nothing of the
    lab's."""
    published = published.copy()
    for axis in axes:
        if axis in published.columns:
            continue
        if _numeric(measured[axis]):  # a size (n) is a fact of each run, never inferred from another's
            published[axis] = NOT_STATED
            continue
        shared = [c for c in coordinates if c in measured.columns and c not in axes]
        shared = [c for c in shared if measured[c].notna().any()]
        mapping = None
        if shared:
            known = measured.dropna(subset=shared + [axis]).drop_duplicates(shared + [axis])
            if len(known) and not known.duplicated(shared).any():
                mapping = known.set_index(shared)[axis]
        if mapping is None:
            published[axis] = NOT_STATED
            continue
        keys = published[shared].apply(tuple, axis=1) if len(shared) > 1 else published[shared[0]]
        published[axis] = keys.map(mapping.to_dict() if len(shared) == 1 else dict(mapping.items()))
        published[axis] = published[axis].astype(object).where(published[axis].notna(), NOT_STATED)
    return published


def published_frames(
    lab, table: pd.DataFrame, axes: list[str], name_of_table: str = ""
) -> list[tuple[Source, pd.DataFrame]]:
    """The profile's published tables for this chapter that can sit beside ``table`` (named
    ``name_of_table``): those whose coordinates are all columns of the table, or that name it in
    their ``beside`` (then they join on the coordinates the table has; a step's name is left out),
    and that have a metric in common (after ``measures`` renames and time units)."""
    config = lab.profile.chapters.get(lab.id)
    published = getattr(config, "published", None)
    names: list[str | None] = list(published) if isinstance(published, dict) else [None] if published else []
    found = []
    for name in names:
        frame = lab.published_table(name)
        pub = config.published_table(name)
        if frame is None or pub is None or not len(frame):
            continue
        coordinates = [c for c in pub.coordinates if c in table.columns]
        declared = name_of_table in pub.beside
        if not coordinates or (len(coordinates) < len(pub.coordinates) and not declared):
            continue  # nothing (or not all) says where its numbers sit in this table
        frame = _align_time_units(frame.rename(columns=dict(pub.measures)), list(table.columns))
        shared = [c for c in frame.columns if c in table.columns and c not in coordinates and is_metric(c, table[c])]
        if not shared or not frame[shared].notna().any().any():
            continue
        frame = frame.dropna(subset=shared, how="all")  # a row of other metrics only has nothing to show here
        frame = _fill_axes(frame[[*coordinates, *shared]], table, axes, coordinates)
        label = published_label(pub.lab, pub.gpu)
        if any(s.label == label for s, _ in found):
            label = published_label(pub.lab, f"{pub.gpu}, {name}")
        found.append((Source(label, PUBLISHED, f"lab {pub.lab}, {pub.where}"), frame.assign(status=OK)))
    return found


def load(
    lab, table: str, *, results: Path = RESULTS_DIR, extra: list[tuple[Source, pd.DataFrame]] | None = None
) -> TableData:
    """``table`` of ``lab``'s chapter from this run, every recording that has it, the lab's
    published numbers that sit beside it, and ``extra`` sources (a student's series over the
    sweep, ``explore.series.sources``: rows keyed by the table's axes), as one frame."""
    from cudalab.core.errors import CudalabError

    info = lab.provenance
    tables = run_tables(info)
    if table not in tables:
        raise CudalabError(
            f"chapter {lab.id} has no table {table!r} in this run; its tables: {', '.join(tables) or 'none'}"
        )
    axes = tables[table]
    run = pd.read_csv(lab.out_dir / f"{table}.csv")
    time = time_column(run, axes)
    cpu_speedup = table != CPU_TABLE and time is not None and CPU_AXIS in axes and CPU_SPEEDUP not in run
    run_src = Source(source_label(info.get("gpu_name") or "this GPU", lab.profile.name, RUN), RUN, str(lab.out_dir))
    parts = [(run_src, run)]
    for src, csv, rec_info in recorded_sources(lab.id, table, results):
        if _same_measurement(rec_info, info) or axes != list(rec_info.get("axes", {}).get(table, axes)):
            continue  # a replay's own recording is this run; a table with other axes does not join
        parts.append((src, pd.read_csv(csv)))
    if cpu_speedup:  # each source over its own CPU reference, recorded beside it
        parts = [(src, with_cpu_speedup(frame, Path(src.where) / f"{CPU_TABLE}.csv", time)) for src, frame in parts]
    parts += published_frames(lab, parts[0][1], axes, table)
    parts += [(src, frame) for src, frame in (extra or ()) if set(axes) <= set(frame.columns)]
    frames = []
    for src, frame in parts:
        frame = frame.copy()
        if "status" not in frame:
            frame["status"] = OK
        frame["source"], frame["kind"] = src.label, src.kind
        frames.append(frame)
    frame = pd.concat(frames, ignore_index=True, sort=False)
    for axis in axes:  # an axis that is numbers in one source and text in another is text
        if not _numeric(frame[axis]) and frame[axis].map(type).nunique() > 1:
            frame[axis] = frame[axis].astype(str)
    found = [c for c in run.columns if c not in axes and is_metric(c, run[c])]
    labels = {c: metric_label(c) for c in found}
    if cpu_speedup and frame[CPU_SPEEDUP].notna().any():
        found.append(CPU_SPEEDUP)
        labels[CPU_SPEEDUP] = CPU_SPEEDUP_LABEL
    baselines: dict[str, dict[Any, str]] = {}
    if time is not None:
        frame, baselines, derived = with_baseline_speedups(frame, run, axes, time)
        found += list(derived)
        labels.update(derived)
    metrics = {c: labels[c] for c in sorted(found, key=lambda c: METRIC_ORDER.index(_kind_of_unit(c)))}
    return TableData(lab.id, table, frame, axes, metrics, [s for s, _ in parts], baselines)


# ---- derived speedups


def time_column(frame: pd.DataFrame, axes: list[str]) -> str | None:
    """The time a speedup is taken over: ``time_ms`` where the table has it, else its first time."""
    times = [c for c in frame.columns if c not in axes and is_metric(c, frame[c]) and _kind_of_unit(c) == "time"]
    return "time_ms" if "time_ms" in times else next(iter(times), None)


def _timed(frame: pd.DataFrame, time: str) -> pd.Series:
    """The rows whose time counts: status ok and a positive time."""
    status = frame["status"] if "status" in frame else pd.Series(OK, index=frame.index)
    return status.eq(OK) & pd.to_numeric(frame[time], errors="coerce").gt(0)


def with_cpu_speedup(frame: pd.DataFrame, cpu_csv: Path, time: str) -> pd.DataFrame:
    """``frame`` with ``speedup_vs_cpu``: the CPU reference's time at the row's ``n`` (its median
    where it has several) over the row's time; missing where either is missing or not ok."""
    frame = frame.copy()
    frame[CPU_SPEEDUP] = float("nan")
    if not cpu_csv.is_file():
        return frame
    cpu = pd.read_csv(cpu_csv)
    if not {CPU_AXIS, CPU_TIME} <= set(cpu.columns):
        return frame
    cpu = cpu[_timed(cpu, CPU_TIME)]
    reference = cpu.groupby(CPU_AXIS)[CPU_TIME].median()
    frame[CPU_SPEEDUP] = (frame[CPU_AXIS].map(reference) / frame[time]).where(_timed(frame, time))
    return frame


def with_baseline_speedups(
    frame: pd.DataFrame, run: pd.DataFrame, axes: list[str], time: str
) -> tuple[pd.DataFrame, dict[str, dict[Any, str]], dict[str, str]]:
    """``frame`` with a "speedup over <value>" column per value of each categorical axis that this
    run varies: the value's time (median) over the row's, at the row's other axes, in its source.
    Returns the frame, the baselines (axis -> {value: column}) and the new columns' labels."""
    categorical = [a for a in axes if a in run and not _numeric(run[a]) and run[a].nunique() > 1]
    frame = frame.copy()
    timed = _timed(frame, time)
    families: dict[str, dict[Any, str]] = {}
    labels: dict[str, str] = {}
    for axis in categorical:
        keys = ["source", *[a for a in axes if a != axis]]
        values = {}
        for value in pd.unique(run[axis].dropna()):
            column = f"{SPEEDUP_OVER}{value}" if len(categorical) == 1 else f"{SPEEDUP_OVER}{axis}_{value}"
            if column in frame:
                continue
            base = frame[timed & frame[axis].eq(value)].groupby(keys, dropna=False)[time].median()
            at = frame[keys].merge(base.rename("_base").reset_index(), on=keys, how="left")["_base"].to_numpy()
            frame[column] = (at / frame[time]).where(timed)
            values[value] = column
            labels[column] = f"speedup over {value} (x)"
        if values:
            families[axis] = values
    return frame, families, labels


def explorable_tables(lab) -> list[str]:
    """This run's tables that have axes and at least one metric: what the table picker offers."""
    out = []
    for table, axes in run_tables(lab.provenance).items():
        path = lab.out_dir / f"{table}.csv"
        if not axes or not path.is_file():
            continue
        head = pd.read_csv(path, nrows=200)
        if any(c not in axes and is_metric(c, head[c]) for c in head.columns):
            out.append(table)
    return out


# ---- a selection of the rows


def select(
    data: TableData,
    *,
    filters: dict[str, Any] | None = None,
    sources: list[str] | None = None,
) -> pd.DataFrame:
    """The rows the user asked for: ``filters`` per axis (a collection of values, or a (low, high)
    range for a numeric axis), and ``sources`` (labels; this run's is always kept)."""
    frame = data.frame
    keep = pd.Series(True, index=frame.index)
    wanted = {data.run_source, *(sources or [])}
    keep &= frame["source"].isin(wanted)
    for axis, chosen in (filters or {}).items():
        if chosen is None or axis not in frame:
            continue
        column = frame[axis]
        if isinstance(chosen, tuple) and len(chosen) == 2 and _numeric(column):
            lo, hi = chosen
            inside = column.between(lo, hi)
        else:
            inside = column.isin(list(chosen))
        # a published row that does not state this axis is kept (the lab did not say), as is a
        # row the column does not apply to (chapter 04's shared kernel has no dpx or tile)
        keep &= inside | column.eq(NOT_STATED) | column.isna()
    return frame[keep]


def rows_table(selected: pd.DataFrame, data: TableData, metric: str, *, limit: int = 200) -> pd.DataFrame:
    """The selected rows as the small table shows them: source, axes, the metric, status and reason,
    every gap "–" (never NaN)."""
    columns = ["source", *data.axes, metric, "status"] + (["reason"] if "reason" in selected else [])
    shown = selected[[c for c in columns if c in selected]].head(limit).copy()
    shown[metric] = shown[metric].map(lambda v: "–" if pd.isna(v) else f"{v:.4g}")
    return shown.astype(object).where(shown.notna(), "–").rename(columns={metric: data.metrics.get(metric, metric)})
