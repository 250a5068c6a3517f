"""Verdicts a grader can trust (issue 65, items 1-4 and 7), on the CPU: a point's answers judged in
the grader's process on inputs it draws itself, one verdict per student, ranks only for students
correct everywhere, and a rate past the physical ceiling never ranked.

A toy kit stands in for a kernel family (its "kernel" sorts an array): the judging, the seeds and
the ranking are the grader's and do not care what the family computes. Each test says which bug it
catches."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cudalab.chapter.declarations import CheckInput
from cudalab.grading import grade, trials
from cudalab.grading import results as R
from cudalab.labs.checks import Checks, InputKind, input_seed


def _draw(point, seed):
    return np.random.default_rng(seed).integers(-1000, 1000, size=int(point["n"]), dtype=np.int32)


def _draw_negative(point, seed):
    return -np.abs(_draw(point, seed)) - 1


TOY = Checks(
    timed="timed",
    kinds={"timed": InputKind("a random array", _draw), "negative": InputKind("an all-negative array", _draw_negative)},
    trial=lambda point, kernel_file, params: None,  # the toy's answers are written by the tests below
    expected=lambda point, x: {"sorted": np.sort(x)},
    verdict=lambda point, got, want, x: (
        "" if np.array_equal(got.get("sorted"), want["sorted"]) else "the array is not sorted"
    ),
    small=lambda p: {**p, "n": 8},
)
POINT = {"n": 64}
INPUTS = (CheckInput(input="negative", n=5), CheckInput(input="negative"))
KEY = trials.point_key("toy", POINT)


def _write_answers(folder: Path, seed: int, last: int, solve=np.sort, index: int = 0) -> list[trials.Answer]:
    """What an honest worker writes for point ``index``: each owed input solved by ``solve``."""
    owed = trials.answers_expected(TOY, seed, KEY, POINT, last, INPUTS)
    for j, answer in enumerate(owed):
        x = TOY.draw(answer.kind, {**POINT, "n": answer.n}, answer.seed)
        trials._save({"sorted": solve(x)}, trials.answer_file(folder, index, j))
    return owed


def _judge(folder: Path, seed: int, got: dict) -> dict:
    return trials.judge(TOY, POINT, got, seed, KEY, INPUTS, folder, 0, trials.Expected())


MEASURED = {"status": trials.MEASURED, "reason": "", "time_ms": 1.0, "last_timed": 3}


def test_right_answers_on_every_owed_input_are_ok_and_the_files_are_consumed(tmp_path):
    """Bug caught: a judge that never reads the answers (every point ok) would pass the next tests,
    this one checks the honest path and that judged files are removed."""
    _write_answers(tmp_path, 7, 3)
    out = _judge(tmp_path, 7, dict(MEASURED))
    assert out["status"] == R.OK and "last_timed" not in out
    assert not list(tmp_path.iterdir()), "every judged answer is removed"


def test_an_answer_wrong_only_on_a_harsh_input_is_wrong_and_names_that_input(tmp_path):
    """Bug caught: checking only the timed input (the labs' GenMatrix collapses to zeros and lets a
    kernel that skips rounds pass). Here the kernel is right unless every value is negative."""

    def sorts_unless_all_negative(x):
        return np.sort(x) if (x >= 0).any() else x

    _write_answers(tmp_path, 7, 3, solve=sorts_unless_all_negative)
    out = _judge(tmp_path, 7, dict(MEASURED))
    assert out["status"] == R.WRONG
    assert "an all-negative array at n = 5" in out["reason"], out["reason"]


def test_an_answer_cached_from_an_earlier_call_is_wrong(tmp_path):
    """Bug caught: timing repeated solves of one input and checking the last (a kernel that keeps
    the first call's answer and copies it back passed, at 6x the reference). The last timed call's
    answer is judged against the input the grader knows that call had."""
    owed = trials.answers_expected(TOY, 7, KEY, POINT, 3, INPUTS)
    first = TOY.draw("timed", POINT, trials.timed_seed(7, KEY, "timed", 0))
    for j, answer in enumerate(owed):
        x = TOY.draw(answer.kind, {**POINT, "n": answer.n}, answer.seed)
        trials._save({"sorted": np.sort(first if j == 0 else x)}, trials.answer_file(tmp_path, 0, j))
    out = _judge(tmp_path, 7, dict(MEASURED))
    assert out["status"] == R.WRONG and "the last timed call's input" in out["reason"]


def test_the_seeds_are_the_graders_and_each_input_is_fresh(tmp_path):
    """Bug caught: inputs drawn from a fixed seed (a submission passes the public seed and is wrong in
    general) or one input reused for every timed call (a cache across calls wins)."""
    seeds = {trials.timed_seed(7, KEY, "timed", i) for i in range(trials.POOL)}
    assert len(seeds) == trials.POOL, "every timed call solves an input of its own"
    assert trials.timed_seed(7, KEY, "timed", 0) != trials.timed_seed(8, KEY, "timed", 0), "a new run, new inputs"
    owed = trials.answers_expected(TOY, 7, KEY, POINT, 3, INPUTS)
    assert owed[1].seed not in seeds, "the untimed input is none of the timed ones"
    assert [a.n for a in owed] == [64, 64, 5, 64]
    assert input_seed(7, "x") == input_seed(7, "x"), "both processes derive the same seed"


def test_a_worker_that_lies_about_its_last_input_or_writes_nothing_is_wrong(tmp_path):
    """Bug caught: trusting the worker's report (an index out of range read as "no check") or a
    missing answer file read as right."""
    assert _judge(tmp_path, 7, {**MEASURED, "last_timed": 99})["status"] == R.WRONG
    out = _judge(tmp_path, 7, dict(MEASURED))
    assert out["status"] == R.WRONG and "no readable answer" in out["reason"]
    (tmp_path / "point0-answer0.npz").write_bytes(b"not an npz")
    assert _judge(tmp_path, 7, dict(MEASURED))["status"] == R.WRONG


def test_a_point_that_did_not_measure_keeps_its_own_status_and_a_workers_ok_is_never_taken(tmp_path):
    """A crashed or timed-out point is not turned into ok or wrong by the judge. Bug caught: a worker's
    own "ok" (a forged or a confused one) passing through as the verdict, skipping the grader's check."""
    crashed = {"status": R.CRASHED, "reason": "the kernel faulted"}
    assert _judge(tmp_path, 7, dict(crashed)) == crashed
    _write_answers(tmp_path, 7, 3, solve=lambda x: x)  # wrong answers, which an "ok" would hide
    assert _judge(tmp_path, 7, {"status": R.OK, "reason": "", "time_ms": 1.0})["status"] == "failed"


# ------------------------------------------------------------------------------ one verdict per student


def _row(student, point, status, time_ms=1.0, speed=1.0, fraction=0.5, chapter="04_blocking_factor"):
    return {
        "student": student,
        "chapter": chapter,
        "file": "fw_blocked.cu",
        "point": point,
        "status": status,
        "time_ms": time_ms if status == R.OK else None,
        "speed_vs_reference": speed if status == R.OK else None,
        "fraction_of_ceiling": fraction if status == R.OK else None,
        "reason": "" if status == R.OK else f"{status} here",
    }


def test_a_student_wrong_on_a_case_is_not_ranked_at_the_point_and_cases_are_never_ranked():
    """Bugs caught: points and cases ranked apart (a kernel wrong on 9 cases held rank 3 at the
    point), and points and cases ranked together in one group."""
    rows = [
        _row("fast_but_wrong_on_a_case", "n=3000", R.OK, time_ms=1.0),
        _row("fast_but_wrong_on_a_case", "case c01.in", R.WRONG),
        _row("right", "n=3000", R.OK, time_ms=2.0),
        _row("right", "case c01.in", R.OK, time_ms=5.0),
        _row("slow", "n=3000", R.OK, time_ms=3.0),
        _row("slow", "case c01.in", R.OK, time_ms=0.5),
    ]
    board = grade.scoreboard(rows).set_index(["student", "point"])
    assert pd.isna(board.loc[("fast_but_wrong_on_a_case", "n=3000"), "rank"])
    assert board.loc[("right", "n=3000"), "rank"] == 1 and board.loc[("slow", "n=3000"), "rank"] == 2
    assert board.loc[[i for i in board.index if i[1].startswith("case ")], "rank"].isna().all()


def test_the_verdicts_lead_with_one_row_per_student_ranked_by_the_geometric_mean():
    """Bugs caught: a student ranked by one point while wrong on another; an arithmetic mean
    (3x and 1/3x would average 1.67x, their geometric mean is 1x); the worst status hidden behind
    the first row's."""
    rows = [
        _row("even", "p1", R.OK, speed=3.0, fraction=0.6),
        _row("even", "p2", R.OK, speed=1 / 3, fraction=0.2),
        _row("steady", "p1", R.OK, speed=1.5),
        _row("steady", "p2", R.OK, speed=1.5),
        _row("half_wrong", "p1", R.OK, speed=9.0),
        _row("half_wrong", "p2", R.WRONG),
        _row("racy", "p1", R.OK, speed=2.0),
        _row("racy", "p2", R.RACE),
        {**_row("refused", "", R.REFUSED), "chapter": "", "file": "x.cu"},
    ]
    verdicts = grade.verdicts_of(grade.scoreboard(rows)).set_index("student")
    assert verdicts.loc["even", "speed_vs_reference_geomean"] == pytest.approx(1.0)
    assert verdicts.loc["even", "best_fraction_of_ceiling"] == pytest.approx(0.6)
    assert verdicts.loc["steady", "rank"] == 1 and verdicts.loc["even", "rank"] == 2
    assert verdicts.loc["half_wrong", "verdict"] == R.WRONG and pd.isna(verdicts.loc["half_wrong", "rank"])
    assert verdicts.loc["racy", "verdict"] == R.RACE and "p2" in verdicts.loc["racy", "reason"]
    assert verdicts.loc["refused", "verdict"] == R.REFUSED
    assert list(verdicts.index[:2]) == ["steady", "even"], "ranked students first"


# ------------------------------------------------------------------------------ the physical ceiling


def test_a_rate_past_the_ceiling_beyond_both_spreads_is_above_the_ceiling_and_not_ranked():
    """Bug caught: a copying kernel ranked first at 212% of the add+min ceiling. Within the spreads
    a rate at the ceiling stays a result (a kernel may reach it)."""
    from cudalab.chapter.declarations import Yours
    from cudalab.grading.plan import ChapterTask

    yours = Yours(recipe="x:Y", points=({"n": 1000},), rate="n ** 3 / (time_ms * 1e-3)", rate_unit="/s", ceiling="c")
    task = ChapterTask("04_blocking_factor", yours, (({"n": 1000}, "fw_blocked.cu"),))
    ceiling = 1e12  # 1000^3 relaxations in 1 ms
    fast = {"status": R.OK, "time_ms": 0.5, "time_ms_q1": 0.49, "time_ms_q3": 0.51}
    scored = grade._scored({"n": 1000}, fast, {"status": R.OK, "time_ms": 2.0}, task, ceiling, 0.05)
    assert scored["status"] == R.ABOVE_CEILING and "200%" in scored["reason"]
    near = {"status": R.OK, "time_ms": 0.97, "time_ms_q1": 0.95, "time_ms_q3": 1.0}
    assert grade._scored({"n": 1000}, near, {}, task, ceiling, 0.02)["status"] == R.OK
    board = grade.scoreboard(
        [{**_row("copier", "n=1000", R.OK), **scored}, _row("honest", "n=1000", R.OK, time_ms=2.0)]
    )
    assert board.set_index("student").loc["copier", "rank"] is pd.NA
    assert board.set_index("student").loc["honest", "rank"] == 1


def test_spread_is_the_interquartile_range_over_the_median():
    assert R.spread({"time_ms": 2.0, "time_ms_q1": 1.5, "time_ms_q3": 2.5}) == pytest.approx(0.5)
    assert R.spread({"time_ms": 2.0}) == 0.0
    assert not R.above_ceiling(1.2, 0.1, 1.0, 0.1), "20% over, with 20% of spread together: not beyond"
    assert R.above_ceiling(1.25, 0.1, 1.0, 0.1)


# ------------------------------------------------------------------------------ folders


def test_a_linked_or_hidden_student_folder_is_a_refused_row_with_why(tmp_path):
    """Bug caught: such folders were dropped without a word."""
    klass = tmp_path / "class"
    (klass / "alice").mkdir(parents=True)
    (klass / ".bob").mkdir()
    (klass / "carol").symlink_to(tmp_path)
    refused = dict(grade.refused_folders(klass))
    assert set(refused) == {".bob", "carol"}
    assert "hidden" in refused[".bob"] and "link" in refused["carol"]
    assert [p.name for p in grade.students(klass)] == ["alice"]


def test_an_input_is_drawn_once_a_process_read_only_and_never_for_another_launch():
    """``trials.Drawn``: the same kind, point and seed give the same array without a second draw; a
    point that differs only in its launch draws its own (a kind may read the launch); what is kept
    cannot be written, and the oldest goes first past the byte limit."""
    import numpy as np

    from cudalab.labs.checks import Checks, InputKind

    draws = []

    def make(point, seed):
        draws.append((point["blocks"], seed))
        return np.full(1000, seed, dtype=np.int32)  # 4000 bytes

    kit = Checks(timed="t", kinds={"t": InputKind("an array", make)}, trial=None, expected=None, verdict=None,
                 small=None, input_axes=("n",))  # fmt: skip
    cache = trials.Drawn(limit=10_000)
    a = cache.draw(kit, "t", {"n": 1000, "blocks": 4}, 1)
    assert cache.draw(kit, "t", {"n": 1000, "blocks": 4}, 1) is a and draws == [(4, 1)]
    cache.draw(kit, "t", {"n": 1000, "blocks": 8}, 1)  # the same seed, another launch: drawn for it
    assert draws == [(4, 1), (8, 1)]
    with pytest.raises(ValueError):
        a[0] = 7
    cache.draw(kit, "t", {"n": 1000, "blocks": 4}, 2)  # 12,000 bytes: the oldest (blocks 4, seed 1) goes
    cache.draw(kit, "t", {"n": 1000, "blocks": 4}, 1)
    assert draws[-1] == (4, 1) and len(draws) == 4


def test_a_kit_whose_inputs_read_only_their_axes_shares_each_input_and_answer_across_launches():
    """``Checks.inputs_only``: a Floyd-Warshall graph is the same at every blocking factor, so the
    points at one n share each input and its answer (``trials.input_key``), drawn and computed once;
    ``draw_many`` draws each missing input once however often it is wanted, and keeps the order."""
    import numpy as np

    from cudalab.labs.checks import Checks, InputKind

    draws, solves = [], []

    def make(point, seed):
        draws.append((point["n"], seed))
        return np.full(10, seed, dtype=np.int32)

    def expected(point, host_input):
        solves.append(point["bf"])
        return {"sum": host_input.sum()}

    kit = Checks(timed="t", kinds={"t": InputKind("an array", make)}, trial=None, expected=expected, verdict=None,
                 small=None, input_axes=("n",), inputs_only=True)  # fmt: skip
    cache = trials.Drawn()
    got = cache.draw_many(
        kit, [("t", {"n": 10, "bf": 8}, 1), ("t", {"n": 10, "bf": 16}, 1), ("t", {"n": 10, "bf": 8}, 2)]
    )
    assert [int(g[0]) for g in got] == [1, 1, 2] and got[0] is got[1]
    assert sorted(draws) == [(10, 1), (10, 2)]
    assert cache.draw(kit, "t", {"n": 10, "bf": 32}, 2) is got[2] and len(draws) == 2
    assert cache.draw(kit, "t", {"n": 20, "bf": 8}, 2) is not got[2] and len(draws) == 3  # another n: its own

    answer = trials.Answer("t", 10, 1, "a check input")
    expected_once = trials.Expected()
    first = expected_once.of(kit, {"n": 10, "bf": 8}, answer)[1]
    assert expected_once.of(kit, {"n": 10, "bf": 64}, answer)[1] is first and solves == [8]
    # the same kit without the promise keys both by the whole point
    whole = Checks(timed="t", kinds=kit.kinds, trial=None, expected=expected, verdict=None, small=None,
                   input_axes=("n",))  # fmt: skip
    other = trials.Expected()
    other.of(whole, {"n": 10, "bf": 8}, answer), other.of(whole, {"n": 10, "bf": 64}, answer)
    assert solves == [8, 8, 64]


def test_an_answer_is_a_folder_of_npy_arrays_read_without_links_or_pickles(tmp_path):
    """``trials._save`` / ``_load``: one ``.npy`` per array (no archive's checksum over a 1 GiB
    answer); a link or another file in the folder is not read, an array of objects (a pickle) makes
    the answer unreadable, and an array's name must be a plain identifier."""
    import numpy as np

    path = trials.answer_file(tmp_path, 0, 1)
    trials._save({"distances": np.arange(6, dtype=np.int32).reshape(2, 3), "count": np.int64(2)}, path)
    got = trials._load(path)
    assert set(got) == {"distances", "count"} and got["distances"].tolist() == [[0, 1, 2], [3, 4, 5]]
    (path / "stolen.npy").symlink_to(path / "count.npy")
    (path / "notes.txt").write_text("ignored")
    assert set(trials._load(path)) == {"distances", "count"}
    np.save(path / "evil.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    assert trials._load(path) is None
    with pytest.raises(ValueError):
        trials._save({"../escape": np.int64(1)}, trials.answer_file(tmp_path, 0, 2))
