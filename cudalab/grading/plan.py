"""What a submission is measured on: for each chapter that declares ``yours`` (its
``notebooks/NN_name.yaml``), the points whose kernel file the submission replaces.

A chapter names its point recipe by module and attribute (``"cudalab.labs.fw.points:BLOCK_SIZE"``)
so that nothing here lists chapters: a new chapter that declares ``yours`` is graded as it is.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cudalab.chapter import catalog, declarations
from cudalab.core.errors import CudalabError
from cudalab.core.paths import NOTEBOOKS_DIR
from cudalab.labs.points import PointRecipe


@dataclass(frozen=True)
class ChapterTask:
    """One chapter's share of a submission: the points measured (each with the kernel file it
    builds from) and how a row becomes one result (``declarations.Yours``)."""

    chapter: str
    yours: declarations.Yours
    points: tuple[tuple[dict[str, Any], str], ...]
    group: int = 0  # which of the chapter's ``yours`` groups

    @property
    def key(self) -> tuple[str, int]:
        """Which chapter and group: a reference is measured once per key."""
        return self.chapter, self.group

    @property
    def folder_name(self) -> str:
        """The key as a folder name: the chapter, with its group after a dot where not the first."""
        return self.chapter if self.group == 0 else f"{self.chapter}.{self.group}"

    def request(
        self,
        folder: Path | None,
        params: dict[str, Any],
        *,
        ceiling: bool = False,
        cases: list[tuple[Path, Path]] = (),
        seed: int = 0,
        answers: Path | None = None,
    ) -> dict[str, Any]:
        """The worker's request (``_worker_target``) for this task: the staged submission ``folder``
        (None: the reference files), the chapter's ``params``, whether to measure its ceiling
        first, the ``cases`` to solve (case file, answer file), the grading run's ``seed`` and the
        folder the worker writes its points' ``answers`` to (``grading.trials``)."""
        return {
            "chapter": self.chapter,
            "group": self.group,
            "folder": str(folder) if folder is not None else None,
            "points": [[p, f] for p, f in self.points],
            "params": params,
            "ceiling": self.yours.ceiling if ceiling else None,
            "cases": [[str(c), str(a)] for c, a in cases],
            "seed": int(seed),
            "answers": str(answers) if answers is not None else None,
            # what each point is checked on: the worker solves these, no more (a sweep's points, fewer)
            "checks": self.yours.checks.model_dump(mode="json") if self.yours.checks is not None else None,
        }

    def keeping(self, points: tuple[tuple[dict[str, Any], str], ...]) -> ChapterTask:
        """This task with other points."""
        return ChapterTask(self.chapter, self.yours, points, self.group)

    @property
    def files(self) -> list[str]:
        """The kernel files these points build from, in order."""
        return list(dict.fromkeys(f for _, f in self.points))


@dataclass(frozen=True)
class Batch:
    """Several of one chapter's tasks measured in one process per source (``grading.section``: the
    graded points and the sweep's, every group's, in one worker for the student's files and one for
    the reference's): their points in order, each point with its own task's group and checks. The
    worker's request (``_worker_target``) and the sanitizer's (``_sanitize_target``) carry
    ``parts``: per task, in order, its group, how many of ``points`` are its, and its checks."""

    tasks: tuple[ChapterTask, ...]

    def __post_init__(self) -> None:
        if not self.tasks or len({t.chapter for t in self.tasks}) != 1:
            raise ValueError("a batch holds one or more tasks of one chapter")

    @property
    def chapter(self) -> str:
        return self.tasks[0].chapter

    @property
    def points(self) -> tuple[tuple[dict[str, Any], str], ...]:
        """Every task's points, in order."""
        return tuple(p for t in self.tasks for p in t.points)

    @property
    def files(self) -> list[str]:
        """The kernel files these points build from, in order."""
        return list(dict.fromkeys(f for _, f in self.points))

    def firsts(self) -> list[int]:
        """Where each task's points start in ``points``."""
        out, at = [], 0
        for t in self.tasks:
            out.append(at)
            at += len(t.points)
        return out

    def request(
        self,
        folder: Path | None,
        params: dict[str, Any],
        *,
        seed: int = 0,
        answers: Path | None = None,
    ) -> dict[str, Any]:
        """The worker's request for every task's points at once (``ChapterTask.request``, with
        ``parts``); no ceiling and no cases (a grading run's, per task)."""
        first = self.tasks[0].request(folder, params, seed=seed, answers=answers)
        return {
            **first,
            "points": [[p, f] for p, f in self.points],
            "parts": [
                {
                    "group": t.group,
                    "points": len(t.points),
                    "checks": t.yours.checks.model_dump(mode="json") if t.yours.checks is not None else None,
                }
                for t in self.tasks
            ],
        }


def request_parts(request: dict[str, Any]) -> list[tuple[int, Any]]:
    """Each of the request's points -> (its group, the checks it is asked for): from its ``parts``
    (``Batch``), else the request's one ``group`` and ``checks`` for every point. A ``ValueError``
    where the parts do not cover the points exactly."""
    points = len(request["points"])
    parts = request.get("parts")
    if not parts:
        return [(int(request.get("group", 0)), request.get("checks"))] * points
    out = [(int(part["group"]), part.get("checks")) for part in parts for _ in range(int(part["points"]))]
    if len(out) != points:
        raise ValueError(f"the request's parts cover {len(out)} points, not its {points}")
    return out


def graded_once(tasks: Iterable[ChapterTask]) -> list[ChapterTask]:
    """``tasks`` (a chapter's groups, in order) with each graded build measured once: a later group's
    point that builds the same file at the same point, by the same recipe and with the same checks,
    as an earlier group's is left out, and groups left with no point are dropped (a point declared
    with other checks keeps them). A file graded at two different points keeps both, each with
    every check and its race check: chapter 04 grades ``fw_blocked.cu`` at BF 32 (its first group)
    and at the ladder's step 7 (BF 64 in 22 registers), two builds, so a race or an edge case that
    only one of them has is still caught."""
    graded: set[tuple[str, ...]] = set()
    out = []
    for task in tasks:
        how = json.dumps([task.yours.recipe, task.yours.checks.model_dump(mode="json") if task.yours.checks else None])
        keys = [(f, json.dumps(p, sort_keys=True, default=str), how) for p, f in task.points]
        kept = tuple(point for point, key in zip(task.points, keys) if key not in graded)
        graded |= set(keys)
        if kept:
            out.append(task.keeping(kept))
    return out


def named(spec: str, kind: type, field: str) -> Any:
    """The object ``"module:NAME"`` names, which must be a ``kind`` (a declaration's ``field`` says
    which); a ``CudalabError`` saying why where it names none."""
    module, _, name = spec.partition(":")
    try:
        imported = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (module == exc.name or module.startswith(exc.name + ".")):
            raise CudalabError(
                f"{field} {spec!r} names nothing: no module {module} (module:NAME of a cudalab module)"
            ) from None
        raise CudalabError(f"{field} {spec!r}: its module {module} cannot be imported: {exc}") from None
    except (ImportError, ValueError) as exc:
        raise CudalabError(f"{field} {spec!r}: its module {module} cannot be imported: {exc}") from None
    found = getattr(imported, name, None)
    if found is None:
        raise CudalabError(f"{field} {spec!r} names nothing: {module} has no {name!r} (module:NAME)")
    if not isinstance(found, kind):
        raise CudalabError(f"{field} {spec!r} is not a {kind.__module__}.{kind.__name__}")
    return found


def recipe_of(spec: str) -> PointRecipe:
    """The point recipe ``"module:NAME"`` names."""
    return named(spec, PointRecipe, "yours.recipe")


def point_label(point: dict[str, Any]) -> str:
    """A point as a table names it: ``n=2048, block_edge=16``."""
    return ", ".join(f"{k}={v}" for k, v in point.items())


def chapter_tasks(chapter: str, files: Iterable[str] | None = None, notebooks_dir=NOTEBOOKS_DIR) -> list[ChapterTask]:
    """``chapter``'s tasks, one per ``yours`` group, with the points that build from one of
    ``files`` (all its points where None); none where it declares no ``yours`` or no point builds
    from those files."""
    wanted = None if files is None else set(files)
    tasks = []
    for group, yours in enumerate(declarations.of(chapter, notebooks_dir).yours):
        recipe = recipe_of(yours.recipe)
        points = tuple(
            (dict(p), f)
            for p in yours.points
            if (f := recipe.kernel_file_for(dict(p))) and (wanted is None or f in wanted)
        )
        if points:
            tasks.append(ChapterTask(chapter, yours, points, group))
    return tasks


def tasks_for(files: Iterable[str], only: Iterable[str] = (), notebooks_dir=NOTEBOOKS_DIR) -> list[ChapterTask]:
    """Every chapter (of ``only``, where given) that measures one of ``files``, in chapter order."""
    files = list(files)
    chosen = set(only)
    tasks = []
    for info in catalog.discover(notebooks_dir):
        if chosen and info.id not in chosen and info.number not in chosen:
            continue
        tasks += chapter_tasks(info.id, files, notebooks_dir)
    return tasks


def measured_files(notebooks_dir=NOTEBOOKS_DIR) -> dict[str, list[str]]:
    """Each kernel file some chapter measures a student's copy of -> those chapters (for messages:
    which file to copy for which chapter)."""
    found: dict[str, list[str]] = {}
    for info in catalog.discover(notebooks_dir):
        for task in chapter_tasks(info.id, None, notebooks_dir):
            for f in task.files:
                if info.id not in found.setdefault(f, []):
                    found[f].append(info.id)
    return found


def chapters_measuring(kernels: Iterable[str], notebooks_dir=NOTEBOOKS_DIR) -> list[str]:
    """The one rule for which chapters measure a student's files: those whose declared points
    (each chapter's ``yours``, built by its point recipe) launch one of ``kernels``, in order.
    ``build_report.py --kernels`` and every caller of ``report.build.run`` with a submission take
    their chapters from here (``BuildOptions.measuring``)."""
    wanted = set(kernels)
    return sorted({c for name, chapters in measured_files(notebooks_dir).items() if name in wanted for c in chapters})


def case_takers(only: Iterable[str] = (), notebooks_dir=NOTEBOOKS_DIR) -> dict[str, tuple[str, str]]:
    """Each chapter (of ``only``, where given) that takes an instructor's hidden inputs -> the
    (suffix, kind) its ``yours`` declares (``--cases``)."""
    chosen = set(only)
    takers = {}
    for info in catalog.discover(notebooks_dir):
        if chosen and info.id not in chosen and info.number not in chosen:
            continue
        for yours in declarations.of(info.id, notebooks_dir).yours:
            if yours.cases is not None:
                takers.setdefault(info.id, (yours.cases.suffix, yours.cases.kind))
    return takers
