"""The grader's mutation score on a GPU (issue 65, item 6): every mutant of tests/data/mutants/ is
graded as a class beside an unchanged copy of each file it edits, with every check the grader
makes (fresh timed inputs, the harsh inputs each chapter declares, the physical ceiling and, where
the host has compute-sanitizer, racecheck and synccheck). Every mutant must be caught (its verdict
not "correct", never ranked) and every unchanged copy ranked: the score, caught of all, is 100%."""

from __future__ import annotations

import time

import pandas as pd
import pytest

from cudalab.grading import grade, isolate, pages
from tests import mutants as M

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    base = tmp_path_factory.mktemp("mutants")
    klass = M.materialize(base / "class")
    out = pages.prepare(base / "out")
    started = time.monotonic()
    options = grade.GradeOptions(klass, out, arch=grade.arch_for(None), limits=isolate.Limits(point=60, submission=300))
    result = grade.grade(options, log=print)
    pages.write(result, out, title="mutants")
    print(f"graded {len(M.load())} mutants in {time.monotonic() - started:.0f} s")
    return result


def test_every_mutant_is_caught_and_every_unchanged_copy_is_ranked(graded):
    verdicts = graded.students.set_index("student")
    with pd.option_context("display.width", 250, "display.max_colwidth", 120):
        print(
            verdicts[
                ["verdict", "rank", "speed_vs_reference_geomean", "best_fraction_of_ceiling", "reason"]
            ].to_string()
        )
    mutants = M.load()
    caught = [m.name for m in mutants if verdicts.loc[m.name, "verdict"] != "correct"]
    assert all(pd.isna(verdicts.loc[m.name, "rank"]) for m in mutants), "a mutant holds a rank"
    print(f"mutation score: {len(caught)} of {len(mutants)} caught ({len(caught) / len(mutants):.0%})")
    assert not graded.failures, graded.failures
    missed = sorted(set(m.name for m in mutants) - set(caught))
    assert not missed, f"not caught: {missed}"
    for file in {m.file for m in mutants}:
        copy = M.copy_name(file)
        assert verdicts.loc[copy, "verdict"] == "correct", (copy, verdicts.loc[copy, "reason"])
        assert not pd.isna(verdicts.loc[copy, "rank"]), copy
        speed = verdicts.loc[copy, "speed_vs_reference_geomean"]
        assert 0.8 < speed < 1.25, f"{copy}: the reference's own code at {speed:.2f}x the reference"
