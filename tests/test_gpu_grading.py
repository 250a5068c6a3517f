"""The fixture class graded on a GPU (issue 43, item 7): each student in a process of its own,
beside the reference and the add+min ceiling measured in the same run. A kernel that never
returns is stopped at the point limit, one that writes out of bounds is marked crashed, and the
others are graded as usual."""

from __future__ import annotations

import time

import pytest

from cudalab.grading import grade, isolate, pages
from cudalab.grading import results as R
from cudalab.labs.fw import nthu
from tests.grading_class import make_class, make_kmeans_class

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def hidden(tmp_path_factory):
    """The instructor's cases: two NTHU graphs (the C reference answers one, CuPy the other) and two
    k-means inputs (seeded blobs at K = 16; a photograph's colour features at K = 24, real data
    with points near the boundaries)."""
    from cudalab.labs.kmeans import files, reference, sample_data

    folder = tmp_path_factory.mktemp("cases")
    for v, seed in ((300, 1), (1500, 2)):
        nthu.write_case(folder / f"v{v}.in", v, nthu.generate_case(v, 0.05, seed=seed))
    files.write_binary(folder / "blobs.k16.bin", reference.blobs(200_000, 16, 16, seed=5))
    files.write_binary(folder / "photo.k24.bin", sample_data.image_features()["colour"])
    return folder


@pytest.fixture(scope="module")
def graded(tmp_path_factory, hidden):
    base = tmp_path_factory.mktemp("gpu-grade")
    klass = make_class(base / "class")
    out = pages.prepare(base / "out")
    started = time.monotonic()
    options = grade.GradeOptions(
        klass, out, arch=grade.arch_for(None), limits=isolate.Limits(point=20, submission=120), cases=hidden
    )
    result = grade.grade(options, log=print)
    pages.write(result, out, title="fixture class")
    print(f"graded the fixture class in {time.monotonic() - started:.1f} s")
    return result.scoreboard.set_index("student")


def _points(graded, student: str):
    """A student's measured point (not the cases)."""
    rows = graded.loc[[student]]
    return rows[~rows["point"].str.startswith("case ")].iloc[0]


def _cases(graded, student: str) -> list[str]:
    rows = graded.loc[[student]]
    return list(rows[rows["point"].str.startswith("case ")]["status"])


def test_correct_kernels_are_timed_ranked_and_set_beside_the_reference_and_the_ceiling(graded):
    a, b = _points(graded, "a_correct"), _points(graded, "b_slower")
    assert a["status"] == R.OK and b["status"] == R.OK
    assert a["time_ms"] < b["time_ms"], "the arithmetic select without unrolling is slower"
    assert a["rank"] == 1 and b["rank"] == 2
    assert 0.8 < a["speed_vs_reference"] < 1.25, "the reference's own code runs at the reference's speed"
    assert 0 < a["fraction_of_ceiling"] < 1.0 and a["ceiling_per_s"] > 0
    print(graded[["status", "time_ms", "reference_time_ms", "speed_vs_reference", "fraction_of_ceiling", "rank"]])


def test_the_hidden_cases_are_answered_byte_for_byte(graded):
    assert _cases(graded, "a_correct") == [R.OK, R.OK]
    assert _cases(graded, "b_slower") == [R.OK, R.OK]
    assert _cases(graded, "c_wrong") == [R.WRONG, R.WRONG]
    wrong = graded.loc[["c_wrong"]]
    assert wrong[wrong["point"].str.startswith("case ")]["reason"].str.contains("entries differ").all()
    assert _cases(graded, "f_endless") == [R.NOT_RUN, R.NOT_RUN], "its process was stopped at its first point"


def test_a_kernel_that_prints_a_forged_result_is_still_marked_wrong(graded):
    forged = _points(graded, "i_forged_output")
    assert forged["status"] == R.WRONG and str(forged["rank"]) in ("<NA>", "nan")


def test_a_wrong_result_is_marked_and_never_ranked(graded):
    c = _points(graded, "c_wrong")
    assert c["status"] == R.WRONG, c["reason"]
    assert c["correct"] == False  # noqa: E712 (numpy's False from the frame, or Python's)
    assert str(c["rank"]) in ("<NA>", "nan")


def test_an_endless_kernel_is_stopped_and_a_faulting_one_is_marked_crashed(graded):
    f, g = _points(graded, "f_endless"), _points(graded, "g_out_of_bounds")
    assert f["status"] == R.TIMED_OUT and "limit per point" in f["reason"]
    assert g["status"] in (R.CRASHED,), g["reason"]
    assert "/" not in g["reason"], "no path of the machine in the reason"


def test_compile_errors_and_misfits_never_reach_the_gpu(graded):
    assert _points(graded, "d_compile_error")["status"] == R.DOES_NOT_COMPILE
    assert _points(graded, "e_signature")["status"] == R.MISFIT


def test_kmeans_cases_are_checked_against_the_sequential_codes_memberships(tmp_path, hidden):
    """Chapter 06's cases (``KMEANS``): the reference's own file is right on both inputs, with the
    whole run's agreement as its note; an update that divides by one member too many is wrong from
    the second iteration, on the cases as at the measured point."""
    klass = make_kmeans_class(tmp_path / "class")
    out = pages.prepare(tmp_path / "out")
    options = grade.GradeOptions(
        klass, out, arch=grade.arch_for(None), limits=isolate.Limits(point=30, submission=180), cases=hidden
    )
    board = grade.grade(options, log=print).scoreboard.set_index("student")
    print(board[["point", "status", "time_ms", "speed_vs_reference", "reason"]].to_string())
    assert _points(board, "km_correct")["status"] == R.OK
    assert _cases(board, "km_correct") == [R.OK, R.OK]
    correct = board.loc[["km_correct"]]
    assert correct[correct["point"].str.startswith("case ")]["reason"].str.startswith("whole run:").all()
    assert _points(board, "km_wrong_update")["status"] == R.WRONG
    assert _cases(board, "km_wrong_update") == [R.WRONG, R.WRONG]
    wrong = board.loc[["km_wrong_update"]]
    assert wrong[wrong["point"].str.startswith("case ")]["reason"].str.contains("after iteration 2").all()


def test_on_two_gpus_through_dask_every_submission_is_graded_as_on_one(graded, hidden, tmp_path):
    """Issue 43, item 5: with --workers 2 on a host of two GPUs the submissions are Dask tasks, one
    GPU each; the same statuses come out (the endless and the faulting kernels cost their own
    processes only)."""
    from cudalab.core.gpu import require_cupy

    if require_cupy().cuda.runtime.getDeviceCount() < 2:
        pytest.skip("one GPU here: grading on two runs on a host of two (nvidia-h100-x2)")
    klass = make_class(tmp_path / "class")
    out = pages.prepare(tmp_path / "out")
    options = grade.GradeOptions(
        klass,
        out,
        arch=grade.arch_for(None),
        limits=isolate.Limits(point=20, submission=120),
        workers=2,
        cases=hidden,
    )
    started = time.monotonic()
    spread = grade.grade(options, log=print).scoreboard
    print(f"graded the fixture class on 2 GPUs in {time.monotonic() - started:.1f} s")
    one = graded.reset_index()
    assert sorted(zip(spread["student"], spread["file"], spread["status"], strict=True)) == sorted(
        zip(one["student"], one["file"], one["status"], strict=True)
    )
