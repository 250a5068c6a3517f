"""A student's file judged once per chapter (``grading.file_verdicts``), and the report's first page
leading with it (``report.stitch``): a wrong point counts no speed, and the chapters' own summary
is titled as the reference's, never under the student's file."""

from __future__ import annotations

import pandas as pd
import pytest

from cudalab.grading import file_verdicts
from cudalab.grading import results as R
from cudalab.report import stitch


def _rows(*points: tuple[str, str, float, float, float | None]) -> pd.DataFrame:
    """A chapter's yours.csv: for each (point, status, time_ms, reference time_ms, fraction), the
    reference's row and the student's."""
    rows = []
    for point, status, mine, ref, fraction in points:
        rows.append({"point": point, "file": "fw_blocked.cu", "source": R.REFERENCE, "status": R.OK, "time_ms": ref})
        rows.append(
            {
                "point": point,
                "file": "fw_blocked.cu",
                "source": R.YOURS,
                "status": status,
                "time_ms": mine if status == R.OK else None,
                "speed_vs_reference": ref / mine if status == R.OK else None,
                "fraction_of_ceiling": fraction if status == R.OK else None,
                "ceiling": "add_min_per_s",
                "reason": "" if status == R.OK else "3 of 9 entries differ",
            }
        )
    return pd.DataFrame(rows)


def test_a_correct_file_gets_its_best_point_mean_and_slowest():
    frame = _rows(("n=3000, BF 32", R.OK, 2.0, 4.0, 0.30), ("n=3000, BF 64", R.OK, 4.0, 2.0, 0.15))
    (v,) = file_verdicts.of_chapter(frame, "04_blocking_factor", timed=True)
    assert v.correct and v.file == "fw_blocked.cu"
    assert v.best == "n=3000, BF 32: 2.000 ms, 30.0% of add_min_per_s"
    assert v.geomean_x == pytest.approx(1.0)  # 2x and 0.5x
    assert v.slowest == "0.50x at n=3000, BF 64"
    assert v.said.startswith("correct and 1.00x the reference (geometric mean of 2 points")


def test_a_wrong_point_is_the_verdict_and_counts_no_speed():
    frame = _rows(("n=3000, BF 32", R.OK, 1.0, 4.0, 0.60), ("n=1025, BF 32", R.WRONG, 0, 2.0, None))
    (v,) = file_verdicts.of_chapter(frame, "04_blocking_factor", timed=True)
    assert not v.correct
    assert v.said == "wrong at n=1025, BF 32: 3 of 9 entries differ"
    assert (v.best, v.geomean_x, v.slowest) == ("", None, "")


def test_compiled_only_names_registers_and_occupancy_at_the_graded_points():
    compiled = pd.DataFrame(
        [
            {"file": "fw_blocked.cu", "source": s, "point": "n=3000, BF 32", "kernel": "phase3", "status": "ok"}
            for s in (R.REFERENCE, R.YOURS)
        ]
    )
    occupancy = pd.DataFrame(
        [
            {"point": "n=3000, BF 32", "kernel": "phase3", "threads_per_block": 1024, "source": R.REFERENCE,
             "registers_per_thread": 30, "occupancy_fraction": 1.0},
            {"point": "n=3000, BF 32", "kernel": "phase3", "threads_per_block": 1024, "source": R.YOURS,
             "registers_per_thread": 40, "occupancy_fraction": 0.5},
        ]
    )  # fmt: skip
    (v,) = file_verdicts.of_chapter(compiled, "04_blocking_factor", timed=False, occupancy=occupancy)
    assert v.correct and v.said == R.COMPILED_ONLY
    assert v.compiled == "n=3000, BF 32: phase3 40 registers, 50% occupancy (reference 30, 100%)"


def _cover(verdicts):
    scorecard = {"best": "min-plus BF 512", "speedup_x": 229.9, "baseline": "basic"}
    outcome = stitch.ChapterOutcome("04_blocking_factor", "04 Blocking factor", None, True, "", 1.0, {})
    return stitch.cover_cell(
        title="t",
        profile="gtx680",
        lab_gpu="GTX 680",
        mode="measure",
        built_utc="now",
        command="c",
        outcomes=[outcome],
        scorecards={"04_blocking_factor": scorecard},
        submission={"folder": "me", "files": {"fw_blocked.cu": "ab" * 32}, "kernels": ["fw_blocked.cu"]},
        verdicts=verdicts,
    ).source


def test_the_first_page_leads_with_the_students_results_and_titles_the_summary_as_the_reference():
    frame = _rows(("n=3000, BF 32", R.OK, 1.0, 4.0, 0.60), ("n=1025, BF 32", R.WRONG, 0, 2.0, None))
    page = _cover([v.as_dict() for v in file_verdicts.of_chapter(frame, "04_blocking_factor", timed=True)])
    results, reference = page.index("Your results"), page.index("the reference, not yours")
    assert results < page.index("229.9x") and reference < page.index("229.9x")
    assert results < page.index("<h2>Your kernels</h2>") < reference
    assert "wrong at n=1025, BF 32" in page and "60.0%" not in page  # the correct point's best is not shown
    assert "<h2>Summary</h2>" not in page


def test_a_plain_build_keeps_its_summary():
    page = stitch.cover_cell(
        title="t", profile="gtx680", lab_gpu="GTX 680", mode="measure", built_utc="now", command="c",
        outcomes=[stitch.ChapterOutcome("04_blocking_factor", "04 B", None, True, "", 1.0, {})],
        scorecards={"04_blocking_factor": {"best": "x", "speedup_x": 2.0, "baseline": "b"}},
    ).source  # fmt: skip
    assert "<h2>Summary</h2>" in page and "Your results" not in page
