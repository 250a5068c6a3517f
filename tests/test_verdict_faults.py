"""The grader's own faults, caught on the CPU (issue 65, item 6: "verdicts you can trust").

Five deliberate bugs in the grader once passed every CPU test. Each test here says which of them it
kills; ``docs/mutation-testing.md`` says how each was shown to fail under its bug, and how the
modules that decide a verdict are mutation-tested (``make mutants``):

1. a check that accepts a small share of wrong entries (``core.check``, ``grading.cases``, the
   families' checks): ``test_one_wrong_entry_*`` here and in ``tests/test_check.py``;
2. points and cases ranked together (``grade.scoreboard``): ``test_ranks_*``;
3. an include accepted by its base name: ``tests/test_submission.py``,
   ``test_an_include_of_a_path_is_refused_even_where_its_base_name_is_the_students_own``;
4. the kernel's stdout routed onto the results pipe (``grading.isolate``):
   ``test_a_forgery_printed_after_*``;
5. a point's status decided by its first row only (``results.one_time``): ``test_one_time_*``.

The rest pins the other words and numbers ``grading.results`` gives the scoreboard (the
mutation tests' survivors, killed)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cudalab.grading import grade, isolate
from cudalab.grading import results as R
from cudalab.labs import checks
from cudalab.labs.fw import cases as fw_cases
from cudalab.labs.kmeans import cases as km_cases

# ------------------------------------------------------------------------------ 1. one wrong entry


def test_one_wrong_entry_of_an_nthu_answer_is_wrong(tmp_path):
    """Bug 1 (``cases.differs``): a byte-for-byte answer with one int32 of 250,000 changed is wrong
    and says how many; an answer of the right length with every entry right is right."""
    expected = np.arange(500 * 500, dtype="<i4").tobytes()
    answer = tmp_path / "answer.out"
    answer.write_bytes(expected)
    assert checks.differs(answer, expected) == ""
    wrong = bytearray(expected)
    wrong[-4:] = (7).to_bytes(4, "little")
    answer.write_bytes(bytes(wrong))
    assert checks.differs(answer, expected) == "1 of 250,000 int32 entries differ from the reference solver's answer"
    answer.write_bytes(expected[:-4])
    assert checks.differs(answer, expected) == "the output has 999,996 bytes, the expected 1,000,000"
    assert checks.differs(tmp_path / "none.out", expected) == "wrote no output"
    assert fw_cases.NTHU.verdict(answer, expected) == ("the output has 999,996 bytes, the expected 1,000,000", "")


def _kmeans_expected(early, tie, final, iterations) -> bytes:
    return b"".join(
        [
            np.asarray(early, "<i4").tobytes(),
            np.asarray(tie, np.uint8).tobytes(),
            np.asarray(final, "<i4").tobytes(),
            np.asarray([iterations], "<i4").tobytes(),
        ]
    )


def test_one_object_in_the_wrong_cluster_of_a_kmeans_case_is_wrong(tmp_path):
    """Bug 1 (``labs.kmeans.cases.KMEANS``): one object of 100,000 outside the sequential code's cluster, and
    not near a tie, is wrong, named; the same move at a near tie is right."""
    n = 100_000
    early = np.arange(n, dtype=np.int32) % 16
    expected = _kmeans_expected(early, np.zeros(n), early, 5)
    moved = early.copy()
    moved[n - 1] = (moved[n - 1] + 1) % 16
    answer = tmp_path / "answer.out"
    answer.write_bytes(b"".join(np.asarray(a, "<i4").tobytes() for a in (moved, early, [5])))
    why, note = km_cases.KMEANS.verdict(answer, expected)
    assert why == (
        f"after iteration 2, 1 of {n:,} objects are outside the sequential code's cluster and not near a tie "
        f"(object {n - 1}: cluster {moved[n - 1]}, expected {early[n - 1]})"
    )
    assert note == ""
    tie = np.zeros(n)
    tie[n - 1] = 1
    why, note = km_cases.KMEANS.verdict(answer, _kmeans_expected(early, tie, early, 5))
    assert why == "" and note == "whole run: 100.00% of objects in the sequential code's cluster, 5 iterations (its 5)"


def test_one_wrong_distance_of_a_graded_floyd_warshall_point_is_wrong():
    """Bug 1 (the chapter 04 kit's verdict, judged in the grader): one distance of a million."""
    from cudalab.labs.fw.checks import verdict

    want = np.arange(1000 * 1000, dtype=np.int32).reshape(1000, 1000)
    got = want.copy()
    got[999, 998] += 1
    said = verdict({"n": 1000}, {"distances": got}, {"distances": want}, want)
    assert said.startswith("1 of 1,000,000 distances differ (d[999][998] = "), said
    assert verdict({"n": 1000}, {"distances": want.copy()}, {"distances": want}, want) == ""


# ------------------------------------------------------------------------------ 2. ranks


def _row(student, point, status=R.OK, time_ms=1.0, chapter="04_blocking_factor", **more):
    return {
        "student": student,
        "chapter": chapter,
        "file": "fw_blocked.cu",
        "point": point,
        "status": status,
        "time_ms": time_ms,
        "reason": "" if status == R.OK else f"{status} here",
        **more,
    }


def _ranks(board: pd.DataFrame) -> dict[tuple[str, str, str], object]:
    return {(r.chapter, r.point, r.student): (None if pd.isna(r.rank) else int(r.rank)) for r in board.itertuples()}


def test_ranks_are_per_chapter_and_point_never_across_points():
    """Bug 2: ranked by chapter alone (or by student), a fast point would outrank another point's
    rows: every student here is ranked among the others at the same point only."""
    rows = [
        _row("ann", "n=1000", time_ms=1.0),
        _row("bob", "n=1000", time_ms=2.0),
        _row("ann", "n=3000", time_ms=30.0),
        _row("bob", "n=3000", time_ms=20.0),
        _row("ann", "n=1000", time_ms=9.0, chapter="01_block_size"),
        _row("bob", "n=1000", time_ms=8.0, chapter="01_block_size"),
    ]
    assert _ranks(grade.scoreboard(rows)) == {
        ("04_blocking_factor", "n=1000", "ann"): 1,
        ("04_blocking_factor", "n=1000", "bob"): 2,
        ("04_blocking_factor", "n=3000", "bob"): 1,
        ("04_blocking_factor", "n=3000", "ann"): 2,
        ("01_block_size", "n=1000", "bob"): 1,
        ("01_block_size", "n=1000", "ann"): 2,
    }


def test_ranks_never_put_a_case_row_in_a_points_group_and_cases_hold_no_rank():
    """Bug 2: a case row ranked with the point rows (its time is a whole solve, not the point's)
    moves the points' ranks; a case row never holds a rank of its own either."""
    rows = [
        _row("ann", "n=3000", time_ms=2.0),
        _row("ann", "case c01.in", time_ms=0.1),
        _row("bob", "n=3000", time_ms=1.0),
        _row("bob", "case c01.in", time_ms=0.2),
        _row("cyd", "n=3000", time_ms=3.0),
        _row("cyd", "case c01.in", time_ms=0.05),
    ]
    assert _ranks(grade.scoreboard(rows)) == {
        ("04_blocking_factor", "n=3000", "bob"): 1,
        ("04_blocking_factor", "n=3000", "ann"): 2,
        ("04_blocking_factor", "n=3000", "cyd"): 3,
        ("04_blocking_factor", "case c01.in", "ann"): None,
        ("04_blocking_factor", "case c01.in", "bob"): None,
        ("04_blocking_factor", "case c01.in", "cyd"): None,
    }


def test_ranks_go_fastest_first_ties_share_the_better_rank_and_the_next_skips():
    rows = [_row(s, "p", time_ms=t) for s, t in (("a", 3.0), ("b", 1.0), ("c", 1.0), ("d", 2.0))]
    board = grade.scoreboard(rows)
    assert _ranks(board) == {
        ("04_blocking_factor", "p", "b"): 1,
        ("04_blocking_factor", "p", "c"): 1,
        ("04_blocking_factor", "p", "d"): 3,
        ("04_blocking_factor", "p", "a"): 4,
    }
    assert list(board["student"]) == ["b", "c", "d", "a"], "sorted by rank, then by student"
    assert str(board["rank"].dtype) == "Int64"


def test_ranks_need_an_ok_status_a_time_and_a_student_right_everywhere():
    """Only an ok row with a time, of a student whose every row is ok, holds a rank: a wrong point
    elsewhere (even another chapter's), or a point not run, takes every rank away."""
    rows = [
        _row("right", "p", time_ms=5.0),
        _row("untimed", "p", time_ms=None),
        _row("wrong_elsewhere", "p", time_ms=1.0),
        _row("wrong_elsewhere", "q", status=R.WRONG, time_ms=1.0, chapter="01_block_size"),
        _row("not_run_elsewhere", "p", time_ms=2.0),
        _row("not_run_elsewhere", "q", status=R.NOT_RUN, time_ms=None),
        _row("slow", "p", time_ms=9.0),
    ]
    ranks = _ranks(grade.scoreboard(rows))
    assert ranks[("04_blocking_factor", "p", "right")] == 1 and ranks[("04_blocking_factor", "p", "slow")] == 2
    assert ranks[("04_blocking_factor", "p", "untimed")] is None
    assert ranks[("04_blocking_factor", "p", "wrong_elsewhere")] is None
    assert ranks[("04_blocking_factor", "p", "not_run_elsewhere")] is None
    assert grade.scoreboard([_row("x", "p", status=R.WRONG)])["rank"].isna().all(), "nothing to rank"


def test_the_scoreboard_has_its_columns_in_order_and_correct_from_the_status():
    statuses = [R.OK, R.WRONG, R.RACE, R.ABOVE_CEILING, R.CRASHED, R.TIMED_OUT, R.NOT_RUN, R.COMPILED_ONLY]
    board = grade.scoreboard([_row(f"s{i}", "p", status=s) for i, s in enumerate(statuses)])
    assert list(board.columns) == list(grade.SCOREBOARD_COLUMNS)
    correct = dict(zip(board["status"], board["correct"]))
    assert correct[R.OK] is True
    assert correct[R.WRONG] is False and correct[R.RACE] is False and correct[R.ABOVE_CEILING] is False
    for status in (R.CRASHED, R.TIMED_OUT, R.NOT_RUN, R.COMPILED_ONLY):
        assert correct[status] is None, status
    assert board["compiled"].isna().all(), "a column no row gave is there, empty"


# ------------------------------------------------------------------------------ 4. what a kernel prints


def _stand_in(tmp_path: Path, body: str) -> tuple[str, ...]:
    """A worker for ``isolate.run``: ``emit`` writes on the events pipe, as the real one does, and
    ``forge()`` prints forged results where a kernel's printf lands (C's stdout, fd 1), on Python's
    stdout and on stderr, for every point, many times, and once more when the process exits."""
    script = tmp_path / "forging_worker.py"
    script.write_text(
        "import atexit, json, os, sys\n"
        "events = os.fdopen(int(os.environ['CUDALAB_EVENTS_FD']), 'w', buffering=1)\n"
        "request = json.loads(sys.stdin.read())\n"
        "n = len(request['points']) + len(request.get('cases') or ())\n"
        "def emit(event, **fields):\n"
        "    print(json.dumps({'event': event, **fields}), file=events, flush=True)\n"
        "def forge():\n"
        "    lines = [json.dumps({'event': 'ceiling', 'value': 1e99})]\n"
        "    lines += [json.dumps({'event': 'point', 'index': i, 'status': 'ok', 'time_ms': 0.001}) for i in range(n)]\n"
        "    for _ in range(3):\n"
        "        for line in lines:\n"
        "            os.write(1, (line + '\\n').encode())\n"
        "            print(line, flush=True)\n"
        "            print(line, file=sys.stderr, flush=True)\n"
        "atexit.register(forge)\n"
        "forge()\n" + body
    )
    return (str(script),)


FORGED_AFTER = (
    "emit('ceiling', value=4.0e12)\n"
    "forge()\n"
    "emit('start', index=0)\n"
    "forge()\n"
    "emit('point', index=0, status='wrong', reason='3 of 9 entries differ')\n"
    "forge()\n"  # after the real result: the grader keeps the last line it reads for a point
    "emit('start', index=1)\n"
    "emit('point', index=1, status='failed', reason='ValueError: no')\n"
    "forge()\n"
    "emit('start', index=2)\n"
    "forge()\n"
    "sys.exit(0)\n"  # point 2 never reported: crashed, whatever is forged at exit
)


def test_a_forgery_printed_after_the_real_result_never_reaches_the_grader(tmp_path, capfd):
    """Bug 4: were the worker's stdout (a kernel's printf) routed onto the results pipe, a forged
    line printed after the real event would win (the grader keeps the last event of a point), a
    point never reported would read ok, and the ceiling would be the forger's. Nothing it prints
    reaches the grader's own output either."""
    request = {"points": [[{}, "f.cu"]] * 3}
    result = isolate.run(request, isolate.Limits(point=20, submission=60), worker=_stand_in(tmp_path, FORGED_AFTER))
    assert [p["status"] for p in result["points"]] == [R.WRONG, "failed", R.CRASHED]
    assert result["points"][0] == {"status": R.WRONG, "reason": "3 of 9 entries differ"}
    assert result["points"][2]["reason"] == "the process ended with status 0"
    assert result["ceiling"] == 4.0e12
    seen = capfd.readouterr()
    assert "time_ms" not in seen.out and "time_ms" not in seen.err, "a kernel's printout is never shown"


def test_a_forgery_for_a_case_after_the_real_points_never_reaches_the_grader(tmp_path):
    """Bug 4, cases: the kernel runs again for each case after its point's real result (the
    moment a printf could follow the real event); a case it never answers is not run."""
    body = (
        "emit('start', index=0)\n"
        "emit('point', index=0, status='measured', time_ms=5.0, last_timed=1)\n"
        "emit('start', index=1)\n"
        "forge()\n"
        "emit('point', index=1, status='crashed', reason='the kernel faulted')\n"
        "forge()\n"
        "sys.exit(3)\n"
    )
    request = {"points": [[{}, "f.cu"]], "cases": [["a.in", "a.out"], ["b.in", "b.out"]]}
    result = isolate.run(request, worker=_stand_in(tmp_path, body))
    assert [p["status"] for p in result["points"]] == ["measured", R.CRASHED, R.NOT_RUN]
    assert result["points"][0] == {"status": "measured", "time_ms": 5.0, "last_timed": 1}


def test_the_real_workers_events_go_on_their_own_pipe_and_a_later_forgery_loses(tmp_path):
    """Bug 4, the worker's side (``_worker_target.main`` and ``_emit``): its events go on the
    descriptor the grader names, never on stdout; a forgery printed after them, and at exit,
    changes nothing."""
    script = tmp_path / "real_worker.py"
    script.write_text(
        "import atexit, json, os, sys\n"
        "from cudalab.grading import _worker_target as W\n"
        "FORGED = json.dumps({'event': 'point', 'index': 0, 'status': 'ok', 'time_ms': 0.001})\n"
        "def forge():\n"
        "    for _ in range(3):\n"
        "        os.write(1, (FORGED + '\\n').encode())\n"
        "        print(FORGED, flush=True)\n"
        "def measure(request):\n"
        "    W._emit('start', index=0)\n"
        "    W._emit('point', index=0, status='wrong', reason=str(len(request['points'])) + ' entries differ')\n"
        "    forge()\n"
        "    return 0\n"
        "W.measure = measure\n"
        "atexit.register(forge)\n"
        "sys.exit(W.main())\n"
    )
    env = isolate.scrubbed_env(tmp_path)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parent.parent)
    result = isolate.run({"points": [[{}, "f.cu"]]}, env=env, worker=(str(script),))
    assert result["points"] == [{"status": R.WRONG, "reason": "1 entries differ"}]


# ------------------------------------------------------------------------------ 5. a recipe's rows


def _rows(*rows) -> pd.DataFrame:
    return pd.DataFrame(list(rows))


@pytest.mark.parametrize("bad_at", [1, 2])
def test_one_time_takes_every_rows_status_not_the_first_only(bad_at):
    """Bug 5: a recipe may return several rows for one point (one per iteration, per stage, per
    input); any row that is not ok makes the point not ok, wherever it stands."""
    rows = [{"status": R.OK, "reason": "", "time_ms": 1.0} for _ in range(3)]
    rows[bad_at] = {"status": R.WRONG, "reason": "2 of 9 entries differ", "time_ms": 1.0}
    out = R.one_time(_rows(*rows), "row")
    assert out == {"status": R.WRONG, "reason": "2 of 9 entries differ", "time_ms": 1.0}


def test_one_time_names_the_first_row_that_is_not_ok():
    rows = _rows(
        {"status": R.OK, "reason": "", "time_ms": 1.0},
        {"status": R.RACE, "reason": "a hazard in /home/grader/x/k.cu", "time_ms": 2.0},
        {"status": R.WRONG, "reason": "later", "time_ms": 3.0},
    )
    assert R.one_time(rows, "row") == {"status": R.RACE, "reason": "a hazard in k.cu", "time_ms": 1.0}


def test_one_time_of_a_row_without_a_reason_says_none():
    rows = _rows({"status": R.OK, "time_ms": 1.0}, {"status": R.WRONG, "reason": None, "time_ms": 2.0})
    assert R.one_time(rows, "row") == {"status": R.WRONG, "reason": "", "time_ms": 1.0}
    assert R.one_time(_rows({"status": R.WRONG, "time_ms": 1.0}), "row")["reason"] == ""


def test_one_time_of_no_rows_is_not_run_and_rows_without_a_status_are_ok():
    assert R.one_time(None, "row") == {"status": R.NOT_RUN, "reason": "the recipe measured no row"}
    assert R.one_time(pd.DataFrame(), "row") == {"status": R.NOT_RUN, "reason": "the recipe measured no row"}
    assert R.one_time(_rows({"time_ms": 2.0}, {"time_ms": 3.0}), "row") == {
        "status": R.OK,
        "reason": "",
        "time_ms": 2.0,
    }


def test_one_time_gives_no_time_where_no_row_has_one():
    assert R.one_time(_rows({"status": R.OK}), "row") == {"status": R.OK, "reason": ""}
    untimed = _rows({"status": R.OK, "time_ms": None}, {"status": R.OK, "time_ms": None})
    assert R.one_time(untimed, "row") == {"status": R.OK, "reason": ""}
    wrong = _rows({"status": R.WRONG, "reason": "x", "time_ms": None})
    assert R.one_time(wrong, "median_iteration") == {"status": R.WRONG, "reason": "x"}


def test_one_time_by_row_is_the_first_rows_time_and_quartiles():
    rows = _rows(
        {"status": R.OK, "time_ms": 2.0, "time_ms_q1": 1.5, "time_ms_q3": 2.5},
        {"status": R.OK, "time_ms": None, "time_ms_q1": 9.0, "time_ms_q3": 9.0},
    )
    out = R.one_time(rows, "row")
    assert out == {"status": R.OK, "reason": "", "time_ms": 2.0, "time_ms_q1": 1.5, "time_ms_q3": 2.5}
    assert all(type(out[k]) is float for k in ("time_ms", "time_ms_q1", "time_ms_q3"))
    partial = _rows({"status": R.OK, "time_ms": 2.0, "time_ms_q1": None, "time_ms_q3": 2.5})
    assert R.one_time(partial, "row") == {"status": R.OK, "reason": "", "time_ms": 2.0, "time_ms_q3": 2.5}


def test_one_time_by_median_iteration_sums_each_iterations_stages():
    """Chapter 06: a row per stage per iteration; the point's time is the median iteration's
    total, with the quartiles of the iterations' totals."""
    stages = []
    for iteration, total in enumerate([10.0, 30.0, 20.0, 40.0, 50.0]):
        stages += [
            {"status": R.OK, "iteration": iteration, "stage": "assign", "time_ms": total * 0.75},
            {"status": R.OK, "iteration": iteration, "stage": "update", "time_ms": total * 0.25},
        ]
    out = R.one_time(_rows(*stages), "median_iteration")
    assert out == {"status": R.OK, "reason": "", "time_ms": 30.0, "time_ms_q1": 20.0, "time_ms_q3": 40.0}
    assert all(type(out[k]) is float for k in ("time_ms", "time_ms_q1", "time_ms_q3"))
    assert R.one_time(_rows(*stages), "row")["time_ms"] == 7.5, "by row: the first row's"
    flat = _rows({"status": R.OK, "time_ms": 4.0}, {"status": R.OK, "time_ms": 6.0})
    assert R.one_time(flat, "median_iteration")["time_ms"] == 4.0, "no iteration column: the first row's"


# ------------------------------------------------------------------------------ the rest of results


def test_scrubbed_cuts_every_folder_of_a_path_and_keeps_the_files_name():
    said = R.scrubbed("cannot open /home/grader/secret/answers.bin, nor C:\\x\\y.cu; see (/tmp/a/log)")
    assert said == "cannot open answers.bin, nor y.cu; see (log)"
    assert R.scrubbed("a lone /root") == "a lone /root", "a path needs a folder and a name"
    assert R.scrubbed("fw_blocked.cu:103: expected a ';'") == "fw_blocked.cu:103: expected a ';'"


def test_scrubbed_makes_one_line_within_the_limit():
    assert R.scrubbed("  two\n  lines\tand  blanks ") == "two lines and blanks"
    assert R.scrubbed(ValueError("at /a/b/c")) == "at c", "an exception is read as its message"
    assert R.scrubbed("x" * 400) == "x" * 400
    assert R.scrubbed("x" * 401) == "x" * 399 + "…"
    assert R.scrubbed("abcdef", limit=4) == "abc…"
    assert R.scrubbed("abcd", limit=4) == "abcd"
    assert len(R.scrubbed("y" * 1000)) == 400


def test_a_compile_failure_names_the_file_and_line_never_the_path():
    class Failure:
        def __init__(self, line):
            self.path = Path("/home/grader/staged/ann/fw_blocked.cu")
            self.line = line
            self.message = "expected a ';'  in /usr/include/x.h"

    assert R.compile_failure(Failure(103)) == "fw_blocked.cu:103: expected a ';' in x.h"
    assert R.compile_failure(Failure(None)) == "fw_blocked.cu: expected a ';' in x.h"
    assert R.compile_failure(Failure(0)) == "fw_blocked.cu: expected a ';' in x.h"


def test_a_rate_is_the_chapters_expression_over_the_point_and_its_time():
    point = {"n": 1000, "block_factor": 32}
    assert R.rate_of(point, 2.0, "n ** 3 / (time_ms * 1e-3)") == pytest.approx(5e11)
    assert type(R.rate_of(point, 2.0, "n / time_ms")) is float
    assert R.rate_of(point, 2.0, None) is None
    assert R.rate_of(point, None, "n / time_ms") is None
    assert R.rate_of(point, 0.0, "n / time_ms") is None
    assert R.rate_of(point, -1.0, "n / time_ms") is None
    assert R.rate_of(point, float("nan"), "n / time_ms") is None


def test_spread_needs_a_median_and_both_quartiles():
    assert R.spread({"time_ms": 2.0, "time_ms_q1": 1.5, "time_ms_q3": 2.5}) == pytest.approx(0.5)
    for missing in ("time_ms", "time_ms_q1", "time_ms_q3"):
        full = {"time_ms": 2.0, "time_ms_q1": 1.5, "time_ms_q3": 2.5}
        del full[missing]
        assert R.spread(full) == 0.0, missing
    assert R.spread({"time_ms": 0.0, "time_ms_q1": 0.0, "time_ms_q3": 1.0}) == 0.0
    assert R.spread({"time_ms": -1.0, "time_ms_q1": 0.0, "time_ms_q3": 1.0}) == 0.0
    assert R.spread({"time_ms": 2.0, "time_ms_q1": 2.5, "time_ms_q3": 1.5}) == 0.0, "never negative"
    assert R.spread({"time_ms": 4.0, "time_ms_q1": 3.0, "time_ms_q3": 4.0}) == pytest.approx(0.25)


def test_above_the_ceiling_is_past_it_by_more_than_both_spreads():
    assert R.above_ceiling(1.25, 0.1, 1.0, 0.1)
    assert not R.above_ceiling(1.2, 0.1, 1.0, 0.1), "exactly at the spreads: still a result"
    assert not R.above_ceiling(1.2, 0.2, 1.0, 0.0) and R.above_ceiling(1.21, 0.2, 1.0, 0.0)
    assert not R.above_ceiling(1.2, 0.0, 1.0, 0.2) and R.above_ceiling(1.21, 0.0, 1.0, 0.2)
    assert R.above_ceiling(2.0, 0.0, 1.5, 0.0) and not R.above_ceiling(1.5, 0.0, 1.5, 0.0)
    assert not R.above_ceiling(None, 0.0, 1.0, 0.0)
    assert not R.above_ceiling(5.0, 0.0, None, 0.0) and not R.above_ceiling(5.0, 0.0, 0.0, 0.0)
    assert not R.above_ceiling(5.0, 0.0, -1.0, 0.0)
    assert not R.above_ceiling(5.0, 0.0, float("nan"), 0.0)


def test_a_file_is_shown_by_its_name_and_progress_says_each_points_status():
    assert R.shown_file("/home/grader/class/ann/fw_blocked.cu") == "fw_blocked.cu"
    assert R.shown_file(Path("a/b.cu")) == "b.cu"
    result = {"points": [{"status": R.OK}, {"status": "solved"}, {"status": R.WRONG}], "wall_s": 3.14159}
    assert R.progress_line("ann", "04_blocking_factor", result) == (
        "graded ann 04_blocking_factor: ok, case answered, wrong (3.1 s)"
    )


def test_the_statuses_are_the_words_the_scoreboard_and_the_pages_print():
    """The status words are read by people and matched by the pages and the verdicts: a changed word
    is a changed scoreboard."""
    assert (R.YOURS, R.REFERENCE, R.OK, R.WRONG) == ("yours", "reference", "ok", "wrong")
    assert (R.DOES_NOT_COMPILE, R.MISFIT) == ("does not compile", "does not fit the launch")
    assert (R.CRASHED, R.TIMED_OUT, R.NOT_RUN, R.REFUSED) == ("crashed", "timed out", "not run", "refused")
    assert (R.COMPILED_ONLY, R.RACE, R.ABOVE_CEILING) == ("compiled only", "race", "above the ceiling")


def test_the_worker_is_started_as_the_module_the_grader_names():
    assert isolate.WORKER == ("-m", "cudalab.grading._worker_target")
