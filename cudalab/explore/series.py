"""Your kernel across the chapter's sweep, in the explorer: a student's folder measured over every
point of the chapter's sweep, and the series measured so far drawn beside the chapter's own.

``SeriesRun`` starts the job (``grading.series_job``) in a process of its own, so the notebook's
kernel never loads a student's code and stays free while it runs (each source's kernels then run
in the job's sandboxed workers, as in ``--kernels``). A thread reads the job's events and hands
them on (a progress bar); ``cancel()`` sends the job ``SIGTERM`` (it kills its running worker and
says "cancelled"), then, past a grace period, kills its whole process group.

``sources(lab, table)`` reads the series kept in the chapter's data folder, a ``--kernels`` build's
``yours_sweep.csv`` and the explorer's ``yours_series/*.csv``, as the explorer's sources of the
recipe's table: "yours <sha8>" (a wrong point keeps its status and is never drawn as a time) and
"reference beside yours <sha8>", the reference measured in the same run, like with like.
"""

from __future__ import annotations

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

from cudalab.explore.data import NOT_AXES, SPREAD, YOURS, Source, is_metric
from cudalab.grading import series_job

TARGET = ("-m", "cudalab.grading._series_target")  # the job's process (a test's stand-in replaces it)
CANCEL_GRACE_S = 15.0  # from SIGTERM to killing the job's process group
SERIES_COLUMN = "series"  # "reference" or "yours <sha8>", as grading.series writes it
REFERENCE = "reference"
BOOKKEEPING = ["source", SERIES_COLUMN, "point"]  # a series file's columns that are no column of the table


class SeriesRun:
    """One ``SeriesJob`` in a process of its own. ``on_event(event)`` gets each event the job says
    (``plan``, ``tick``, then one of ``done``, ``error``, ``cancelled``), from a thread of its own;
    a job that ends without saying how is an ``error`` with its exit status and its last words."""

    def __init__(
        self,
        job: series_job.SeriesJob,
        on_event: Callable[[dict[str, Any]], None],
        log: Path | None = None,
        command: tuple[str, ...] = TARGET,
    ):
        self.job, self.on_event = job, on_event
        self.ended: dict[str, Any] | None = None
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
            if not isinstance(event, dict):
                continue
            if event.get("event") in ("done", "error", "cancelled"):
                self.ended = event
            self.on_event(event)
        code = self.proc.wait()
        if self.ended is None:
            self.ended = {"event": "error", "reason": f"the job ended with status {code}{self._last_words()}"}
            self.on_event(self.ended)

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

    def cancel(self) -> None:
        """Stop the job: ``SIGTERM`` (it kills the worker it runs and says "cancelled"), then,
        where it has not ended within ``CANCEL_GRACE_S``, ``SIGKILL`` to its whole process group."""
        if self.proc.poll() is not None:
            return
        try:
            os.kill(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=CANCEL_GRACE_S)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        except ProcessLookupError:
            pass


def kernel_files(chapter: str) -> list[str]:
    """The project kernel files whose copies ``chapter`` measures (none: no series control)."""
    return series_job.kernel_files(chapter)


def job_for(lab: Any, folder: str | Path) -> tuple[series_job.SeriesJob, Path]:
    """The job that measures ``folder`` over ``lab``'s chapter, with the chapter's parameters, time
    limit and ceilings as its notebook has them, and the log its job writes (beside the series)."""
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
    )
    log = Path(lab.out_dir) / series_job.FOLDER / "job.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    return job, log


def kept(out_dir: Path) -> list[Path]:
    """The series files in a chapter's data folder: the ``--kernels`` build's, then the explorer's."""
    from cudalab.grading import series as grading_series

    out = [Path(out_dir) / f"{grading_series.TABLE}.csv"]
    out += sorted((Path(out_dir) / series_job.FOLDER).glob("*.csv"))
    return [p for p in out if p.is_file() and p.stat().st_size > 0]


def _keys(frame: pd.DataFrame, run: pd.DataFrame) -> list[str]:
    """The columns a series row and the run's table share that say which point it is (not a metric,
    its spread, or a status)."""
    return [
        c
        for c in frame.columns
        if c in run.columns
        and c not in NOT_AXES
        and not c.endswith(SPREAD)
        and not is_metric(c, pd.to_numeric(run[c], errors="coerce"))
    ]


def _with_axes(frame: pd.DataFrame, run: pd.DataFrame, axes: list[str]) -> pd.DataFrame:
    """``frame`` with the table's axes it lacks, read from the run's row at the same point (chapter
    04's ``variant`` from ``n``, ``block_factor`` and ``kernel``); rows with no such point dropped."""
    missing = [a for a in axes if a not in frame]
    if not missing:
        return frame
    keys = _keys(frame, run)
    if not keys:
        return frame.iloc[0:0]
    lookup = run[keys + missing].drop_duplicates(keys)
    joined = frame.astype({k: lookup[k].dtype for k in keys}, errors="ignore").merge(lookup, on=keys, how="inner")
    return joined


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
        frame = _with_axes(frame, run, axes)
        # the table's own columns (the series' bookkeeping, its file, seed and costs, would be offered as axes)
        keep = [c for c in frame.columns if c in run.columns or c in ("status", "reason", SERIES_COLUMN, "point")]
        frame = frame[keep]
        mine = [s for s in pd.unique(frame[SERIES_COLUMN].astype(str)) if s != REFERENCE]
        for label in mine:
            if label in seen:  # the same bytes measured twice: the first file read (the build's) stands
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
