"""What a student's build of a chapter runs (issue 67, item 6), without a GPU: each graded build
measured once, with every check, every graded point race-checked in one run of each tool, and every
point of one source (graded and swept, every group's) in one worker process, the reference's the
same points in the same order. Chapter 04 grades the student's ``fw_blocked.cu`` twice, at two
builds (BF 32 by its first group, the ladder's step 7 at BF 64 in 22 registers), and both keep
every check. The processes, compiles and checks are stood in for; what is planned, asked and judged
is real. Each test names the duplication it would catch coming back."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from cudalab.core.paths import KERNELS_DIR, RESULTS_DIR
from cudalab.grading import isolate, plan, section, trials
from cudalab.grading import results as R

CHAPTER = "04_blocking_factor"
H200 = RESULTS_DIR / "nvidia-h200" / "h200" / CHAPTER  # the tables an H200 build of chapter 04 writes
SHA = "0123456789abcdef" * 4
GRADED = "n=3000, block_factor=32, kernel=shared"
STEPS = ["4. Shared memory", "5. Modify if-branch to min", "6. Large blocking factor", "7. Occupancy optimization"]


def test_each_graded_build_is_measured_once_and_each_build_of_a_file_keeps_every_check():
    """Bug: a point two groups grade at the same build would be timed, checked and race-checked
    twice. And the opposite bug: dropping the ladder's step 7 because the first group grades the
    same file would leave its build (BF 64, 22 registers) without the odd sizes, the harsh graphs
    and the race check, where a race or an edge case of that build alone hides."""
    tasks = plan.chapter_tasks(CHAPTER, ["fw_blocked.cu"])
    assert [t.yours.recipe.rsplit(":", 1)[1] for t in tasks] == ["POINT", "LADDER"], "the ladder declares the file"
    graded = plan.graded_once(tasks)
    assert [(t.group, [plan.point_label(p) for p, _ in t.points]) for t in graded] == [
        (0, [GRADED]),
        (2, ["n=3000, variant=7. Occupancy optimization"]),
    ]
    # the same point declared again by a later group is measured once
    assert [t.group for t in plan.graded_once([tasks[0], tasks[1], tasks[0]])] == [0, 2]
    # another file of the chapter is graded by its own group; a group's several points of one file all stay
    both = plan.graded_once(plan.chapter_tasks(CHAPTER, ["fw_blocked.cu", "fw_blocked_registers.cu"]))
    assert [(t.group, t.files) for t in both] == [
        (0, ["fw_blocked.cu"]),
        (1, ["fw_blocked_registers.cu"]),
        (2, ["fw_blocked.cu"]),
    ]
    (block_size,) = plan.graded_once(plan.chapter_tasks("01_block_size", ["fw_basic_2d.cu"]))
    assert len(block_size.points) == 2


def time_of(source: str, file: str, label: str) -> float:
    """The stand-in's time for a point: its own, from its source, file and label."""
    return 1.0 + (hash((source, file, label)) % 10_000) / 100


@pytest.fixture
def lab(tmp_path):
    for table in ("blocking_factor_sweep", "ladder"):
        shutil.copy(H200 / f"{table}.csv", tmp_path / f"{table}.csv")
    staged = tmp_path / "staged"
    staged.mkdir()
    shutil.copy(KERNELS_DIR / "fw_blocked.cu", staged / "fw_blocked.cu")
    return SimpleNamespace(
        id=CHAPTER,
        out_dir=str(tmp_path),
        params={"seed": 1},
        point_time_limit_s=None,
        mode="measure",
        profile=None,
        ceilings=lambda: {},
        staged=staged,
    )


@pytest.fixture
def stood_in(monkeypatch):
    """Every process the section starts, stood in for and recorded: the workers (``isolate.run``),
    the signature check's compiles, the race checks; the grader's judging says ok. Each point's
    result is its own (``time_of``: its source, file and label), so a result given to another
    point shows; ``seen.crash`` (a file) makes the student's process of that file crash at its first
    point, the points after it "not run", as ``isolate.run`` reports them."""
    seen = SimpleNamespace(requests=[], limits=[], compiles=[], raced=[], judged=[], crash=None)

    def run(request, limits, on_point=None, **_):
        seen.requests.append(json.loads(json.dumps(request)))
        seen.limits.append(limits)
        source = R.YOURS if request["folder"] else R.REFERENCE
        out = []
        for i, (point, file) in enumerate(request["points"]):
            if source == R.YOURS and file == seen.crash:
                got = {"status": R.CRASHED if i == 0 else R.NOT_RUN, "reason": "a fault" if i == 0 else "after a fault"}
            else:
                ms = time_of(source, file, plan.point_label(point))
                got = {"status": trials.MEASURED, "reason": "", "time_ms": ms, "time_ms_q1": ms, "time_ms_q3": ms,
                       "last_timed": 0}  # fmt: skip
            if on_point is not None:
                on_point(i, got)
            out.append(got)
        return {"ceiling": None, "points": out, "wall_s": 0.0}

    def judge(kit, point, got, run_seed, key, inputs, folder, index, expected, fresh=True):
        seen.judged.append((kit, dict(point), [c.input for c in inputs], fresh, index))
        if got["status"] != trials.MEASURED:  # as trials.judge: a point that did not answer keeps its status
            return got
        return {**{k: v for k, v in got.items() if k != "last_timed"}, "status": R.OK, "reason": ""}

    def signature_problems(reference, yours, arch, includes, options=(), kernels=None):
        seen.compiles.append((Path(yours).name, tuple(options)))
        return []

    def races(lab, task, staged, seed):
        seen.raced.append(task)
        return {f: {"status": R.OK, "reason": ""} for f in task.files}

    from cudalab.toolchain import compile_only, nvcc

    monkeypatch.setattr(isolate, "run", run)
    monkeypatch.setattr(trials, "judge", judge)
    monkeypatch.setattr(compile_only, "signature_problems", signature_problems)
    monkeypatch.setattr(nvcc, "compile_arch", lambda cc: ("sm_90",))
    monkeypatch.setattr(section, "_races", races)
    monkeypatch.setattr(section, "measured_cc", lambda lab: "9.0")  # an H200's: BF 128 builds
    return seen


def test_a_students_chapter_04_is_one_worker_per_source_and_one_race_check(lab, stood_in):
    """Bug: the build started a worker per source for each group's graded points and again for each
    group's sweep (eight processes for fw_blocked.cu, each importing CuPy and compiling again), and
    race-checked each group's graded points in runs of their own. Now: two workers, the same points in
    the same order, the graded points first with every check; one race-check run of both."""
    tasks = plan.chapter_tasks(CHAPTER, ["fw_blocked.cu"])
    ticks = []
    graded, swept, failed = section.graded_and_swept(
        lab, tasks, lab.staged, isolate.Limits(), 7, {"fw_blocked.cu": SHA}, tick=ticks.append
    )
    assert not failed
    mine, reference = stood_in.requests
    assert len(stood_in.requests) == 2, "one worker per source"
    assert mine["folder"] == str(lab.staged) and reference["folder"] is None
    assert mine["points"] == reference["points"] and mine["parts"] == reference["parts"], "timed the same way"
    parts = [(p["group"], p["points"], [c["input"] for c in p["checks"]["inputs"]], p["checks"]["fresh"])
             for p in mine["parts"]]  # fmt: skip
    declared = [c.input for c in tasks[0].yours.checks.inputs]
    ladder_declared = [c.input for c in tasks[1].yours.checks.inputs]
    # the two graded points with every check; the blocking-factor sweep (BF 8-128 at 8192, 64 and
    # 128 at 16384) and the ladder's recorded steps 4-7 each on its timed input and one fresh harsh one
    assert parts == [
        (0, 1, declared, True),
        (2, 1, ladder_declared, True),
        (0, 7, ["sparse"], False),
        (2, 4, ["sparse"], False),
    ]
    labels = [plan.point_label(p) for p, _ in mine["points"]]
    assert labels[:2] == [GRADED, f"n=3000, variant={STEPS[-1]}"]
    assert labels[-4:] == [f"n=3072, variant={s}" for s in STEPS]
    # each point judged on its own group's checks, by its own group's kit
    kits = {i: (kit, inputs, fresh) for kit, _, inputs, fresh, i in stood_in.judged}
    assert kits[0] == (trials.kit_of(tasks[0].yours.checks.kit), declared, True)
    assert kits[len(labels) - 1] == (trials.kit_of(tasks[1].yours.checks.kit), ["sparse"], False)
    assert len(stood_in.judged) == 2 * len(labels)
    # one race-check run, of the two graded points only
    (raced,) = stood_in.raced
    assert [plan.point_label(p) for p, _ in raced.points] == labels[:2]
    # the signature check compiles each build once (BF 32 graded and swept, ladder steps 5 and 6 = BF 32, 64)
    assert len(stood_in.compiles) == len(set(stood_in.compiles))
    assert ("fw_blocked.cu", ("-DBF=32",)) in stood_in.compiles
    # what comes back: each graded point's two rows, the series with every step of the ladder
    assert list(graded["point"])[:2] == [GRADED, GRADED] and set(graded["source"]) == {R.YOURS, R.REFERENCE}
    assert len(graded) == 4
    steps = swept[swept["table"].eq("ladder") & swept["series"].eq(f"yours {SHA[:8]}")]
    assert list(steps[steps["from_sweep"]]["variant"]) == STEPS
    assert list(steps[~steps["from_sweep"]]["variant"]) == STEPS[-1:], "the graded step 7, at its own n"
    assert len(ticks) == section.results_planned(tasks, section.sweep_rest(lab, tasks, "9.0")) == 2 * 13


def test_a_sweep_that_fails_costs_the_graded_points_nothing(lab, stood_in, monkeypatch):
    """The graded points and the sweep share their processes; where measuring them together fails,
    the graded points are measured alone and the sweep's failure is said."""
    real = section.measured_together

    def failing(lab, parts, *args, **kw):
        if not all(graded for _, graded in parts):
            raise RuntimeError("the sweep broke")
        return real(lab, parts, *args, **kw)

    monkeypatch.setattr(section, "measured_together", failing)
    tasks = plan.chapter_tasks(CHAPTER, ["fw_blocked.cu"])
    graded, swept, failed = section.graded_and_swept(lab, tasks, lab.staged, isolate.Limits(), 7, {})
    assert "the sweep broke" in failed and swept.empty
    assert list(graded["point"])[:2] == [GRADED, GRADED] and graded["status"].eq(R.OK).all()
    assert [len(r["points"]) for r in stood_in.requests] == [2, 2], "the two graded points, alone"


def test_the_worker_measures_each_point_by_its_own_groups_kit_and_checks(monkeypatch, tmp_path):
    """A batch's request (several groups in one process): each point is measured with its own group's
    kit and the checks its part asks; a request whose parts do not cover its points is refused."""
    from cudalab.grading import _worker_target as W

    asked, said = [], []

    def measure_point(kit, point, kernel_file, params, seed, key, inputs, folder, index, fresh=True):
        asked.append((kit, [c.input for c in inputs], fresh, index))
        return {"status": trials.MEASURED, "time_ms": 1.0, "last_timed": 0}

    monkeypatch.setattr(trials, "measure_point", measure_point)
    monkeypatch.setattr(W, "_emit", lambda event, **fields: said.append((event, fields.get("index"))))
    graded, ladder = plan.chapter_tasks(CHAPTER, ["fw_blocked.cu"])
    from cudalab.grading import series

    batch = plan.Batch((graded, series.checked_lightly(ladder)))
    request = batch.request(None, {}, seed=3, answers=tmp_path)
    assert W.measure(request) == 0
    assert asked == [
        (trials.kit_of(graded.yours.checks.kit), [c.input for c in graded.yours.checks.inputs], True, 0),
        (trials.kit_of(ladder.yours.checks.kit), ["sparse"], False, 1),
    ]
    assert [e for e in said if e[0] == "point"] == [("point", 0), ("point", 1)]
    with pytest.raises(ValueError, match="cover 3 points, not its 2"):
        plan.request_parts({**request, "parts": request["parts"] + [{"group": 0, "points": 1, "checks": None}]})


def test_the_sanitizer_builds_each_point_by_its_own_groups_kit(monkeypatch, tmp_path):
    """One run of each sanitizer tool for several groups' graded points (``plan.Batch``): each point
    is built by its own group's kit, at its small size."""
    import io

    from cudalab.grading import _sanitize_target as S

    ran = []
    monkeypatch.setattr(S, "with_line_info", lambda: None)  # never wrap this process's compiles
    monkeypatch.setattr(S, "run_point", lambda kit, point, kernel_file, params, seed: ran.append((kit, point)))
    first, _, ladder = plan.chapter_tasks(CHAPTER, ["fw_blocked.cu", "fw_blocked_registers.cu"])
    results = tmp_path / "points.jsonl"
    request = {**plan.Batch((first, ladder)).request(None, {}, seed=3), "results": str(results)}
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(request)))
    assert S.main() == 0
    assert [k for k, _ in ran] == [trials.kit_of(first.yours.checks.kit), trials.kit_of(ladder.yours.checks.kit)]
    lines = [json.loads(line) for line in results.read_text().splitlines()]
    assert [(x["index"], x["status"]) for x in lines] == [(0, "ran"), (1, "ran")]


def test_each_row_gets_its_own_points_result_from_each_source(lab, stood_in):
    """Bug: a result given to another point (a slice of the wrong task, the sources swapped, an
    index off by one between a batch and its tasks) would pass while every point's result was the
    same. Here each point's result is its own."""
    tasks = plan.chapter_tasks(CHAPTER, ["fw_blocked.cu"])
    graded, swept, _ = section.graded_and_swept(lab, tasks, lab.staged, isolate.Limits(), 7, {"fw_blocked.cu": SHA})
    rows = pd.concat([graded, swept.rename(columns={"series": "series_"})], ignore_index=True)
    rows = rows[rows["status"].eq(R.OK)]
    assert len(rows) >= 2 * 13
    for row in rows.itertuples():
        assert row.time_ms == time_of(row.source, row.file, row.point), (row.source, row.point)


def test_a_crash_in_one_file_costs_another_files_points_nothing(lab, stood_in):
    """Bug: every group's points ran in one process, so a student's fw_blocked.cu that crashed at its
    graded point left fw_blocked_registers.cu's graded point "not run" (and a fault under the
    sanitizer hid the other file's race). Now each file has its own processes and its own race
    check, each process the budget of each task it holds."""
    shutil.copy(KERNELS_DIR / "fw_blocked_registers.cu", lab.staged / "fw_blocked_registers.cu")
    stood_in.crash = "fw_blocked.cu"
    tasks = plan.chapter_tasks(CHAPTER, ["fw_blocked.cu", "fw_blocked_registers.cu"])
    graded, _, _ = section.graded_and_swept(
        lab, tasks, lab.staged, isolate.Limits(), 7, {"fw_blocked.cu": SHA, "fw_blocked_registers.cu": SHA}
    )
    mine = graded[graded["source"].eq(R.YOURS)].set_index("point")
    assert mine.loc[GRADED, "status"] == R.CRASHED
    registers = mine[mine["file"].eq("fw_blocked_registers.cu")]
    assert len(registers) and registers["status"].eq(R.OK).all(), "the other file's graded point still ran"
    files = [{f for _, f in r["points"]} for r in stood_in.requests]
    assert all(len(f) == 1 for f in files), "one file per process"
    assert [sorted(t.files) for t in stood_in.raced] == [["fw_blocked_registers.cu"]], (
        "the crashed file has no answer to race-check"
    )
    for request, limits in zip(stood_in.requests, stood_in.limits, strict=True):
        assert limits.submission == isolate.Limits().submission * len(request["parts"])
