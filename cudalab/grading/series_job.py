"""A student's folder over one chapter's whole sweep, as a job in a process of its own: what the
explorer's "Measure my series" starts (``explore.series``), watches and can cancel.

The job is the student's path of ``--kernels`` for one chapter, without the notebook around it:
the folder is checked and staged once (``grading.submission``), the chapter's graded points are
measured with every check, each graded build once (``plan.graded_once``), and the rest of the chapter's
sweep that the file builds for is measured as a sweep point is (``section.graded_and_swept``), every
point of one source in one sandboxed worker (``grading.isolate``). The result is the series table a ``--kernels`` build
writes (``grading.series``), kept in the chapter's data folder as ``yours_series/<sha8>.csv``,
one file per set of submitted bytes (measuring the same bytes again replaces it).

On its standard output the job says, one JSON object a line: ``plan`` (how many results to wait
for), ``tick`` (one more, and which), then ``done`` (the file written), ``error`` (why not, one
line) or ``cancelled``. ``SIGTERM`` cancels it (``grading._series_target``): everything the job
started is killed before it exits, so nothing of the student's outlives a cancel. Each row names
the table whose point it is (``table``), so the explorer places it on that table's grid only.

``python -m cudalab.grading._series_target`` is the job's process: its ``SeriesJob`` as JSON on
standard input (``SeriesJob.to_json``).
"""

from __future__ import annotations

import json
import os
import secrets
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from cudalab.core.errors import CudalabError
from cudalab.core.files import atomic_write
from cudalab.core.limits import POINT_LIMIT_S, SUBMISSION_LIMIT_S
from cudalab.grading import isolate, plan, section, series, submission

FOLDER = "yours_series"  # <chapter data>/yours_series/<sha8>.csv


@dataclass(frozen=True)
class SeriesJob:
    """One student's folder over one chapter's sweep. ``out_dir``: the chapter's data folder (its
    tables decide the sweep's points, and the series is kept there); ``params`` and
    ``point_time_limit_s``: the chapter's, as its notebook has them (its sizes, its seed);
    ``ceilings``: the ceilings the chapter's run reads (``lab.ceilings()``); ``seed``: the check
    inputs' (None: a fresh one, said in the ``plan`` event)."""

    folder: str
    chapter: str
    out_dir: str
    params: dict[str, Any] = field(default_factory=dict)
    point_time_limit_s: float | None = None
    ceilings: dict[str, float] = field(default_factory=dict)
    seed: int | None = None
    point_s: float = POINT_LIMIT_S
    submission_s: float = SUBMISSION_LIMIT_S
    table: str | None = None  # the groups whose recipe measures this table only (the explorer's); None: all

    def to_json(self) -> str:
        return json.dumps(asdict(self), default=str)

    @classmethod
    def from_json(cls, text: str) -> SeriesJob:
        return cls(**json.loads(text))


@dataclass
class _ChapterRun:
    """What ``section.measured_together`` reads of a chapter handle, from the job."""

    id: str
    out_dir: Path
    params: dict[str, Any]
    point_time_limit_s: float | None
    measured_ceilings: dict[str, float]
    mode: str = "measure"
    profile: Any = None

    def ceilings(self) -> dict[str, float]:
        return self.measured_ceilings


def kernel_files(chapter: str) -> list[str]:
    """The project kernel files whose copies the chapter measures (its ``yours`` points)."""
    return list(dict.fromkeys(f for t in plan.chapter_tasks(chapter) for f in t.files))


def series_path(out_dir: Path, sha256: dict[str, str]) -> Path:
    """Where the series of these bytes is kept: named by the first 8 hex digits of each file's sha256."""
    return Path(out_dir) / FOLDER / ("-".join(sorted(s[:8] for s in sha256.values())) + ".csv")


def run(job: SeriesJob, tell: Callable[[dict[str, Any]], None] = lambda event: None) -> Path:
    """Measure ``job`` (see the module docstring) and return the series file written. ``tell``
    gets the ``plan`` and ``tick`` events. Raises ``CudalabError`` where the folder holds nothing
    this chapter measures."""
    sub = submission.check(job.folder)
    refused = "; ".join(f"{r.name}: {r.reason}" for r in sub.refused)
    tasks = plan.chapter_tasks(job.chapter, sub.kernels) if sub.kernels else []
    if job.table is not None:  # the explorer draws one table: 04's ladder is not measured for its sweep's view
        tasks = [t for t in tasks if plan.recipe_of(t.yours.recipe).table == job.table]
    if not tasks:
        measured_here = ", ".join(kernel_files(job.chapter)) or "no kernel file"
        raise CudalabError(
            f"{Path(job.folder).name}: nothing chapter {job.chapter} measures (it measures {measured_here})"
            + (f"; refused: {refused}" if refused else "")
        )
    seed = job.seed if job.seed is not None else secrets.randbits(63)
    lab = _ChapterRun(job.chapter, Path(job.out_dir), job.params, job.point_time_limit_s, job.ceilings)
    limits = isolate.Limits(job.point_s, job.submission_s)
    sha256 = {name: sub.sha256[name] for name in sub.kernels}
    rests = section.sweep_rest(lab, tasks, section.measured_cc(lab))
    total = section.results_planned(tasks, rests)
    tell({"event": "plan", "total": total, "seed": seed, "files": sorted(sha256), "refused": refused})
    done = 0

    def tick(what: str) -> None:
        nonlocal done
        done += 1
        tell({"event": "tick", "done": done, "total": total, "what": what})

    with tempfile.TemporaryDirectory(prefix="cudalab-series-") as tmp:
        os.chmod(tmp, 0o755)  # the signature check's compiler may run as an unprivileged user (core.limits)
        staged = sub.stage(Path(tmp) / "staged")
        graded, swept, failed = section.graded_and_swept(
            lab, tasks, staged, limits, seed, sha256, tick=tick, rests=rests
        )
    if failed:  # the series is what the job is for: no series without its sweep
        raise CudalabError(f"the chapter's sweep could not be measured: {failed}")
    if swept.empty:  # the chapter's table is not in this data folder: the graded points alone
        swept = pd.concat(
            [
                series.as_table(
                    graded[graded["point"].isin({plan.point_label(p) for p, _ in t.points})], t, sha256
                ).assign(table=plan.recipe_of(t.yours.recipe).table)
                for t in plan.graded_once(tasks)
            ],
            ignore_index=True,
        ).assign(from_sweep=False)
    target = series_path(Path(job.out_dir), sha256)
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(target, lambda tmp: swept.to_csv(tmp, index=False))
    return target
