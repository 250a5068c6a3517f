"""Races without a GPU (issue 65, item 5): compute-sanitizer's racecheck and synccheck reports parsed
into hazards, and the grader's verdict per kernel file (race with file:line, ok, not checked) from
the tools' runs. tests/test_gpu_races.py runs the tools."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudalab.core.paths import KERNELS_DIR
from cudalab.grading import plan, races
from cudalab.toolchain import hazards as sanitizer
from cudalab.toolchain.hazards import Hazard, ToolRun

STAGED = "/tmp/grade/staged/alice"
REF = str(KERNELS_DIR / "fw_blocked.cu")

# racecheck's analysis report as compute-sanitizer 2025.3 printed it on an H200 for the lab's phases 1
# and 2 (fw_blocked.cu before issue 65 item 5; the file by its name alone) ...
ANALYSIS = """========= COMPUTE-SANITIZER
========= Error: Race reported between Write access at fw_blocked_phase1+0x1f0 in fw_blocked.cu:49
=========     and Read access at fw_blocked_phase1+0x1c0 in fw_blocked.cu:49 [7316 hazards]
=========
========= Warning: Race reported between Read access at fw_blocked_phase1+0x220 in fw_blocked.cu:49
=========     and Write access at fw_blocked_phase1+0x250 in fw_blocked.cu:49 [124 hazards]
=========
========= Error: Race reported between Read access at fw_blocked_phase2+0x260 in fw_blocked.cu:83
=========     and Write access at fw_blocked_phase2+0x2b0 in fw_blocked.cu:84 [512 hazards]
=========
========= RACECHECK SUMMARY: 100 hazards displayed (253 errors, 2 warnings)
"""
# ... and as the older ones did (offset, then file:line:kernel(signature))
ANALYSIS_OLD = """========= ERROR: Race reported between Write access at 0x00000150 in /x/kernels_cu/fw_blocked.cu:49:fw_blocked_phase1(int*, int, int)
=========     and Read access at 0x00000470 in /x/kernels_cu/fw_blocked.cu:49:fw_blocked_phase1(int*, int, int) [4 hazards]
=========
========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)
"""
HAZARD_MODE = f"""========= Error: Potential RAW hazard detected at __shared__ 0x84 in block (0,0,0) :
=========     Write Thread (1,1,0) at fw_blocked_phase1+0x1f0 in {STAGED}/fw_blocked.cu:49
=========     Read Thread (0,1,0) at fw_blocked_phase1+0x1c0 in {STAGED}/fw_blocked.cu:49
=========     Current Value : 5, Incoming Value : 5
=========
========= Error: Potential RAW hazard detected at __shared__ 0x88 in block (0,0,0) :
=========     Write Thread (2,1,0) at fw_blocked_phase1+0x1f0 in {STAGED}/fw_blocked.cu:49
=========     Read Thread (0,1,0) at fw_blocked_phase1+0x1c0 in {STAGED}/fw_blocked.cu:49
=========     Current Value : 7, Incoming Value : 7
=========
========= Warning: (Warp Level Programming) Potential WAR hazard detected at __shared__ 0x1180 in block (0,0,0) :
=========     Read Thread (31,27,0) at fw_blocked_phase1+0x160 in fw_blocked.cu:49
=========     Write Thread (0,27,0) at fw_blocked_phase1+0x190 in fw_blocked.cu:49
=========     Current Value : 0, Incoming Value : 0
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame: _PyObject_MakeTpCall [0x14907d] in python3
=========
========= RACECHECK SUMMARY: 3 hazards displayed (2 errors, 1 warning)
"""
SYNC = f"""========= Barrier error detected. Divergent thread(s) in block
=========     at fw_shared_tile+0x2b0 in {STAGED}/fw_shared_tile.cu:31
=========     by thread (0,5,0) in block (2,2,0)
=========
========= ERROR SUMMARY: 1 error
"""
CLEAN = "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n"


def test_racecheck_analysis_lines_become_hazards_with_file_line_and_kernel():
    found = sanitizer.parse(ANALYSIS, "racecheck")
    assert [(h.kernel, h.name, h.line, h.count, h.severity) for h in found] == [
        ("fw_blocked_phase1", "fw_blocked.cu", 49, 7316, "error"),
        ("fw_blocked_phase1", "fw_blocked.cu", 49, 124, "warning"),
        ("fw_blocked_phase2", "fw_blocked.cu", 83, 512, "error"),
    ]
    first = found[0]
    assert first.where == "fw_blocked.cu:49"
    assert first.what == (
        "a shared-memory write at fw_blocked.cu:49 races a shared-memory read at fw_blocked.cu:49 in fw_blocked_phase1"
    )
    assert sanitizer.summary_count(ANALYSIS, "racecheck") == 100


def test_the_older_analysis_format_and_a_log_without_prefix_parse_alike():
    (old,) = sanitizer.parse(ANALYSIS_OLD, "racecheck")
    assert (old.kernel, old.name, old.line, old.count) == ("fw_blocked_phase1", "fw_blocked.cu", 49, 4)
    assert old.file == "/x/kernels_cu/fw_blocked.cu" and "/x/" not in old.what
    bare = "\n".join(line.lstrip("= ") for line in ANALYSIS.splitlines())
    assert [(h.name, h.line) for h in sanitizer.parse(bare, "racecheck")] == [
        ("fw_blocked.cu", 49),
        ("fw_blocked.cu", 49),
        ("fw_blocked.cu", 83),
    ]


def test_racecheck_hazard_mode_merges_the_same_place():
    merged, warp = sanitizer.parse(HAZARD_MODE, "racecheck")
    assert (merged.kernel, merged.where, merged.count) == ("fw_blocked_phase1", "fw_blocked.cu:49", 2)
    assert merged.what.startswith("a RAW hazard on shared memory: write by thread (1,1,0) at fw_blocked.cu:49")
    assert (warp.severity, warp.where) == ("warning", "fw_blocked.cu:49")
    assert warp.what.startswith("a WAR hazard on shared memory: read by thread (31,27,0)")


def test_synccheck_errors_and_summaries():
    (h,) = sanitizer.parse(SYNC, "synccheck")
    assert (h.tool, h.kernel, h.where) == ("synccheck", "fw_shared_tile", "fw_shared_tile.cu:31")
    assert h.what.startswith("barrier error detected. Divergent thread(s) in block (thread (0,5,0), block (2,2,0))")
    assert sanitizer.summary_count(SYNC, "synccheck") == 1
    assert sanitizer.summary_count(CLEAN, "racecheck") == 0
    assert sanitizer.summary_count("Error: target application terminated", "racecheck") is None


def test_a_location_without_line_information_keeps_its_kernel():
    assert sanitizer.location("fw_blocked_phase1+0x1f0") == ("fw_blocked_phase1", "", None)
    assert sanitizer.location("0x150 in fw_blocked_phase1(int*, int, int)") == ("fw_blocked_phase1", "", None)
    (h,) = sanitizer.parse(
        "Error: Race reported between Write access at k+0x10\n and Read access at k+0x20 [3 hazards]", "racecheck"
    )
    assert (h.kernel, h.file, h.line, h.where) == ("k", "", None, "k")


def test_a_kernel_printf_cannot_split_a_report_line():
    """Output glued before a report line (a printf with no newline) does not hide it."""
    log = "xyz" + ANALYSIS.splitlines()[1] + "\n" + ANALYSIS.splitlines()[2] + "\n"
    assert [h.line for h in sanitizer.parse(log, "racecheck")] == [49]


def test_run_tool_without_the_sanitizer_says_so(monkeypatch):
    monkeypatch.setattr(sanitizer, "cuda_tool", lambda name: None)
    run = sanitizer.run_tool("racecheck", ["-c", "pass"])
    assert not run.ran and run.reason == "compute-sanitizer not found"
    with pytest.raises(ValueError):
        sanitizer.run_tool("memcheck", ["-c", "pass"])


FAKE_SANITIZER = """#!/usr/bin/env bash
# compute-sanitizer stood in for: says it started, waits (up to 20 s) until every tool of the run
# has started, reads its stdin, then writes the tool's summary to its --log-file
tool=$2; log=""
while [ $# -gt 0 ]; do [ "$1" = --log-file ] && log=$2; shift; done
touch "$RENDEZVOUS/$tool.started"
for _ in $(seq 200); do
  [ -e "$RENDEZVOUS/racecheck.started" ] && [ -e "$RENDEZVOUS/synccheck.started" ] && break
  sleep 0.1
done
[ -n "$NOREAD" ] || cat > "$RENDEZVOUS/$tool.stdin"
sleep "${HOLD:-0}"
[ -e "$RENDEZVOUS/racecheck.started" ] && [ -e "$RENDEZVOUS/synccheck.started" ] || exit 3
case $tool in
  racecheck) echo "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)" > "$log" ;;
  *) echo "========= ERROR SUMMARY: 0 errors" > "$log" ;;
esac
"""


@pytest.fixture
def fake_sanitizer(tmp_path, monkeypatch):
    script = tmp_path / "compute-sanitizer"
    script.write_text(FAKE_SANITIZER)
    script.chmod(0o755)
    monkeypatch.setattr(sanitizer, "cuda_tool", lambda name: str(script))
    monkeypatch.setenv("RENDEZVOUS", str(tmp_path))
    return tmp_path


def test_the_tools_run_side_by_side_each_on_its_own_request(fake_sanitizer):
    """Bug: racecheck ran the target to its end before synccheck started, so a grader waited for the
    sum of the two. The stand-in finishes only once both tools have started (else no summary)."""
    runs = sanitizer.run_tools([("racecheck", "one"), ("synccheck", "two")], ["-c", "pass"], timeout_s=60)
    assert [(r.tool, r.ran, r.reported, r.reason) for r in runs] == [
        ("racecheck", True, 0, ""),
        ("synccheck", True, 0, ""),
    ]
    assert (fake_sanitizer / "racecheck.stdin").read_text() == "one"
    assert (fake_sanitizer / "synccheck.stdin").read_text() == "two"


def test_a_target_that_never_reads_its_request_holds_up_no_tool(fake_sanitizer, monkeypatch):
    """Bug: the request was written into a pipe before the next tool started, so a target that did
    not read a request past the pipe's 64 KiB left the grader waiting, with no limit, and the next
    tool never started. The request is a file now: both tools start, and the limit ends both."""
    import threading

    monkeypatch.setenv("NOREAD", "1")
    monkeypatch.setenv("HOLD", "30")
    big = "x" * (1 << 20)
    done: list = []
    worker = threading.Thread(
        target=lambda: done.append(
            sanitizer.run_tools([("racecheck", big), ("synccheck", big)], ["-c", "pass"], timeout_s=2)
        ),
        daemon=True,
    )
    worker.start()
    worker.join(60)
    assert done, "run_tools was still waiting after a minute"
    assert [r.reason for r in done[0]] == ["racecheck did not finish within 2 s", "synccheck did not finish within 2 s"]
    assert (fake_sanitizer / "racecheck.started").exists() and (fake_sanitizer / "synccheck.started").exists()


def test_tools_past_the_limit_are_all_killed_and_say_so(fake_sanitizer, monkeypatch):
    monkeypatch.setenv("HOLD", "30")
    runs = sanitizer.run_tools([("racecheck", ""), ("synccheck", "")], ["-c", "pass"], timeout_s=2)
    assert [(r.ran, r.reason) for r in runs] == [
        (False, "racecheck did not finish within 2 s"),
        (False, "synccheck did not finish within 2 s"),
    ]


# ------------------------------------------------------------------------------ verdicts


@pytest.fixture(scope="module")
def blocked():
    """Chapter 04's first group: fw_blocked.cu at BF 32."""
    (task, *_) = plan.chapter_tasks("04_blocking_factor")
    assert task.files == ["fw_blocked.cu"]
    return task


@pytest.fixture(scope="module")
def two_files():
    """Chapter 04's second group: the register-tiled and min-plus files (whose points launch the
    reference's phases 1 and 2 of fw_blocked.cu)."""
    task = plan.chapter_tasks("04_blocking_factor")[1]
    assert task.files == ["fw_blocked_registers.cu", "fw_blocked_minplus.cu"]
    return task


def _ran(task, tool="racecheck", hazards=(), reported=None, ran=True, reason=""):
    points = {i: {"index": i, "status": "ran"} for i in range(len(task.points))}
    count = len(hazards) if reported is None else reported
    return ToolRun(tool, list(hazards), ran, reason, count if ran else None, "", 0, 1.5), points


def _folder(tmp_path, *names):
    folder = tmp_path / "alice"
    folder.mkdir()
    for name in names:
        (folder / name).write_text("// a student's copy\n")
    return folder


def test_a_hazard_in_the_submission_is_a_race_at_its_file_and_line(tmp_path, blocked):
    folder = _folder(tmp_path, "fw_blocked.cu")
    h = Hazard(
        "racecheck", "fw_blocked_phase1", str(folder / "fw_blocked.cu"), 49, "a shared-memory write ...", count=62
    )
    got = races.judge(
        blocked, folder, {"racecheck": _ran(blocked, hazards=[h]), "synccheck": _ran(blocked, "synccheck")}
    )
    verdict = got["fw_blocked.cu"]
    assert verdict["status"] == "race"
    assert verdict["reason"].startswith("fw_blocked.cu:49: racecheck: a shared-memory write")
    assert "(62 hazards)" in verdict["reason"] and str(tmp_path) not in verdict["reason"]
    assert verdict["seconds"] == 1.5, "the tools run side by side: the slower's time, not the sum"


def test_clean_runs_are_ok_and_a_missing_point_is_not_checked(tmp_path, blocked):
    folder = _folder(tmp_path, "fw_blocked.cu")
    clean = {"racecheck": _ran(blocked), "synccheck": _ran(blocked, "synccheck")}
    assert races.judge(blocked, folder, clean)["fw_blocked.cu"] == {
        "status": "ok",
        "reason": "",
        "hazards": [],
        "seconds": 1.5,
    }
    run, _ = _ran(blocked)
    got = races.judge(blocked, folder, {"racecheck": (run, {}), "synccheck": _ran(blocked, "synccheck")})
    assert got["fw_blocked.cu"]["status"] == "not checked"
    assert "did not run to its end" in got["fw_blocked.cu"]["reason"]


def test_a_tool_that_did_not_finish_leaves_the_files_not_checked(tmp_path, blocked):
    folder = _folder(tmp_path, "fw_blocked.cu")
    late = _ran(blocked, ran=False, reason="racecheck did not finish within 240 s")
    got = races.judge(blocked, folder, {"racecheck": late, "synccheck": _ran(blocked, "synccheck")})
    assert got["fw_blocked.cu"]["status"] == "not checked"
    assert got["fw_blocked.cu"]["reason"] == "racecheck did not finish within 240 s"


def test_a_point_that_failed_says_why(tmp_path, blocked):
    folder = _folder(tmp_path, "fw_blocked.cu")
    run, points = _ran(blocked)
    points[0] = {"index": 0, "status": "failed", "reason": "fw_blocked.cu:12: expected a ;"}
    got = races.judge(blocked, folder, {"racecheck": (run, points)})
    assert got["fw_blocked.cu"]["status"] == "not checked"
    assert got["fw_blocked.cu"]["reason"].endswith("fw_blocked.cu:12: expected a ;")


def test_the_reference_s_own_hazard_is_never_charged_to_the_student(tmp_path, two_files):
    """A registers point launches the reference's phases 1 and 2 of fw_blocked.cu beside the
    student's phase 3: a hazard there is the reference's even where the student handed in a
    fw_blocked.cu too (the tool names files by their names alone)."""
    folder = _folder(tmp_path, "fw_blocked_registers.cu", "fw_blocked.cu")
    for named in ("fw_blocked.cu", REF):
        h = Hazard("racecheck", "fw_blocked_phase1", named, 49, "a shared-memory write ...")
        got = races.judge(two_files, folder, {"racecheck": _ran(two_files, hazards=[h])})
        for verdict in got.values():
            assert verdict["status"] == "not checked"
            assert verdict["reason"].startswith("the reference's own code reports a hazard: fw_blocked.cu:49")


def test_a_hazard_in_a_header_of_the_submission_is_charged_to_every_file_of_the_task(tmp_path, two_files):
    folder = _folder(tmp_path, "fw_blocked_registers.cu", "fw_blocked_minplus.cu", "mine.cuh")
    h = Hazard("synccheck", "fw_minplus_phase1", str(folder / "mine.cuh"), 7, "barrier error detected")
    got = races.judge(two_files, folder, {"synccheck": _ran(two_files, "synccheck", hazards=[h])})
    assert {v["status"] for v in got.values()} == {"race"}
    assert got["fw_blocked_minplus.cu"]["reason"].startswith("mine.cuh:7: synccheck: barrier error detected")


def test_on_the_reference_files_a_hazard_is_their_race(blocked):
    h = Hazard("racecheck", "fw_blocked_phase1", REF, 49, "a shared-memory write ...")
    got = races.judge(blocked, None, {"racecheck": _ran(blocked, hazards=[h])})
    assert got["fw_blocked.cu"]["status"] == "race"


def test_an_unplaced_hazard_leaves_the_files_not_checked_and_a_library_s_is_not_counted(tmp_path, blocked):
    folder = _folder(tmp_path, "fw_blocked.cu")
    unplaced = Hazard("racecheck", "fw_blocked_phase1", "", None, "a shared-memory write ...")
    got = races.judge(blocked, folder, {"racecheck": _ran(blocked, hazards=[unplaced])})
    assert got["fw_blocked.cu"]["status"] == "not checked"
    assert "could not place at a line" in got["fw_blocked.cu"]["reason"]
    library = Hazard("racecheck", "cupy_max", "/usr/include/cub/block.cuh", 10, "a shared-memory write ...")
    got = races.judge(blocked, folder, {"racecheck": _ran(blocked, hazards=[library])})
    assert got["fw_blocked.cu"]["status"] == "ok"
    counted = _ran(blocked, reported=3)
    assert races.judge(blocked, folder, {"racecheck": counted})["fw_blocked.cu"]["status"] == "not checked"


def test_side_places_a_file_by_path_or_by_name(tmp_path):
    folder = _folder(tmp_path, "fw_blocked.cu", "add_min.cuh", "mine.cuh")
    assert races.side(str(folder / "fw_blocked.cu"), folder) == races.SUBMISSION
    assert races.side(REF, folder) == races.REFERENCE
    assert races.side("fw_blocked.cu", folder, ["fw_blocked.cu"]) == races.SUBMISSION
    assert races.side("fw_blocked.cu", folder, ["fw_blocked_registers.cu"]) == races.REFERENCE
    assert races.side("add_min.cuh", folder, ["fw_blocked_registers.cu"]) == races.SUBMISSION
    assert races.side("mine.cuh", folder) == races.SUBMISSION
    assert races.side("fw_blocked.cu", None, ["fw_blocked.cu"]) == races.REFERENCE
    assert races.side("/usr/include/x.cuh", folder) == races.ELSEWHERE
    assert races.side("x.cuh", folder) == races.ELSEWHERE
    assert races.side("", folder) == races.UNPLACED


def test_without_the_sanitizer_or_a_gpu_every_file_is_not_checked(monkeypatch, two_files):
    monkeypatch.setattr(races, "unavailable", lambda: "compute-sanitizer is not installed on the grading host")
    got = races.races(two_files, None, {})
    assert set(got) == {"fw_blocked_registers.cu", "fw_blocked_minplus.cu"}
    assert {v["status"] for v in got.values()} == {"not checked"}


def test_the_target_builds_every_kernel_with_line_information(monkeypatch):
    from cudalab.core import kernels
    from cudalab.grading import _sanitize_target as target

    monkeypatch.setattr(kernels, "_module_key", kernels._module_key)  # restored after the test
    target.with_line_info()
    target.with_line_info()  # once only
    _, _, options = kernels._module_key(KERNELS_DIR / "fw_blocked.cu", ("-DBF=32",))
    assert options[-2:] == ("-DBF=32", "-lineinfo")
    _, _, again = kernels._module_key(KERNELS_DIR / "fw_blocked.cu", ("-lineinfo",))
    assert again.count("-lineinfo") == 1


def test_the_request_names_the_task_and_where_to_write(tmp_path, blocked):
    asked = races.request(blocked, Path("/s/alice"), {"seed": 1}, 7, tmp_path / "r.jsonl")
    assert asked["chapter"] == "04_blocking_factor" and asked["group"] == 0 and asked["seed"] == 7
    assert asked["points"] == [[p, f] for p, f in blocked.points] and asked["folder"] == "/s/alice"
    lines = tmp_path / "r.jsonl"
    lines.write_text('{"index": 0, "status": "ran"}\n{"index": 1, "sta')  # the second cut short
    assert races.read_points(lines) == {0: {"index": 0, "status": "ran"}}
