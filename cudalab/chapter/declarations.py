"""What a chapter declares about itself, beside its notebook: ``notebooks/NN_name.yaml``.

The notebook tells the story and measures; its declarations say what the rest of cudalab takes
from it, so that nothing central lists chapters by name:

- ``figures``: the main figures ``build_report.py --compare`` draws of it, one colour per source;
- ``ceilings``: the ceilings it measures that later chapters judge their kernels by
  (``lab.ceilings()``): where each is read from its own tables (a table, the rows, a value);
- ``shows_lab_device``: the references list the lab GPU's deviceQuery values under it;
- ``explore``: the explorer's first view, the one that answers the chapter's first question (a
  table, x, y, colour, facet and filters);
- ``handout``: the kernels a student works on (listed in full; the others named) and the tables
  the student fills in;
- ``yours``: how a student's kernel file is measured in this chapter (``build_report.py
  --kernels``, ``--grade``): the chapter's point recipe, the points measured with the reference
  and the student's file alike, the rate a row reaches and the ceiling it is a fraction of; a
  list of such groups where the chapter's kernel files need more than one recipe.

A chapter's point recipe for the explorer is declared in its kernel family's module and handed to
the explorer by its notebook (``labs.points``); its seed is its notebook's ``seed`` parameter.
A chapter without a declarations file declares nothing (no figure in ``--compare``, no ceiling).
An unknown key or a value of the wrong type is a ``CudalabError`` naming the file and the key.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Literal

import pandas as pd
import yaml
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from cudalab.chapter import catalog
from cudalab.core.errors import CudalabError
from cudalab.core.paths import NOTEBOOKS_DIR

SUFFIX = ".yaml"  # notebooks/NN_name.ipynb declares itself in notebooks/NN_name.yaml


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Figure(_Strict):
    """A chapter's main figure in ``--compare``: ``y`` over ``x`` from ``table``, a line per source
    and ``series`` value (``kind: line``), or bars of ``y`` per ``x`` value (``kind: bar``, a bar
    per source); ``best_over`` reduces the other axes to the best value (smallest time, largest
    rate)."""

    table: str
    x: str
    y: str
    series: str | None = None
    ylabel: str
    title: str
    kind: Literal["line", "bar"] = "line"
    logx: bool = False
    logy: bool = False
    best_over: tuple[str, ...] = ()


class MeasuredNow(_Strict):
    """How a ceiling is measured on its own, in a run that is not chapter 00's (a class graded):
    ``measure`` ("module:function", called with ``timing=``) returns rows shaped like the ceiling's
    table, and the ceiling's ``where``, ``ok_only`` and ``reduce`` pick from them; ``value`` is the
    expression over those rows where it differs from the recorded table's."""

    measure: str
    value: str | None = None


class Ceiling(_Strict):
    """One ceiling a chapter offers the chapters after it, read from its own recorded table.

    The rows of ``table`` (``<table>.csv`` in the chapter's data folder) that match ``where``
    (column: value), and only those whose ``status`` is ok where ``ok_only``; of them the row with
    the largest ``best`` column, or all of them; ``value`` (a pandas expression over the table's
    columns, such as ``value * 1e9``) on those rows, reduced by ``reduce`` (``max``, ``min``) or
    taken from the first. Nothing is offered where the table, a row, a listed ``columns`` entry or
    the ceiling named by ``needs`` is missing."""

    about: str
    table: str
    value: str
    where: dict[str, str] = {}
    ok_only: bool = False
    best: str | None = None
    reduce: Literal["max", "min"] | None = None
    columns: tuple[str, ...] = ()
    needs: str | None = None
    now: MeasuredNow | None = None

    def read(self, folder: Path) -> float | None:
        """This ceiling from the chapter's data ``folder`` (this build's, or a recording's), or None."""
        path = folder / f"{self.table}.csv"
        if not path.is_file():
            return None
        return self.pick(pd.read_csv(path))

    def pick(self, rows: pd.DataFrame, value: str | None = None) -> float | None:
        """This ceiling from ``rows`` shaped like its table (``value``: another expression over
        them), or None where no row qualifies."""
        for column, wanted in self.where.items():
            rows = rows[rows[column].astype(str).eq(str(wanted))] if column in rows else rows.iloc[0:0]
        if self.ok_only and "status" in rows:
            rows = rows[rows["status"].eq("ok")]
        if not len(rows) or not set(self.columns) <= set(rows.columns):
            return None
        if self.best is not None:
            rows = rows.loc[[rows[self.best].idxmax()]]
        values = rows.eval(value or self.value, engine="python")
        value = getattr(values, self.reduce)() if self.reduce else values.iloc[0]
        return float(value)


class View(_Strict):
    """The explorer's first view of a chapter: ``y`` over ``x`` from ``table``, a line per
    ``colour`` value ("source": one per source), a panel per ``facet`` value, only the rows whose
    columns hold the listed ``filters`` values, log scales where ``logx``/``logy`` (unset: where
    the values span decades). Any column of the table may be an axis, not only the recorded ones."""

    table: str
    x: str
    y: str
    colour: str = ""
    facet: str = ""
    filters: dict[str, tuple[bool | int | float | str, ...]] = {}
    logx: bool | None = None
    logy: bool | None = None


class Handout(_Strict):
    """What a chapter's handout prints: the ``kernels`` the student works on, listed in full (the
    others are named by file), and the recorded ``tables`` the student fills in (whole)."""

    kernels: tuple[str, ...] = ()
    tables: tuple[str, ...] = ()


class Cases(_Strict):
    """An instructor's hidden inputs a chapter takes (``--grade --cases DIR``): the files of DIR with
    ``suffix``, solved by each submission as ``kind`` ("module:NAME" of a ``grading.cases.CaseKind``)
    says, and checked against the answer the grader computes, as the kind checks it (the NTHU
    graphs byte for byte)."""

    suffix: str
    kind: str


class CheckInput(_Strict):
    """One input every graded point of a group is also checked on: its ``input`` kind (a name of
    the kit's ``kinds``) and, where it differs from the point's, the size it is drawn at (``n``)."""

    input: str
    n: int | None = None


class CheckKit(_Strict):
    """How a graded point is checked outside the process its kernel runs in (``labs.checks``):
    ``kit`` ("module:NAME" of a ``labs.checks.Checks``, in the kernel family's module) and the
    harsh ``inputs`` the chapter declares, each drawn with a fresh seed every grading run."""

    kit: str
    inputs: tuple[CheckInput, ...] = ()
    fresh: bool = True  # also a fresh input of the timed kind (a sweep's other points: their first harsh input is it)


class Yours(_Strict):
    """How a student's kernel file is measured in this chapter, beside the reference: ``recipe``
    names the chapter's point recipe (``"cudalab.labs.fw.points:BLOCK_SIZE"``, a
    ``labs.points.PointRecipe``); each of ``points`` is one point of it (its axes and choices),
    measured with the reference file and with the student's file that the point builds from;
    ``rate`` is an expression over a measured row giving what it reaches per second, in
    ``rate_unit``, and ``ceiling`` names the ceiling (chapter 00's ``ceilings``, in the same unit)
    it is a fraction of. A point's time is its row's ``time_ms`` (``time: row``), or, for a
    recipe that times each iteration's stages, the median iteration's stages summed (``time:
    median_iteration``). Few points: a class of thirty is graded on them in minutes. ``checks``: the
    inputs each point is also checked on, and the family's kit that draws, solves and judges them
    (``CheckKit``). ``series_axes``: the values of the recipe's table's axes that a point of the
    student's series stands for where its point does not decide them (chapter 06's ``stage_times``
    holds several stages at each point, and a series' time is the whole iteration's: ``stage:
    whole iteration``), so that the explorer draws it there."""

    recipe: str
    points: tuple[dict[str, bool | int | float | str], ...]
    time: Literal["row", "median_iteration"] = "row"
    rate: str | None = None
    rate_unit: str = ""
    ceiling: str | None = None
    cases: Cases | None = None
    checks: CheckKit | None = None
    series_axes: dict[str, bool | int | float | str] = {}


class Declarations(_Strict):
    """Everything one chapter declares (see the module docstring); empty for a chapter without a file."""

    figures: tuple[Figure, ...] = ()
    ceilings: dict[str, Ceiling] = {}
    shows_lab_device: bool = False
    explore: View | None = None
    handout: Handout = Handout()
    yours: tuple[Yours, ...] = ()  # one group per point recipe; a single mapping is one group
    # the columns of the lab's published tables that say which row is its best, each with the way
    # that is best ("max": a speedup; "min": a time), tried in order after time_ms (--compare)
    published_best: dict[str, Literal["min", "max"]] = {}

    @field_validator("yours", mode="before")
    @classmethod
    def _one_or_many(cls, value):
        return [value] if isinstance(value, dict) else value

    def read_ceilings(self, folder: Path) -> dict[str, float]:
        """The ceilings this chapter offers, as its data ``folder`` holds them (in declaration
        order, so that a ceiling may need one declared before it)."""
        found: dict[str, float] = {}
        for name, ceiling in self.ceilings.items():
            if ceiling.needs is not None and ceiling.needs not in found:
                continue
            value = ceiling.read(folder)
            if value is not None:
                found[name] = value
        return found


def path_of(chapter: catalog.ChapterInfo) -> Path:
    """Where ``chapter`` declares itself: its notebook's name with ``.yaml``."""
    return chapter.path.with_suffix(SUFFIX)


@cache
def _load(path: Path, stamp: float) -> Declarations:
    try:
        data = yaml.safe_load(path.read_text()) or {}
        return Declarations.model_validate(data)
    except yaml.YAMLError as exc:
        raise CudalabError(f"{path}: not valid YAML: {exc}") from None
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise CudalabError(f"{path}: {problems}") from None


def of(chapter: catalog.ChapterInfo | str, notebooks_dir: Path = NOTEBOOKS_DIR) -> Declarations:
    """The declarations of ``chapter`` (a ``ChapterInfo`` or its id), read from its file."""
    info = catalog.chapter(chapter, notebooks_dir) if isinstance(chapter, str) else chapter
    path = path_of(info)
    return _load(path, path.stat().st_mtime) if path.is_file() else Declarations()


def offering_ceilings(notebooks_dir: Path = NOTEBOOKS_DIR) -> list[str]:
    """The chapters that declare ceilings for the chapters after them, in order."""
    return [c.id for c in catalog.discover(notebooks_dir) if of(c).ceilings]


def ceiling_declared(name: str, notebooks_dir: Path = NOTEBOOKS_DIR) -> Ceiling | None:
    """The ceiling called ``name`` as the chapter that offers it declares it, or None."""
    for chapter in offering_ceilings(notebooks_dir):
        found = of(chapter, notebooks_dir).ceilings.get(name)
        if found is not None:
            return found
    return None
