"""Your kernel across the chapter's sweep, in the explorer: a student's folder measured over every
point of the chapter's sweep, and the series measured so far drawn beside the chapter's own.

``SeriesRun`` starts the job (``grading.series_job``) in a process of its own, so the notebook's
kernel never loads a student's code and stays free while it runs (each source's kernels then run
in the job's sandboxed workers, as in ``--kernels``). A thread reads the job's events and hands
them on (a progress bar); ``cancel()`` sends the job ``SIGTERM`` (it kills everything it started,
the workers, compilers and sanitizer each in a session of their own, and says "cancelled"), then,
past a grace period, kills all of that and the job itself. It returns at once, and one job runs a
chapter data folder at a time (``running_for``); the kernel's end cancels what it started.

``sources(lab, table, axes)`` reads the series kept in the chapter's data folder, a ``--kernels``
build's ``yours_sweep.csv`` and the explorer's ``yours_series/*.csv`` (the newest of the same bytes
first), as the explorer's sources of the recipe's table: "yours <sha8>" (a wrong point keeps its
status and is never drawn as a time) and "reference beside yours <sha8>", the reference measured in
the same run, like with like. A row is placed by its own point's keys on that table's grid only
(``summary`` says how many were, and which were not correct).
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from cudalab.core.limits import kill_tree
from cudalab.explore.data import YOURS, Source
from cudalab.grading import series_job

TARGET = ("-m", "cudalab.grading._series_target")  # the job's process (a test's stand-in replaces it)
CANCEL_GRACE_S = 15.0  # from SIGTERM to killing the job and everything it started
SERIES_COLUMN = "series"  # "reference" or "yours <sha8>", as grading.series writes it
REFERENCE = "reference"
BOOKKEEPING = ["source", SERIES_COLUMN, "point"]  # a series file's columns that are no column of the table


_RUNNING: dict[str, SeriesRun] = {}  # each chapter data folder's job, whichever explorer started it


def running_for(out_dir: str | Path) -> SeriesRun | None:
    """The job measuring a series into ``out_dir`` now (an explorer of an earlier run of the cell may
    have started it), or None: one at a time, two would share the GPU and skew both."""
    run = _RUNNING.get(str(out_dir))
    return run if run is not None and run.running else None


@atexit.register
def _cancel_all() -> None:
    """The kernel ends (restarted, shut down): no job of its outlives it."""
    for run in list(_RUNNING.values()):
        run.cancel(wait=True)


class SeriesRun:
    """One ``SeriesJob`` in a process of its own. ``on_event(event)`` gets each event the job says
    (``plan``, ``tick``, then one of ``done``, ``error``, ``cancelled``), from a thread of its own;
    a job that ends without saying how is an ``error`` with its exit status and its last words,
    or ``cancelled`` where it was asked to stop."""

    def __init__(
        self,
        job: series_job.SeriesJob,
        on_event: Callable[[dict[str, Any]], None],
        log: Path | None = None,
        command: tuple[str, ...] = TARGET,
    ):
        self.job, self.on_event = job, on_event
        self.ended: dict[str, Any] | None = None
        self.cancel_asked = False
        self._log = log
        err = open(log, "w") if log is not None else subprocess.DEVNULL  # noqa: SIM115 (closed when the job ends)
        self.proc = subprocess.Popen(
            [sys.executable, *command],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            start_new_session=True,  # its own process group: a cancel reaches all of it
        )
        if log is not None:
            err.close()  # the child holds its own copy
        _RUNNING[job.out_dir] = self
        self.proc.stdin.write(job.to_json())
        self.proc.stdin.close()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue  # not an event: a library's words on standard output
            if not isinstance(event, dict) or event.get("event") in ("done", "error", "cancelled"):
                if isinstance(event, dict):
                    self.ended = event
                continue  # the end is said once the process has gone (below)
            self._tell(event)
        code = self.proc.wait()
        if self.cancel_asked and (self.ended is None or self.ended.get("event") == "error"):
            self.ended = {"event": "cancelled"}  # stopped before it could say so, or failing as it stopped
        elif self.ended is None:
            self.ended = {"event": "error", "reason": f"the job ended with status {code}{self._last_words()}"}
        self._tell(self.ended)

    def _tell(self, event: dict[str, Any]) -> None:
        try:
            self.on_event(event)
        except Exception:  # noqa: BLE001 - a listener's failure never stops the reading of the job
            pass

    def _last_words(self) -> str:
        if self._log is None or not self._log.is_file():
            return ""
        lines = [line for line in self._log.read_text(errors="replace").splitlines() if line.strip()]
        return f": {lines[-1].strip()}" if lines else ""

    @property
    def running(self) -> bool:
        return self.proc.poll() is None or self._thread.is_alive()

    def wait(self, timeout: float | None = None) -> dict[str, Any] | None:
        """The event the job ended with, once it has (None if it is still running after ``timeout``)."""
        self._thread.join(timeout)
        return self.ended

    def cancel(self, wait: bool = False) -> None:
        """Stop the job: ``SIGTERM`` (it kills everything it started and says "cancelled"), then,
        where it has not ended within ``CANCEL_GRACE_S``, ``SIGKILL`` to everything it started and
        to itself. Returns at once (the grace period is waited in a thread), unless ``wait``."""
        if self.proc.poll() is not None:
            return
        self.cancel_asked = True
        try:
            os.kill(self.proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        escalation = threading.Thread(target=self._escalate, daemon=True)
        escalation.start()
        if wait:
            escalation.join()

    def _escalate(self) -> None:
        try:
            self.proc.wait(timeout=CANCEL_GRACE_S)
        except subprocess.TimeoutExpired:
            kill_tree(self.proc.pid)  # its workers, compilers and sanitizers, each in a session of its own
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def kernel_files(chapter: str) -> list[str]:
    """The project kernel files whose copies ``chapter`` measures (none: no series control)."""
    return series_job.kernel_files(chapter)


def folder_problem(folder: str | Path) -> str | None:
    """Why ``folder`` cannot be measured, in one line (none named, no such folder, not a folder),
    or None. A relative path is read from the notebook's folder (the kernel's working folder)."""
    text = str(folder).strip()
    if not text:
        return "name the folder that holds your kernel file"
    try:
        path = Path(text).expanduser().resolve()
    except (RuntimeError, OSError) as exc:  # "~nobody/x": no such user
        return f"{text}: {exc}"
    if not path.exists():
        return f"{text}: no such folder (a relative path starts in {Path.cwd()})"
    if not path.is_dir():
        return f"{text}: not a folder (name the folder that holds your kernel file)"
    return None


def summary(path: Path, lab: Any, table: str, axes: list[str]) -> str:
    """What the explorer draws of the series file ``path``, in words: how many points of each
    student's file it holds, how many of them sit on ``table``'s grid and are drawn, and each
    point that was not correct with its status (a graded point off the grid is said here, never
    lost in silence)."""
    frame = pd.read_csv(path)
    mine = frame[frame[SERIES_COLUMN].astype(str).ne(REFERENCE)]
    placed = sum(len(f) for s, f in sources(lab, table, axes) if s.where == str(path) and s.label.startswith(YOURS))
    said = f"{len(mine)} point(s) of yours measured beside the reference, {placed} of them on {table}'s grid and drawn"
    bad = mine[mine["status"].astype(str).ne("ok")]
    if len(bad):
        said += "; not correct: " + "; ".join(f"{r['point']}: {r['status']}" for _, r in bad.iterrows())
    return said


def job_for(lab: Any, folder: str | Path, table: str | None = None) -> tuple[series_job.SeriesJob, Path]:
    """The job that measures ``folder`` over ``lab``'s chapter, with the chapter's parameters, time
    limit and ceilings as its notebook has them, and the log its job writes (beside the series).
    ``table``: the explorer's point recipe's table, the only one the job sweeps (None: every group's)."""
    try:
        ceilings = dict(lab.ceilings())
    except Exception:  # no chapter 00 here: the fractions of the ceiling are left out
        ceilings = {}
    job = series_job.SeriesJob(
        folder=str(Path(str(folder).strip()).expanduser().resolve()),
        chapter=lab.id,
        out_dir=str(lab.out_dir),
        params=dict(lab.params),
        point_time_limit_s=lab.point_time_limit_s,
        ceilings={k: float(v) for k, v in ceilings.items() if v is not None},
        table=table,
    )
    log = Path(lab.out_dir) / series_job.FOLDER / "job.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    return job, log


def kept(out_dir: Path) -> list[Path]:
    """The series files in a chapter's data folder (the ``--kernels`` build's and the explorer's), the
    newest first."""
    from cudalab.grading import series as grading_series

    out = [Path(out_dir) / f"{grading_series.TABLE}.csv", *(Path(out_dir) / series_job.FOLDER).glob("*.csv")]
    out = [p for p in out if p.is_file() and p.stat().st_size > 0]
    return sorted(out, key=lambda p: p.stat().st_mtime, reverse=True)


def point_keys(label: str) -> tuple[str, ...]:
    """The keys of a point as its label names them (``plan.point_label``): "n=3000, block_factor=32,
    kernel=shared" -> ("n", "block_factor", "kernel")."""
    return tuple(part.split("=", 1)[0].strip() for part in str(label).split(", ") if "=" in part)


def _with_axes(frame: pd.DataFrame, run: pd.DataFrame, axes: list[str]) -> pd.DataFrame:
    """``frame``'s rows placed on the run's table: each row's point keys (from its label) must be
    columns of the table, and the table's axes it lacks are read from the table's row at the same
    point (chapter 04's ``variant`` from ``n``, ``block_factor`` and ``kernel``), unless the row
    carries them (the values its chapter says a series point stands for, ``Yours.series_axes``:
    chapter 06's ``stage_times`` holds several stages at each point, and a series' whole iteration is
    ``stage`` "whole iteration"). A row is left out where the table has no such point, or where
    neither the point nor the row decides those axes."""
    placed = []
    labels = frame["point"].astype(str) if "point" in frame else pd.Series("", index=frame.index)
    for keys, rows in frame.groupby(labels.map(point_keys), sort=False):
        keys = list(keys)
        if not keys or any(k not in run.columns or k not in rows.columns for k in keys):
            continue  # a point of another table (its keys are not this table's columns)
        carried = [a for a in axes if a not in keys and a in rows and rows[a].notna().all()]
        missing = [a for a in axes if a not in keys and a not in carried]
        lookup = run[keys + missing].drop_duplicates()
        decided = lookup[~lookup.duplicated(keys, keep=False)]  # one value of each missing axis per point
        rows = rows.drop(columns=[a for a in missing if a in rows], errors="ignore")
        for k in keys:  # 8 and 8.0 are one block factor (a column with gaps reads as floats); else as text
            numbers = [pd.to_numeric(f[k], errors="coerce") for f in (rows, decided)]
            if all(n.notna().sum() == f[k].notna().sum() for n, f in zip(numbers, (rows, decided))):
                rows, decided = rows.assign(**{k: numbers[0]}), decided.assign(**{k: numbers[1]})
            else:
                rows, decided = rows.astype({k: str}), decided.astype({k: str})
        decided = decided.astype({k: rows[k].dtype for k in keys})
        merged = rows.merge(decided, on=keys, how="inner")
        for k in keys:  # the table's own type again (its block factors are 8, not 8.0, in the filters)
            if run[k].dtype.kind in "iu" and merged[k].notna().all():
                merged[k] = pd.to_numeric(merged[k]).astype(run[k].dtype)
        placed.append(merged)
    return pd.concat(placed, ignore_index=True) if placed else frame.iloc[0:0]


def sources(lab: Any, table: str, axes: list[str]) -> list[tuple[Source, pd.DataFrame]]:
    """The student series kept for ``lab``'s chapter, as sources of ``table`` (the chapter's point
    recipe's table, whose ``axes`` they are drawn over): a pair of sources per series, the student's
    and the reference measured beside it. A file that cannot be read is left out, never an error."""
    run_csv = Path(lab.out_dir) / f"{table}.csv"
    if not run_csv.is_file():
        return []
    run = pd.read_csv(run_csv)
    out: list[tuple[Source, pd.DataFrame]] = []
    seen: set[str] = set()
    for path in kept(lab.out_dir):
        try:
            frame = pd.read_csv(path)
        except (OSError, ValueError, pd.errors.ParserError):
            continue
        if SERIES_COLUMN not in frame or "status" not in frame:
            continue
        if "table" in frame:  # a series file names the table of each row (older ones do not)
            frame = frame[frame["table"].astype(str).eq(table)]
        frame = _with_axes(frame, run, axes)
        # the table's own columns (the series' bookkeeping, its file, seed and costs, would be offered as axes)
        keep = [c for c in frame.columns if c in run.columns or c in ("status", "reason", SERIES_COLUMN, "point")]
        frame = frame[keep]
        mine = [s for s in pd.unique(frame[SERIES_COLUMN].astype(str)) if s != REFERENCE]
        for label in mine:
            if label in seen:  # the same bytes measured twice: the newest file stands
                continue
            seen.add(label)
            rows = frame[frame[SERIES_COLUMN].astype(str).eq(label)]
            points = set(rows["point"]) if "point" in rows else None
            ref = frame[frame[SERIES_COLUMN].astype(str).eq(REFERENCE)]
            if points is not None:
                ref = ref[ref["point"].isin(points)]
            out.append((Source(label, YOURS, str(path)), rows.drop(columns=BOOKKEEPING, errors="ignore")))
            if len(ref):
                out.append(
                    (
                        Source(f"reference beside {label}", YOURS, str(path)),
                        ref.drop(columns=BOOKKEEPING, errors="ignore"),
                    )
                )
    return out
