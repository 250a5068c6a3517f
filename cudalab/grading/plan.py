"""What a submission is measured on: for each chapter that declares ``yours`` (its
``notebooks/NN_name.yaml``), the points whose kernel file the submission replaces.

A chapter names its point recipe by module and attribute (``"cudalab.labs.fw.points:BLOCK_SIZE"``)
so that nothing here lists chapters: a new chapter that declares ``yours`` is graded as it is.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from dataclasses import dataclass
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

    @property
    def files(self) -> list[str]:
        """The kernel files these points build from, in order."""
        return list(dict.fromkeys(f for _, f in self.points))


def named(spec: str, kind: type, field: str) -> Any:
    """The object ``"module:NAME"`` names, which must be a ``kind`` (a declaration's ``field`` says
    which); a ``CudalabError`` saying why where it names none."""
    module, _, name = spec.partition(":")
    try:
        found = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError, ValueError):
        raise CudalabError(f"{field} {spec!r} names nothing (module:NAME of a cudalab module)") from None
    if not isinstance(found, kind):
        raise CudalabError(f"{field} {spec!r} is not a {kind.__module__}.{kind.__name__}")
    return found


def recipe_of(spec: str) -> PointRecipe:
    """The point recipe ``"module:NAME"`` names."""
    return named(spec, PointRecipe, "yours.recipe")


def point_label(point: dict[str, Any]) -> str:
    """A point as a table names it: ``n=2048, block_edge=16``."""
    return ", ".join(f"{k}={v}" for k, v in point.items())


def chapter_task(chapter: str, files: Iterable[str] | None = None, notebooks_dir=NOTEBOOKS_DIR) -> ChapterTask | None:
    """``chapter``'s points that build from one of ``files`` (all its points where None), or None
    where the chapter declares no ``yours`` or no point builds from those files."""
    yours = declarations.of(chapter, notebooks_dir).yours
    if yours is None:
        return None
    recipe = recipe_of(yours.recipe)
    wanted = None if files is None else set(files)
    points = tuple(
        (dict(p), f) for p in yours.points if (f := recipe.kernel_file_for(dict(p))) and (wanted is None or f in wanted)
    )
    return ChapterTask(chapter, yours, points) if points else None


def tasks_for(files: Iterable[str], only: Iterable[str] = (), notebooks_dir=NOTEBOOKS_DIR) -> list[ChapterTask]:
    """Every chapter (of ``only``, where given) that measures one of ``files``, in chapter order."""
    files = list(files)
    chosen = set(only)
    tasks = []
    for info in catalog.discover(notebooks_dir):
        if chosen and info.id not in chosen and info.number not in chosen:
            continue
        task = chapter_task(info.id, files, notebooks_dir)
        if task is not None:
            tasks.append(task)
    return tasks


def measured_files(notebooks_dir=NOTEBOOKS_DIR) -> dict[str, list[str]]:
    """Each kernel file some chapter measures a student's copy of -> those chapters (for messages:
    which file to copy for which chapter)."""
    found: dict[str, list[str]] = {}
    for info in catalog.discover(notebooks_dir):
        task = chapter_task(info.id, None, notebooks_dir)
        for f in task.files if task else []:
            found.setdefault(f, []).append(info.id)
    return found
