"""A student's file across the chapter's sweep (``grading.series``, issue 67 item 1), without a GPU:
the sweep's points are the rows of the recipe's table that build from the submitted file and that
the file builds for; the measuring is stood in for; what is drawn and judged is real."""

from __future__ import annotations

from types import SimpleNamespace

import matplotlib
import pandas as pd
import pytest

from cudalab.core.paths import RESULTS_DIR
from cudalab.grading import file_verdicts, plan, section, series
from cudalab.grading import results as R

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)

SHA = "0123456789abcdef" * 4


def _table() -> pd.DataFrame:
    """Chapter 04's blocking-factor sweep as an H200 build writes it: the shared kernel at BF 8-128,
    the register-tiled one beside it."""
    rows = [
        {"n": n, "block_factor": bf, "kernel": k, "variant": f"{k} BF {bf}", "time_ms": 1.0, "status": "ok"}
        for n in (8192, 16384)
        for k, bfs in (("shared", (8, 16, 32, 64, 128)), ("registers", (64, 128)))
        for bf in bfs
    ]
    return pd.DataFrame(rows)


def _task() -> plan.ChapterTask:
    task, _ladder = plan.chapter_tasks("04_blocking_factor", ["fw_blocked.cu"])  # the blocked kernels, the ladder
    return task


def test_the_sweep_is_every_point_of_the_table_the_file_builds_for():
    builds = series.builds_for(_task().yours, "9.0")
    whole = series.sweep_task(_task(), _table(), {"fw_blocked.cu"}, builds)
    assert [(p["n"], p["block_factor"], p["kernel"]) for p, _ in whole.points] == [
        (n, bf, "shared") for n in (8192, 16384) for bf in (8, 16, 32, 64, 128)
    ], "the register-tiled rows are another file's (BF 128 builds on a 9.0 GPU: 128 KiB of shared memory)"
    assert {f for _, f in whole.points} == {"fw_blocked.cu"}
    assert series.sweep_task(_task(), _table(), {"fw_blocked_minplus.cu"}, builds) is None
    only_small = series.sweep_task(_task(), _table(), {"fw_blocked.cu"}, lambda p: p["block_factor"] <= 64)
    assert {p["block_factor"] for p, _ in only_small.points} == {8, 16, 32, 64}


def _measured(task, wrong_at=()):
    """What ``section.measured`` returns: a row per point and source."""
    rows = []
    for point, file in task.points:
        bad = point["block_factor"] in wrong_at
        for source, ms in ((R.REFERENCE, 2.0), (R.YOURS, 1.0)):
            mine = source == R.YOURS
            if point["block_factor"] == 128:  # a point neither file builds for on this GPU
                rows.append({"point": plan.point_label(point), "file": file, "source": source,
                             "status": R.MISFIT, "time_ms": None, "reason": "too much shared memory"})  # fmt: skip
                continue
            rows.append(
                {
                    "point": plan.point_label(point),
                    "file": file,
                    "source": source,
                    "status": R.WRONG if mine and bad else R.OK,
                    "time_ms": None if mine and bad else ms * point["block_factor"],
                    "speed_vs_reference": None if mine and bad else (2.0 if mine else None),
                    "fraction_of_ceiling": None,
                    "reason": "2 entries differ" if mine and bad else "",
                }
            )
    return pd.DataFrame(rows)


@pytest.fixture
def lab(tmp_path, monkeypatch):
    _table().to_csv(tmp_path / "blocking_factor_sweep.csv", index=False)
    calls = []

    def measured_together(lab, parts, staged, limits, seed=0, tick=None):
        calls.append(list(parts))
        return [_measured(task, () if race_checks else (32,)) for task, race_checks in parts]  # the sweep wrong at 32

    monkeypatch.setattr(section, "measured_together", measured_together)
    return SimpleNamespace(id="04_blocking_factor", out_dir=str(tmp_path), mode="measure", profile=None, calls=calls)


def test_the_series_is_measured_labelled_and_a_wrong_point_counts_against_the_file(lab, tmp_path):
    task = _task()
    graded, swept, failed = section.graded_and_swept(lab, [task], tmp_path, None, 7, {"fw_blocked.cu": SHA})
    assert not failed and graded.equals(_measured(task))
    mine = swept[swept["series"].eq("yours 01234567")]
    assert set(swept["series"]) == {"yours 01234567", R.REFERENCE}
    assert len(mine) == 1 + 8, "the graded point, then the sweep's eight (BF 128: the reference refused it)"
    assert list(mine[mine["from_sweep"]]["block_factor"].unique()) == [8, 16, 32, 64]
    assert (mine[mine["block_factor"].eq(32) & mine["from_sweep"]]["status"] == R.WRONG).all()
    # the verdict counts the sweep: wrong at BF 32 is the file's verdict, and no speed is counted
    rows = pd.concat([graded, swept[swept["from_sweep"]]], ignore_index=True)
    (v,) = file_verdicts.of_chapter(rows, task.chapter, timed=True)
    assert not v.correct and v.said.startswith("wrong at n=8192, block_factor=32, kernel=shared")
    assert v.geomean_x is None


def test_a_wrong_point_is_a_cross_at_the_foot_never_a_time(lab, tmp_path):
    task = _task()
    _, swept, _ = section.graded_and_swept(lab, [task], tmp_path, None, 7, {"fw_blocked.cu": SHA})
    (spec,) = [f for f in series.figures_of(task.chapter, "blocking_factor_sweep")]
    fig = series.draw(swept, spec.x, spec.y, title=spec.title, ylabel=spec.ylabel, logx=False, logy=True,
                      by=series.point_keys(task, swept))  # fmt: skip
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    lines = {line.get_label(): list(line.get_xdata()) for line in ax.get_lines()}
    assert lines["yours 01234567, 32, shared"] == [3000], "BF 32: the graded point alone; the wrong ones draw no time"
    assert lines["yours 01234567, 16, shared"] == [8192, 16384] and "reference, 16, shared" in labels
    assert "yours: wrong (no time)" in labels
    (crosses,) = [c for c in ax.collections if c.get_label() == "yours: wrong (no time)"]
    assert [tuple(xy) for xy in crosses.get_offsets()] == [(8192, 0.03), (16384, 0.03)]


def test_a_point_the_chapter_skipped_is_no_point_of_the_series():
    """The chapter's sweep skips a solve over its time budget (16384 at BF 8-32 on an H200): it is in
    none of its figures, so the student's series does not spend minutes measuring it."""
    table = _table()
    over = table["n"].eq(16384) & table["block_factor"].le(32)
    table.loc[over, ["status", "time_ms"]] = ["skipped", None]
    whole = series.sweep_task(_task(), table, {"fw_blocked.cu"})
    got = {(p["n"], p["block_factor"]) for p, _ in whole.points}
    assert (16384, 8) not in got and (16384, 64) in got and (8192, 8) in got
    assert len(got) == 5 + 2


def test_sweep_points_are_checked_on_a_timed_and_a_fresh_harsh_input_the_graded_ones_on_every_check(lab, tmp_path):
    """Issue 67: a sweep point is checked on its timed input and one fresh input, a harsh one of its
    size (a GenMatrix graph alone passed a kernel wrong at BF 16 on the H200), without the race
    checks; the graded points keep every check input and a fresh one of the timed kind (measured
    before, by the section). The worker is asked for those answers and no others."""
    from cudalab.grading import trials

    task = _task()
    assert task.yours.checks.inputs, "chapter 04 declares check inputs"
    section.graded_and_swept(lab, [task], tmp_path, None, 7, {"fw_blocked.cu": SHA})
    (((graded, graded_races), (swept, race_checks)),) = lab.calls  # one measurement: the graded point, the sweep
    assert graded == task and graded_races is True
    # the first harsh input at the point's own size (chapter 04: a sparse graph), no other
    assert [c.input for c in swept.yours.checks.inputs] == ["sparse"] and race_checks is False
    assert swept.yours.checks.inputs[0].n is None and swept.yours.checks.fresh is False
    assert swept.yours.checks.kit == task.yours.checks.kit and swept.yours.points == task.yours.points
    assert series.checked_lightly(task).points == task.points
    kit = trials.kit_of(task.yours.checks.kit)
    point = dict(task.points[0][0])
    owed = trials.answers_expected(kit, 7, "k", point, 2, swept.yours.checks.inputs, swept.yours.checks.fresh)
    assert [(a.kind, a.n) for a in owed] == [("lab GenMatrix", point["n"]), ("sparse", point["n"])]
    full = trials.answers_expected(kit, 7, "k", point, 2, task.yours.checks.inputs, task.yours.checks.fresh)
    assert len(full) == 2 + len(task.yours.checks.inputs)  # a graded point: a fresh GenMatrix and every check
    # the worker solves what the request asks (no 1 GiB answer nobody judges)
    request = swept.request(None, {}, seed=7, answers=tmp_path)
    assert request["checks"] == {
        "kit": task.yours.checks.kit,
        "inputs": [{"input": "sparse", "n": None}],
        "fresh": False,
    }
    # a chapter whose harsh inputs all name their size keeps the first, at that size, and a fresh timed one
    sized = tuple(c for c in task.yours.checks.inputs if c.n is not None)
    only_sized = task.yours.model_copy(update={"checks": task.yours.checks.model_copy(update={"inputs": sized})})
    light = series.checked_lightly(plan.ChapterTask(task.chapter, only_sized, task.points, task.group))
    assert light.yours.checks.inputs == sized[:1] and light.yours.checks.fresh is True


def test_a_slow_call_draws_five_inputs_a_fast_one_the_pool():
    """What sizes a point's pool of timed inputs: a warm-up, a pace call and the repeats."""
    from cudalab.grading import trials

    assert trials.calls_needed(500.0) == 5  # 16384 at BF 64 on an H200: three timed calls
    assert trials.calls_needed(100.0) == 5 and trials.calls_needed(99.0) == 6
    assert trials.calls_needed(0.176) == trials.POOL  # k-means at 4Mi: every input the pool holds


def test_the_section_says_what_the_sweep_cost_each_source():
    swept = pd.DataFrame(
        {
            "series": ["reference", "yours 01234567", "reference", "yours 01234567", "yours 01234567"],
            "file": ["fw_blocked.cu"] * 5,
            "from_sweep": [True, True, True, True, False],
            "source_s": [41.0, 52.4, 41.0, 52.4, 9.0],  # one process per source for the whole sweep
        }
    )
    assert section._cost(swept) == " Measuring them took 41 s for reference, 52 s for yours 01234567."
    assert section._cost(swept.drop(columns="source_s")) == ""


def test_the_worker_solves_the_checks_its_request_names_not_the_chapters_whole_list(monkeypatch, tmp_path):
    """Found on the H200 (issue 67): the worker read the chapter's check inputs from its
    declarations, so at every sweep point it solved each harsh input (a 1 GiB answer at n = 16384)
    that the grader never judged. It takes the request's ``checks``; a request without them (an
    older grader's) gets the chapter's; the kit is always the chapter's own."""
    from cudalab.grading import _worker_target as W
    from cudalab.grading import trials

    asked = []

    def fake_measure_point(kit, point, kernel_file, params, seed, key, inputs, folder, index, fresh=True):
        asked.append((kit, [c.input for c in inputs], fresh))
        return {"status": trials.MEASURED, "time_ms": 1.0, "last_timed": 0}

    monkeypatch.setattr(trials, "measure_point", fake_measure_point)
    monkeypatch.setattr(W, "_emit", lambda *a, **k: None)
    task = _task()
    light = series.checked_lightly(task)
    point = dict(task.points[0][0])
    for checks in (light, task):
        request = checks.request(None, {}, seed=3, answers=tmp_path)
        W._checked_point(request, task.yours, point, None, {}, 0)
    declared = [c.input for c in task.yours.checks.inputs]
    assert [a[1:] for a in asked] == [(["sparse"], False), (declared, True)]
    older = {k: v for k, v in task.request(None, {}, seed=3, answers=tmp_path).items() if k != "checks"}
    W._checked_point(older, task.yours, point, None, {}, 0)
    assert asked[-1][1:] == (declared, True)
    forged = {**light.request(None, {}, seed=3, answers=tmp_path)}
    forged["checks"] = {**forged["checks"], "kit": "cudalab.labs.vecmax_checks:VECMAX"}
    W._checked_point(forged, task.yours, point, None, {}, 0)
    assert asked[-1][0] is trials.kit_of(task.yours.checks.kit)


LADDER_TABLE = RESULTS_DIR / "nvidia-h200" / "h200" / "04_blocking_factor" / "ladder.csv"


def _ladder_task() -> plan.ChapterTask:
    _, task = plan.chapter_tasks("04_blocking_factor", ["fw_blocked.cu"])
    assert task.yours.recipe.endswith(":LADDER")
    return task


def test_the_ladder_sweep_is_the_steps_built_from_the_file():
    """Issue 67 item 1: a student's fw_blocked.cu at each step of lab 001's ladder that builds it
    (4-7), never a global-memory step (1-3: fw_blocked_global.cu), nor the table's other kernels
    (registers, min-plus, chapter 01's basic), which a recipe without their names would have taken
    for its default file; the builds are the chapter's own (step 7: BF 64, 22 registers)."""
    table = pd.read_csv(LADDER_TABLE)
    assert table["variant"].str.startswith(("registers", "min-plus", "basic")).any()
    for builds in (series.builds_for(_ladder_task().yours, "9.0"), None):  # with the kit's launches and without
        whole = series.sweep_task(_ladder_task(), table, {"fw_blocked.cu"}, builds)
        assert [p["variant"] for p, _ in whole.points] == [
            "4. Shared memory",
            "5. Modify if-branch to min",
            "6. Large blocking factor",
            "7. Occupancy optimization",
        ]
        assert {f for _, f in whole.points} == {"fw_blocked.cu"}
    assert series.sweep_task(_ladder_task(), table, {"fw_blocked_global.cu"}) is not None  # steps 1-3 are its


def test_a_ladder_step_builds_the_students_copy_and_refuses_a_copy_of_another_file(tmp_path):
    from cudalab.core.errors import CudalabError
    from cudalab.labs.fw.blocked.point import ladder_variant

    copy = tmp_path / "fw_blocked.cu"
    _, launches = ladder_variant({"n": 3000, "variant": "7. Occupancy optimization"}, copy)
    assert {x.file for x in launches} == {str(copy)}
    assert all(x.options == ("-DBF=64", "--maxrregcount=22") for x in launches)
    _, launches = ladder_variant({"n": 3000, "variant": "2. Coalesced memory access"})
    assert {x.file for x in launches} == {"fw_blocked_global.cu"}
    with pytest.raises(CudalabError, match="builds fw_blocked_global.cu, not fw_blocked.cu"):
        ladder_variant({"n": 3000, "variant": "2. Coalesced memory access"}, copy)  # never the reference's
    with pytest.raises(CudalabError, match="no step '8. Faster' in lab 001's ladder"):
        ladder_variant({"n": 3000, "variant": "8. Faster"}, copy)


def test_a_ladder_is_bars_per_step_and_a_wrong_step_is_a_cross():
    """Bars in the ladder's order whatever order the rows come in (the graded step 7 first), at the
    table's n alone (the graded point's n = 3000 is not set beside bars of n = 3072), the student's
    wrong step a cross; bugs seen: steps 7, 4, 5, 6, and a bar of each size."""
    from cudalab.labs.fw.blocked.point import LADDER

    steps = ["4. Shared memory", "5. Modify if-branch to min", "6. Large blocking factor", "7. Occupancy optimization"]
    rows = [{"n": 3000, "variant": steps[3], "series": s, "status": R.OK, "time_ms": 5.0}
            for s in ("yours 01234567", R.REFERENCE)]  # fmt: skip
    for i, step in enumerate(steps):
        rows.append({"n": 3072, "variant": step, "series": R.REFERENCE, "status": R.OK, "time_ms": 10.0 - i})
        wrong = step.startswith("5.")
        rows.append({"n": 3072, "variant": step, "series": "yours 01234567", "status": R.WRONG if wrong else R.OK,
                     "time_ms": None if wrong else 9.0 - i})  # fmt: skip
    rows.append({"n": 3072, "variant": "1. GPU baseline", "series": R.REFERENCE, "status": R.OK, "time_ms": 500.0})
    fig = series.draw_bars(pd.DataFrame(rows), "variant", "time_ms", title="t", ylabel="ms", logy=True,
                           by=["n", "variant"], order=LADDER.kernel_choices["variant"])  # fmt: skip
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == steps, "the student's steps only, in the ladder's order"
    heights = {c.get_label(): [round(b.get_height(), 3) for b in c] for c in ax.containers}
    assert heights == {"reference, 3072": [10.0, 9.0, 8.0, 7.0], "yours 01234567, 3072": [9.0, 7.0, 6.0]}
    (cross,) = [c for c in ax.collections if c.get_label() == "yours: wrong (no time)"]
    assert len(cross.get_offsets()) == 1 and 0.9 < cross.get_offsets()[0][0] < 1.3  # at step 5, yours' side
    assert ax.get_yscale() == "linear", "four steps within a decade: bars from zero"
    plt.close(fig)


def test_the_section_draws_each_table_from_its_own_rows_once(monkeypatch):
    """Chapter 04's ladder and its blocking-factor sweep both have an n: each declared figure gets
    its own table's rows, with whole-number keys (not the floats a column with gaps became), and
    a table shared by two groups is drawn once. Bugs seen: ladder rows on the sweep's lines, a
    legend reading "32.0"."""
    drawn = []

    def record(rows, spec, keys, order=None, **kw):
        drawn.append((spec.title, set(rows["table"]), rows[keys].dtypes.to_dict(), order))
        return plt.figure()

    monkeypatch.setattr(series, "draw_declared", record)
    monkeypatch.setattr("IPython.display.display", lambda *a, **k: None)
    task, ladder = plan.chapter_tasks("04_blocking_factor", ["fw_blocked.cu"])
    sweep = [{"table": "blocking_factor_sweep", "n": 8192, "block_factor": 16, "kernel": "shared"}]
    steps = [{"table": "ladder", "n": 3072, "variant": "4. Shared memory"}]
    rows = pd.DataFrame(
        [
            {**r, "series": s, "point": "p", "status": R.OK, "time_ms": 1.0}
            for r in sweep + steps
            for s in (R.REFERENCE, "yours 01234567")
        ]  # fmt: skip
    )
    section.show_sweep("04_blocking_factor", [task, task, ladder], rows)
    titles = [t for t, *_ in drawn]
    assert titles == ["Blocked kernels over N", "The optimization ladder"], titles
    (_, tables, dtypes, _), (_, ladder_tables, _, order) = drawn
    assert tables == {"blocking_factor_sweep"} and ladder_tables == {"ladder"}
    assert str(dtypes["block_factor"]) == "int64" and order[0] == "1. GPU baseline"


def test_chapter_05s_footprint_grid_is_a_declared_figure_a_students_series_is_drawn_in():
    """Issue 67 item 1: lab 002's footprint grid (``footprint_sweep``, the recipe's own table) has a
    declared figure over a key of its points, so a student's mm_02_footprint.cu is drawn there,
    not only listed."""
    (task,) = plan.chapter_tasks("05_matmul_footprint", ["mm_02_footprint.cu"])
    table = pd.read_csv(RESULTS_DIR / "nvidia-h200" / "h200" / "05_matmul_footprint" / "footprint_sweep.csv")
    (spec,) = series.figures_of(task.chapter, "footprint_sweep")
    assert spec.kind == "line" and spec.x in series.point_keys(task, table) and spec.y == "time_ms"
    whole = series.sweep_task(task, table, {"mm_02_footprint.cu"}, series.builds_for(task.yours, "9.0"))
    assert len(whole.points) >= 4 and {p["footprint"] for p, _ in whole.points} >= {16, 32, 64}
