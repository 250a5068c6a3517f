"""A class graded (issue 43, items 3, 4 and 7): the refusal, compile-only, isolation and
scoreboard paths, on the CPU. The GPU half of the fixture class is tests/test_gpu_grading.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from cudalab.core.paths import KERNELS_DIR, RESULTS_DIR
from cudalab.grading import grade, isolate, pages, plan
from cudalab.grading import results as R
from cudalab.labs import checks
from cudalab.toolchain.nvcc import cuda_tool
from tests.grading_class import make_class

ROOT = Path(__file__).resolve().parent.parent
needs_nvcc = pytest.mark.skipif(cuda_tool("nvcc") is None, reason="nvcc is not installed here")


@pytest.fixture(scope="module")
def compiled_only(tmp_path_factory):
    """The fixture class graded without a GPU (compiled for sm_90 only)."""
    if cuda_tool("nvcc") is None:
        pytest.skip("nvcc is not installed here")
    base = tmp_path_factory.mktemp("grade")
    klass = make_class(base / "class")
    out = pages.prepare(base / "out")
    graded = grade.grade(grade.GradeOptions(klass, out, arch="sm_90", measure=False), log=lambda _: None)
    return graded, pages.write(graded, out, title="Scoreboard: class"), klass


SHARED_POINT = "n=3000, block_factor=32, kernel=shared"  # chapter 04's graded points of fw_blocked.cu
LADDER_POINT = "n=3000, variant=7. Occupancy optimization"


def _status(board: pd.DataFrame, student: str) -> list[str]:
    return list(board[board["student"].eq(student)]["status"])


@needs_nvcc
def test_without_a_gpu_each_student_gets_the_compilers_verdict(compiled_only):
    graded, _, _ = compiled_only
    board = graded.scoreboard
    for student in ("a_correct", "b_slower", "c_wrong", "f_endless", "g_out_of_bounds"):
        # chapter 04's graded points of fw_blocked.cu: its shared kernel at BF 32 and the ladder's last step
        assert _status(board, student) == [R.COMPILED_ONLY] * 2, student
    broken = board[board["student"].eq("d_compile_error")].iloc[0]
    assert broken["status"] == R.DOES_NOT_COMPILE and not broken["compiled"]
    line = next(
        i
        for i, t in enumerate((ROOT / "kernels_cu/fw_blocked.cu").read_text().splitlines(), 1)
        if "int ti = blockIdx.y" in t
    )
    assert broken["reason"].startswith("fw_blocked.cu:"), broken["reason"]
    assert int(broken["reason"].split(":")[1]) in (
        line,
        line + 1,
    )  # the missing ';' is reported on its line or the next
    misfit = board[board["student"].eq("e_signature")].iloc[0]
    assert misfit["status"] == R.MISFIT
    assert "fw_blocked_phase3(int* d, int n, int r)" in misfit["reason"]
    assert graded.resources["a_correct"]["status"].eq("ok").all()
    assert board["rank"].isna().all(), "nothing is ranked without timings"


@needs_nvcc
def test_forbidden_files_are_refused_one_reason_each_and_nothing_of_the_machine_is_printed(compiled_only):
    graded, written, klass = compiled_only
    refused = graded.scoreboard[graded.scoreboard["student"].eq("h_forbidden")].set_index("file")
    assert set(refused["status"]) == {R.REFUSED}
    assert (
        "names a path" in refused.loc["fw_blocked.cu", "reason"] or "outside" in refused.loc["fw_blocked.cu", "reason"]
    )
    assert "names a path" in refused.loc["fw_shared_tile.cu", "reason"]
    assert "not a .cu or .cuh" in refused.loc["notes.txt", "reason"]
    assert "path parts" in refused.loc["..\\fw_basic_2d.cu", "reason"]
    assert "link" in refused.loc["fw_coalesced.cu", "reason"]
    everything = "".join(p.read_text() for p in written.values())
    for secret in (str(klass), str(ROOT), os.uname().nodename, Path("/etc/hostname").read_text().strip()):
        assert secret not in everything
    assert not (Path(written["scoreboard.csv"]).parent / "staged" / "h_forbidden").exists(), (
        "a refused file is never copied"
    )


@needs_nvcc
def test_the_scoreboard_and_a_page_per_student_are_written(compiled_only):
    graded, written, _ = compiled_only
    board = pd.read_csv(written["scoreboard.csv"])
    assert list(board.columns) == list(grade.SCOREBOARD_COLUMNS)
    assert set(board["student"]) == {
        f.name for f in (Path(written["scoreboard.csv"]).parent.parent / "class").iterdir()
    }
    html = Path(written["scoreboard.html"]).read_text()
    assert "04_blocking_factor" in html and "NaN" not in html and "nan<" not in html
    page = Path(written["students/a_correct.html"]).read_text()
    assert graded.submissions["a_correct"].sha256["fw_blocked.cu"] in page
    assert "registers" in page


def test_a_wrong_result_is_never_ranked_and_ranks_go_by_time():
    rows = [
        {"student": "x", "chapter": "c", "point": "p", "file": "f", "status": "ok", "time_ms": 2.0},
        {"student": "y", "chapter": "c", "point": "p", "file": "f", "status": "wrong", "time_ms": 0.5},
        {"student": "z", "chapter": "c", "point": "p", "file": "f", "status": "ok", "time_ms": 1.0},
        {"student": "w", "chapter": "c", "point": "p", "file": "f", "status": "timed out", "time_ms": None},
    ]
    board = grade.scoreboard(rows).set_index("student")
    assert board.loc["z", "rank"] == 1 and board.loc["x", "rank"] == 2
    assert pd.isna(board.loc["y", "rank"]) and board.loc["y", "correct"] is False
    assert pd.isna(board.loc["w", "rank"]) and board.loc["x", "correct"] is True


def _fake(tmp_path, body: str) -> tuple[str, ...]:
    script = tmp_path / "fake_worker.py"
    script.write_text(
        "import json, sys, os, time, signal\n"
        "events = os.fdopen(int(os.environ['CUDALAB_EVENTS_FD']), 'w', buffering=1)\n"
        "request = json.loads(sys.stdin.read())\n" + body
    )
    return (str(script),)


def _emit(event: str, **fields) -> str:
    return f"print(json.dumps({{'event': {event!r}, **{fields!r}}}), file=events, flush=True)\n"


def test_a_worker_that_never_returns_is_killed_at_the_point_limit_and_the_rest_are_not_run(tmp_path):
    body = (
        _emit("start", index=0)
        + _emit("point", index=0, status="ok", time_ms=1.0)
        + _emit("start", index=1)
        + "time.sleep(60)\n"
    )
    request = {"points": [[{}, "f.cu"]] * 3}
    result = isolate.run(request, isolate.Limits(point=1.0, submission=30), worker=_fake(tmp_path, body))
    assert [p["status"] for p in result["points"]] == ["ok", R.TIMED_OUT, R.NOT_RUN]
    assert "limit per point" in result["points"][1]["reason"]
    assert result["wall_s"] < 10


def test_a_worker_that_dies_is_marked_crashed_with_the_signal(tmp_path):
    body = _emit("start", index=0) + "os.kill(os.getpid(), signal.SIGSEGV)\n"
    result = isolate.run({"points": [[{}, "f.cu"]] * 2}, worker=_fake(tmp_path, body))
    assert [p["status"] for p in result["points"]] == [R.CRASHED, R.NOT_RUN]
    assert "SIGSEGV" in result["points"][0]["reason"]


def test_the_submission_limit_bounds_a_worker_that_keeps_making_progress(tmp_path):
    body = (
        _emit("start", index=0)
        + "time.sleep(0.6)\n"
        + _emit("point", index=0, status="ok")
        + _emit("start", index=1)
        + "time.sleep(60)\n"
    )
    result = isolate.run(
        {"points": [[{}, "f.cu"]] * 2}, isolate.Limits(point=30, submission=1.5), worker=_fake(tmp_path, body)
    )
    assert [p["status"] for p in result["points"]] == ["ok", R.TIMED_OUT]
    assert "limit per submission" in result["points"][1]["reason"]


def test_the_workers_environment_is_scrubbed(tmp_path, monkeypatch):
    monkeypatch.setenv("GRADER_SECRET_TOKEN", "s3cret")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIA")
    body = "print(json.dumps({'event': 'point', 'index': 0, 'status': 'ok', 'reason': ' '.join(sorted(os.environ))}), file=events, flush=True)\n"
    result = isolate.run({"points": [[{}, "f.cu"]]}, worker=_fake(tmp_path, body))
    seen = result["points"][0]["reason"].split()
    assert "GRADER_SECRET_TOKEN" not in seen and "AWS_ACCESS_KEY_ID" not in seen
    assert set(seen) <= set(isolate.KEPT) | {
        "HOME",
        "TMPDIR",
        "PYTHONNOUSERSITE",
        "PYTHONDONTWRITEBYTECODE",
        isolate.EVENTS_ENV,
    }


def test_what_a_kernel_prints_can_never_forge_a_result(tmp_path):
    """A kernel's printf lands on the worker's stdout; results travel on a pipe of their own. The
    grader keeps a point's last event, so the forgery comes at every step, many times, AFTER the
    real result and at exit: routed onto the results pipe, it would win (issue 65, item 6)."""
    forged = (
        "def forge():\n"
        "    for _ in range(5):\n"
        "        for i in range(2):\n"
        "            line = json.dumps({'event': 'point', 'index': i, 'status': 'ok', 'time_ms': 0.001})\n"
        "            os.write(1, (line + '\\n').encode())  # C's stdout: where a kernel's printf lands\n"
        "            print(line, flush=True)\n"
        "import atexit\n"
        "atexit.register(forge)\n"
    )
    body = (
        forged
        + "forge()\n"
        + _emit("start", index=0)
        + "forge()\n"
        + _emit("point", index=0, status="wrong")
        + "forge()\n"
        + _emit("start", index=1)
        + "forge()\n"
        + "sys.exit(0)\n"
    )
    result = isolate.run({"points": [[{}, "f.cu"]] * 2}, worker=_fake(tmp_path, body))
    assert [p["status"] for p in result["points"]] == ["wrong", R.CRASHED]


@pytest.mark.parametrize(
    "files, says",
    [
        ({"notes.txt": b"x"}, "no case file a graded chapter takes (04_blocking_factor takes *.in; "),
        ({"v10.in": b"\x05\x00\x00\x00"}, "--cases: v10.in (04_blocking_factor): "),
        ({"photo.k4.bin": (3).to_bytes(4, "little") + (2).to_bytes(4, "little") + b"\x00" * 8}, "photo.k4.bin"),
        ({"few.k9.bin": (2).to_bytes(4, "little") + (1).to_bytes(4, "little") + b"\x00" * 8}, "K cannot exceed N"),
    ],
)
def test_an_instructors_case_that_its_chapter_cannot_read_is_one_line_before_any_work(tmp_path, files, says):
    """``--cases``: every file a graded chapter takes is read as that chapter reads it before anything
    is compiled or written; a truncated graph or k-means input, K above N, or a folder with no file
    any chapter takes is one line and exit status 2."""
    (tmp_path / "class" / "ann").mkdir(parents=True)
    (tmp_path / "class" / "ann" / "fw_blocked.cu").write_text("// a file\n")
    (tmp_path / "cases").mkdir()
    for name, data in files.items():
        (tmp_path / "cases" / name).write_bytes(data)
    proc = subprocess.run(
        [sys.executable, "build_report.py", "--grade", str(tmp_path / "class"), "--cases", str(tmp_path / "cases")]
        + ["--out", str(tmp_path / "o")],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2, proc.stderr
    assert says in proc.stderr, proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith("error: --cases")
    assert not (tmp_path / "o").exists(), "nothing written before the cases are checked"


def test_messages_are_scrubbed_of_the_machines_paths():
    said = R.scrubbed("cannot open /home/grader/secret/answers.bin nor C:\\x\\y.cu (see /tmp/a/b/log)")
    assert "/home" not in said and "grader" not in said and "answers.bin" in said and "log" in said


def test_every_chapter_that_measures_a_students_file_declares_points_built_from_it():
    files = plan.measured_files()
    assert files["fw_blocked.cu"] == ["04_blocking_factor"]
    assert files["km_02_shared_buffers.cu"] == ["06_kmeans_device_update"]
    for chapter in {c for cs in files.values() for c in cs}:
        tasks = plan.chapter_tasks(chapter)
        assert tasks and all(f.endswith(".cu") for t in tasks for f in t.files)


@pytest.mark.parametrize(
    "args, says",
    [
        (["--grade", "/no/such/folder"], "not a folder"),
        (["--grade", "{empty}"], "no student folder"),
        (["--cases", "{empty}"], "give --grade SUBMISSIONS too"),
        (["--grade", "{empty}", "--kernels", "{empty}"], "takes none of --kernels"),
        (["--grade", "{empty}", "--record"], "takes none of"),
        (["--grade", "{class}", "--gpu", "h100,gtx680"], "--grade takes one profile with --gpu"),
    ],
)
def test_a_bad_grading_request_is_one_line_and_exit_status_2(tmp_path, args, says):
    (tmp_path / "empty").mkdir()
    (tmp_path / "class" / "a_student").mkdir(parents=True)
    args = [a.replace("{class}", str(tmp_path / "class")) for a in args]
    argv = [a.replace("{empty}", str(tmp_path / "empty")) for a in args]
    proc = subprocess.run(
        [sys.executable, "build_report.py", *argv, "--out", str(tmp_path / "o")],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2, proc.stderr
    assert says in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists(), "nothing written before the request is checked"


@needs_nvcc
def test_grading_a_class_exits_0_whatever_the_students_results(tmp_path):
    """The face on a class with a refused submission and a broken one, compiled only (no GPU
    visible to it): exit status 0, the scoreboard and a page per student written. (The whole
    fixture class is graded without the face above.)"""
    import shutil

    klass = make_class(tmp_path / "class")
    for student in klass.iterdir():
        if student.name not in ("a_correct", "d_compile_error", "h_forbidden"):
            shutil.rmtree(student)
    proc = subprocess.run(
        [sys.executable, "build_report.py", "--grade", str(klass), "--gpu", "h100", "--out", str(tmp_path / "o")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "CUDA_VISIBLE_DEVICES": ""},
    )
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "o" / "scoreboard.csv").is_file() and (tmp_path / "o" / "students" / "a_correct.html").is_file()
    arch = grade.arch_for("h100")  # the profile's GPU (the lab's GTX 680: the oldest architecture nvcc builds)
    assert f"compiled for {arch}" in (tmp_path / "o" / "scoreboard.csv").read_text()


def test_an_nthu_case_is_answered_byte_for_byte_and_a_wrong_answer_says_how_many_entries_differ(tmp_path):
    """The case kind of chapter 04 (``--cases``): its expected answer is the lab's reference
    solver's, in the NTHU output format; an answer is checked byte for byte."""
    import numpy as np

    from cudalab.chapter import declarations
    from cudalab.grading import cases
    from cudalab.labs.fw import nthu

    v = 40
    nthu.write_case(tmp_path / "small.in", v, nthu.generate_case(v, 0.2, seed=3))
    (tmp_path / "notes.txt").write_text("not a case")
    found = cases.cases_in(tmp_path, declarations.of("04_blocking_factor").yours[0].cases.suffix)
    assert [p.name for p in found] == ["small.in"]
    kind = cases.kind_of(declarations.of("04_blocking_factor").yours[0].cases.kind)
    expected = kind.expected(found[0])
    v2, edges = nthu.read_case(found[0])
    assert expected == np.ascontiguousarray(nthu.solve_numpy(v2, edges), dtype="<i4").tobytes()
    answer = tmp_path / "answer.out"
    answer.write_bytes(expected)
    assert checks.differs(answer, expected) == ""
    wrong = bytearray(expected)
    wrong[4:8] = (12345).to_bytes(4, "little")
    answer.write_bytes(bytes(wrong))
    assert checks.differs(answer, expected).startswith(f"1 of {v * v:,} int32 entries differ")
    assert checks.differs(answer.with_name("missing.out"), expected) == "wrote no output"
    short = answer.with_name("short.out")
    short.write_bytes(expected[:6])
    assert checks.differs(short, expected) == f"the output has 6 bytes, the expected {len(expected):,}"


def test_a_kmeans_case_is_checked_against_the_sequential_codes_memberships_near_ties_excepted(tmp_path):
    """The case kind of chapter 06 (``--cases``): K from the file's name; the verdict is the
    memberships after the second iteration, where an object outside the sequential code's
    cluster is wrong unless it was near a tie; the whole run's agreement is a note only."""
    import numpy as np

    from cudalab.chapter import declarations
    from cudalab.grading import cases
    from cudalab.labs.kmeans import files, reference

    points = reference.blobs(3000, 4, 6, seed=11)
    files.write_binary(tmp_path / "blobs.k6.bin", points)
    (tmp_path / "blobs.in").write_text("another chapter's case")
    yours = declarations.of("06_kmeans_device_update").yours[0]
    found = cases.cases_in(tmp_path, yours.cases.suffix)
    assert [p.name for p in found] == ["blobs.k6.bin"]
    kind = cases.kind_of(yours.cases.kind)
    expected = kind.expected(found[0])
    n = len(points)
    early = reference.classic(points, 6, max_loop=1)
    whole = reference.classic(points, 6)
    assert early.iterations > 2, "blobs take more than two iterations (max_loop stopped it): the verdict is the 2nd's"
    assert np.array_equal(np.frombuffer(expected, "<i4", n), early.membership)

    def answer(early_membership, final_membership, iterations) -> Path:
        path = tmp_path / "answer.out"
        path.write_bytes(
            b"".join(np.asarray(a, "<i4").tobytes() for a in (early_membership, final_membership, [iterations]))
        )
        return path

    why, note = kind.verdict(answer(early.membership, whole.membership, whole.iterations), expected)
    assert (
        why == ""
        and note
        == f"whole run: 100.00% of objects in the sequential code's cluster, {whole.iterations} iterations (its {whole.iterations})"
    )
    moved = early.membership.copy()
    moved[7] = (moved[7] + 1) % 6  # a point of a blob, far from any tie
    why, _ = kind.verdict(answer(moved, whole.membership, whole.iterations), expected)
    assert why.startswith(f"after iteration 2, 1 of {n:,} objects are outside the sequential code's cluster")
    assert "object 7" in why
    tie = np.frombuffer(expected, np.uint8, n, 4 * n).copy()
    tie[7] = 1  # the same move at a near tie is no error
    why, _ = kind.verdict(
        answer(moved, whole.membership, whole.iterations),
        bytes(expected[: 4 * n]) + tie.tobytes() + bytes(expected[5 * n :]),
    )
    assert why == ""
    other = whole.membership.copy()
    other[:30] = (other[:30] + 1) % 6  # the whole run ends elsewhere: a note, never a verdict
    why, note = kind.verdict(answer(early.membership, other, whole.iterations + 3), expected)
    assert why == "" and f"{1 - 30 / n:.2%}" in note
    assert kind.verdict(tmp_path / "none.out", expected)[0] == "wrote no output"
    (tmp_path / "short.out").write_bytes(b"1234")
    assert "bytes" in kind.verdict(tmp_path / "short.out", expected)[0]


def test_after_a_point_the_worker_reports_crashed_the_rest_are_not_run(tmp_path):
    body = (
        _emit("start", index=0)
        + _emit("point", index=0, status="crashed", reason="the kernel faulted")
        + "sys.exit(3)\n"
    )
    result = isolate.run(
        {"points": [[{}, "f.cu"]], "cases": [["a.in", "a.out"], ["b.in", "b.out"]]}, worker=_fake(tmp_path, body)
    )
    assert [p["status"] for p in result["points"]] == [R.CRASHED, R.NOT_RUN, R.NOT_RUN]


@needs_nvcc
def test_a_students_build_checks_the_signature_before_anything_runs(tmp_path):
    """In a student's measured build (``grading.section``), a file whose kernels do not fit the
    chapter's launch never reaches the GPU: its points say so, naming the expected signature."""
    from cudalab.grading import section
    from cudalab.grading.submission import check, stage
    from tests.grading_class import students

    klass = tmp_path / "class"
    for name in ("a_correct", "e_signature", "d_compile_error"):
        (klass / name).mkdir(parents=True)
        (klass / name / "fw_blocked.cu").write_text(students()[name]["fw_blocked.cu"])
    task, _ladder = plan.chapter_tasks("04_blocking_factor", ["fw_blocked.cu"])  # the blocked kernels, the ladder
    verdicts = {
        n: section._misfits(task, stage(check(klass / n), tmp_path / "staged" / n))
        for n in ("a_correct", "e_signature", "d_compile_error")
    }
    assert verdicts["a_correct"] == {}
    assert verdicts["e_signature"]["fw_blocked.cu"]["status"] == R.MISFIT
    assert "fw_blocked_phase3(int* d, int n, int r)" in verdicts["e_signature"]["fw_blocked.cu"]["reason"]
    assert verdicts["d_compile_error"]["fw_blocked.cu"]["status"] == R.DOES_NOT_COMPILE
    assert verdicts["d_compile_error"]["fw_blocked.cu"]["reason"].startswith("fw_blocked.cu:")


@needs_nvcc
def test_a_compile_that_runs_past_its_limit_is_stopped_and_said(tmp_path, monkeypatch):
    from cudalab.core.errors import KernelCompileError
    from cudalab.core.paths import KERNELS_DIR
    from cudalab.toolchain import compile_only

    monkeypatch.setattr(compile_only, "COMPILE_LIMIT_S", 0.01)
    with pytest.raises(KernelCompileError, match="ran past 0.01 s"):
        compile_only.entry_signatures(KERNELS_DIR / "fw_blocked.cu", "sm_90")


def test_a_students_kernel_is_called_faster_only_beyond_the_spread_and_never_when_wrong():
    from cudalab.grading.section import _verdict

    def pair(point, ref_ms, mine_ms, status="ok", spread=0.001):
        return [
            {"point": point, "source": "reference", "status": "ok", "time_ms": ref_ms, "time_ms_q1": ref_ms - spread,
             "time_ms_q3": ref_ms + spread, "speed_vs_reference": 1.0, "fraction_of_ceiling": None, "reason": ""},
            {"point": point, "source": "yours", "status": status, "time_ms": mine_ms, "time_ms_q1": mine_ms - spread,
             "time_ms_q3": mine_ms + spread, "speed_vs_reference": ref_ms / mine_ms if status == "ok" else None,
             "fraction_of_ceiling": None, "reason": "" if status == "ok" else "7 mismatches"},
        ]  # fmt: skip

    said = _verdict(
        pd.DataFrame(
            pair("same", 8.238, 8.231) + pair("fast", 10.0, 5.0) + pair("noisy", 10.0, 9.0, spread=2.0)
            + pair("wrong", 10.0, 1.0, status="wrong")
        )
    )  # fmt: skip
    assert "(as fast as it)" in said[0] and "(faster than it)" in said[1] and "(as fast as it)" in said[2]
    assert "**wrong**" in said[3] and "faster" not in said[3]


@needs_nvcc
def test_a_chapter_with_two_kernel_files_measures_each_by_its_own_recipe(tmp_path):
    """Chapter 02 asks for the row-order kernel and vecMax: its two ``yours`` groups each take the
    file their points build from; compiled only here, each point says so."""
    from cudalab.core.paths import KERNELS_DIR

    klass = tmp_path / "class"
    (klass / "ann").mkdir(parents=True)
    for name in ("fw_coalesced.cu", "vecmax_coalescing.cu"):
        (klass / "ann" / name).write_text((KERNELS_DIR / name).read_text())
    out = pages.prepare(tmp_path / "out")
    board = grade.grade(grade.GradeOptions(klass, out, arch="sm_90", measure=False), log=lambda _: None).scoreboard
    mine = board[board["chapter"].eq("02_coalescing")]
    assert sorted(mine["file"]) == ["fw_coalesced.cu", "vecmax_coalescing.cu", "vecmax_coalescing.cu"]
    assert set(mine["status"]) == {R.COMPILED_ONLY}
    assert {p for p in mine["point"] if "vecmax" in p} == {
        "n=67108864, blocks=1056, threads_per_block=256, kernel=vecmax00",
        "n=67108864, blocks=1056, threads_per_block=256, kernel=vecmax02",
    }


def test_the_vecmax_recipe_builds_from_a_copy_of_its_own_file_only(tmp_path):
    from cudalab.core.errors import CudalabError
    from cudalab.labs.vecmax_point import VECMAX_POINT

    other = tmp_path / "fw_coalesced.cu"
    other.write_text("// not vecMax\n")
    with pytest.raises(CudalabError, match="is not a kernel file of the vecmax02 kernel"):
        VECMAX_POINT.measure(dict(VECMAX_POINT.defaults), kernel_file=str(other), params={"seed": 1})
    assert VECMAX_POINT.kernel_file_for({"kernel": "vecmax00"}) == "vecmax_coalescing.cu"


def test_submissions_as_dask_tasks_come_back_in_order_and_one_that_dies_costs_only_itself(tmp_path):
    """``--workers``: each submission's process is a task on the pool (process workers here, no GPU);
    its results come back on its own pipe from inside the Dask worker, in the submissions' order,
    and a process that dies is marked crashed while the others are graded."""
    pytest.importorskip("distributed")
    from cudalab.grading import spread

    body = (
        _emit("start", index=0)
        + "if request.get('die'): os.kill(os.getpid(), signal.SIGSEGV)\n"
        + "print(json.dumps({'event': 'point', 'index': 0, 'status': 'ok', 'time_ms': request['ms']}), file=events, flush=True)\n"
    )
    requests = [{"chapter": "04_blocking_factor", "points": [[{}, "f.cu"]], "ms": i} for i in range(4)]
    requests[2]["die"] = True
    options = grade.GradeOptions(tmp_path, tmp_path / "out", workers=2, limits=isolate.Limits(point=20, submission=60))
    said: list[str] = []
    pool = spread.open_pool(options.workers, said.append)
    try:
        results = spread.run(
            pool, requests, [f"s{i}" for i in range(4)], [options.limits] * 4, said.append, worker=_fake(tmp_path, body)
        )
    finally:
        pool.close()
    assert [r["points"][0]["status"] for r in results] == ["ok", "ok", R.CRASHED, "ok"]
    assert [r["points"][0].get("time_ms") for r in results if r["points"][0]["status"] == "ok"] == [0, 1, 3]
    assert any("LocalCluster" in line for line in said), said


@needs_nvcc
@pytest.mark.parametrize("workers", [None, pytest.param(2, marks=pytest.mark.full)])  # the pool: make test-full
def test_a_measured_class_is_scored_beside_its_reference_serially_and_on_a_pool(tmp_path, workers, monkeypatch):
    """``--grade`` measuring (a stand-in for each submission's process, no GPU here): the reference
    and the ceiling are measured in the same run, serially or as tasks on the pool beside the
    students (the pool opens while the compiler checks them); each correct student is scored
    against them and ranked. The stand-in reports its points measured, as the real worker does;
    the judging of their answers (tests/test_verdicts.py) is stood in for by one that finds every
    measured point right."""
    if workers:
        pytest.importorskip("distributed")

    def every_measured_point_right(task, result, run_seed, folder, expected):
        for p in result["points"]:
            if p.get("status") == "measured":
                p.update(status=R.OK, reason="")
                p.pop("last_timed", None)

    monkeypatch.setattr(grade.trials, "judge_task", every_measured_point_right)
    klass = tmp_path / "class"
    ref = (KERNELS_DIR / "fw_blocked.cu").read_text()
    for name in ("a", "b"):
        (klass / name).mkdir(parents=True)
        (klass / name / "fw_blocked.cu").write_text(ref)
    body = (
        "if request.get('ceiling'):\n"
        + "    print(json.dumps({'event': 'ceiling', 'name': request['ceiling'], 'value': 4.0e12}), file=events, flush=True)\n"
        + "ms = 10.0 if not request.get('folder') else (8.0 if request['folder'].endswith('a') else 12.0)\n"
        + "for i, _ in enumerate(request['points']):\n"
        + "    print(json.dumps({'event': 'start', 'index': i}), file=events, flush=True)\n"
        + "    print(json.dumps({'event': 'point', 'index': i, 'status': 'measured', 'time_ms': ms, 'last_timed': 0}), "
        "file=events, flush=True)\n"
    )
    out = pages.prepare(tmp_path / "out")
    said: list[str] = []
    options = grade.GradeOptions(klass, out, only=("04",), workers=workers, measure=True, worker=_fake(tmp_path, body))
    board = grade.grade(options, log=said.append).scoreboard
    assert set(board["point"]) == {SHARED_POINT, LADDER_POINT} and board["status"].eq(R.OK).all()
    board = board[board["point"].eq(SHARED_POINT)].set_index("student")
    a, b = board.loc["a"], board.loc["b"]
    assert a["status"] == b["status"] == R.OK
    assert a["reference_time_ms"] == b["reference_time_ms"] == 10.0
    assert a["speed_vs_reference"] == 10.0 / 8.0 and a["rank"] == 1 and b["rank"] == 2
    assert a["ceiling_per_s"] == 4.0e12 and 0 < a["fraction_of_ceiling"] < 1
    assert any(line.startswith("graded reference 04_blocking_factor") for line in said), said
    assert any("LocalCluster" in line for line in said) == bool(workers), said


@needs_nvcc
def test_a_class_graded_with_sweep_takes_each_chapters_sweep_and_draws_it_on_the_page(tmp_path, monkeypatch):
    """Issue 67 item 5, ``--grade --sweep`` (a stand-in for each process, no GPU here): a student's
    chapter 04 is graded at its declared point and at every point of the sweep that the H200
    recording of profile h200 measured with the shared kernel and that the file builds for; a
    point wrong at BF 16 is wrong on the scoreboard and a red cross on the student's page, beside
    the reference's series and the ceiling. Without --sweep, the declared point alone."""
    from cudalab.core import gpu as gpu_module

    monkeypatch.setattr(gpu_module, "gpu_name", lambda: "NVIDIA H200")
    monkeypatch.setattr(gpu_module, "compute_capability", lambda: "9.0")

    def wrong_at_bf16_for_students(task, result, run_seed, folder, expected):
        for (point, _), p in zip(task.points, result["points"], strict=True):
            if p.get("status") == "measured":
                bad = point.get("block_factor") == 16 and grade.REFERENCE_ANSWERS not in str(folder)
                p.update(status=R.WRONG if bad else R.OK, reason="2 entries differ" if bad else "")
                p.pop("last_timed", None)

    monkeypatch.setattr(grade.trials, "judge_task", wrong_at_bf16_for_students)
    klass = tmp_path / "class"
    (klass / "a").mkdir(parents=True)
    (klass / "a" / "fw_blocked.cu").write_text((KERNELS_DIR / "fw_blocked.cu").read_text())
    body = (
        "if request.get('ceiling'):\n"
        + "    print(json.dumps({'event': 'ceiling', 'name': request['ceiling'], 'value': 2.0e13}), file=events, flush=True)\n"
        + "for i, (point, _) in enumerate(request['points']):\n"
        + "    ms = point['n'] ** 3 / 1e10 * (1.0 if request.get('folder') else 1.1)\n"
        + "    print(json.dumps({'event': 'start', 'index': i}), file=events, flush=True)\n"
        + "    print(json.dumps({'event': 'point', 'index': i, 'status': 'measured', 'time_ms': ms, 'last_timed': 0}), "
        "file=events, flush=True)\n"
    )

    def graded(sweep: bool):
        out = pages.prepare(tmp_path / f"out-{sweep}")
        options = grade.GradeOptions(klass, out, only=("04",), measure=True, worker=_fake(tmp_path, body), races=False,
                                     sweep=sweep, profile="h200")  # fmt: skip
        result = grade.grade(options, log=lambda line: None)
        return result, pages.write(result, out, title="sweep")

    plain, _ = graded(False)
    assert list(plain.scoreboard["point"]) == [SHARED_POINT, LADDER_POINT]
    result, written = graded(True)
    board = result.scoreboard
    recorded = pd.read_csv(RESULTS_DIR / "nvidia-h200" / "h200" / "04_blocking_factor" / "blocking_factor_sweep.csv")
    measured = recorded[recorded["kernel"].eq("shared") & recorded["status"].eq("ok")]
    want = {f"n={n}, block_factor={bf}, kernel=shared" for n, bf in zip(measured["n"], measured["block_factor"])}
    ladder = pd.read_csv(RESULTS_DIR / "nvidia-h200" / "h200" / "04_blocking_factor" / "ladder.csv")
    steps = ladder[ladder["variant"].str.match(r"[4-7]\. ")]  # the steps built from fw_blocked.cu
    want |= {f"n={n}, variant={v}" for n, v in zip(steps["n"], steps["variant"])}
    assert len(steps) == 4 and set(board["point"]) == want | {SHARED_POINT, LADDER_POINT}
    assert "n=16384, block_factor=8, kernel=shared" not in set(board["point"]), "the recording skipped it"
    at16 = board[board["point"].str.contains("block_factor=16")]
    assert (at16["status"] == R.WRONG).all() and at16["speed_vs_reference"].isna().all()
    verdict = result.students.set_index("student").loc["a"]
    assert verdict["verdict"] == R.WRONG and pd.isna(verdict["speed_vs_reference_geomean"]), "no speed for a wrong file"
    page = written["students/a.html"].read_text()
    assert "04_blocking_factor: Blocked kernels over N" in page and "data:image/png;base64," in page
    assert "04_blocking_factor: The optimization ladder" in page and "hatched bars: yours" in page
    assert "a red cross: 1 point(s) not correct" in page


def test_only_a_point_that_answered_is_race_checked():
    """A race charges a point that answered (ok or wrong); a kernel that never returned is not run
    again under the sanitizer, where it would hold a slot for twice the submission's limit."""
    assert not grade._chargeable({"points": [{"status": R.TIMED_OUT}, {"status": R.NOT_RUN}]})
    assert not grade._chargeable({"points": [{"status": R.CRASHED}]})
    assert grade._chargeable({"points": [{"status": R.CRASHED}, {"status": R.WRONG}]})
    assert grade._chargeable({"points": [{"status": R.OK}]})


@needs_nvcc
def test_a_build_that_fails_at_one_graded_point_costs_that_point_alone(tmp_path):
    """Chapter 04 grades fw_blocked.cu at BF 32 and at the ladder's step 7 (BF 64, 22 registers): a
    file that does not build at BF 64 does not compile there, with the compiler's line, and is
    still built (here, compiled only) at BF 32. Bug: the verdict was keyed by file, so one build's
    error condemned every point of it."""
    klass = tmp_path / "class"
    (klass / "a").mkdir(parents=True)
    text = (KERNELS_DIR / "fw_blocked.cu").read_text()
    (klass / "a" / "fw_blocked.cu").write_text(text + "\n#if BF == 64\n#error not at BF 64\n#endif\n")
    out = pages.prepare(tmp_path / "out")
    board = grade.grade(grade.GradeOptions(klass, out, arch="sm_90", measure=False, only=("04",)), log=lambda _: None)
    status = dict(zip(board.scoreboard["point"], board.scoreboard["status"], strict=True))
    assert status == {SHARED_POINT: R.COMPILED_ONLY, LADDER_POINT: R.DOES_NOT_COMPILE}, status
    ladder = board.scoreboard.set_index("point").loc[LADDER_POINT]
    assert "not at BF 64" in ladder["reason"] and ladder["reason"].startswith("fw_blocked.cu:")
