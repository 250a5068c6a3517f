"""Races on a GPU (issue 65, item 5): every reference kernel that a chapter's ``yours:`` grades
against runs clean under compute-sanitizer's racecheck and synccheck, at its graded points' builds
and a small input, so that a race verdict means the student's code; and a deliberately racy copy
of fw_blocked.cu is reported as a race at its file and line. Skipped without compute-sanitizer."""

from __future__ import annotations

import re
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from cudalab.chapter import catalog
from cudalab.core.paths import KERNELS_DIR
from cudalab.grading import grade, plan, races

pytestmark = pytest.mark.gpu

SEED = 65


@pytest.fixture(scope="module", autouse=True)
def sanitizer_here():
    why = races.unavailable()
    if why:
        pytest.skip(why)


def _every_task() -> list[plan.ChapterTask]:
    return [t for info in catalog.discover() for t in plan.chapter_tasks(info.id)]


def test_every_graded_reference_file_is_race_free():
    tasks = _every_task()
    assert {f for t in tasks for f in t.files} >= {"fw_blocked.cu", "fw_basic_2d.cu", "mm_02_footprint.cu"}
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=4) as pool:  # a child process each: the GPU is shared
        found = list(pool.map(lambda t: races.races(t, None, grade.chapter_params(t.chapter, None), seed=SEED), tasks))
    print(f"{len(tasks)} groups checked in {time.monotonic() - started:.0f} s, 4 at a time")
    bad = []
    for task, verdicts in zip(tasks, found, strict=True):
        for file, verdict in verdicts.items():
            print(
                f"{task.folder_name:22} {file:28} {verdict['status']:11} {verdict['seconds']:6.1f} s {verdict['reason']}"
            )
            if verdict["status"] != "ok":
                bad.append((task.folder_name, file, verdict["reason"], verdict["hazards"]))
    assert not bad, bad


def _racy(tmp_path, find: str, replace: str = "") -> tuple:
    """fw_blocked.cu with one edit inside phase 1, in a student's folder; phase 1's lines."""
    text = (KERNELS_DIR / "fw_blocked.cu").read_text()
    head, tail = text.split('extern "C" __global__ void fw_blocked_phase2', 1)
    assert head.count(find) == 1, find
    racy = head.replace(find, replace) + 'extern "C" __global__ void fw_blocked_phase2' + tail
    folder = tmp_path / "alice"
    folder.mkdir()
    (folder / "fw_blocked.cu").write_text(racy)
    lines = racy.splitlines()
    first = next(i for i, line in enumerate(lines, 1) if "void fw_blocked_phase1" in line)
    last = next(i for i, line in enumerate(lines, 1) if "void fw_blocked_phase2" in line)
    return folder, range(first, last)


@pytest.mark.parametrize(
    "find",
    [
        "        __syncthreads();  // step k - 1's stores (and the load) before step k's reads\n",
        "        __syncthreads();  // every read of row k and column k before any store of step k\n",
    ],
    ids=["barrier between the k steps removed", "stores in place (the lab's benign race)"],
)
def test_a_racy_copy_is_a_race_at_its_file_and_line(tmp_path, find):
    folder, phase1 = _racy(tmp_path, find)
    (task, *_) = plan.chapter_tasks("04_blocking_factor")
    started = time.monotonic()
    verdict = races.races(task, folder, grade.chapter_params(task.chapter, None), seed=SEED)["fw_blocked.cu"]
    print(f"{time.monotonic() - started:.1f} s: {verdict}")
    assert verdict["status"] == "race", verdict
    m = re.match(r"fw_blocked\.cu:(\d+): racecheck: ", verdict["reason"])
    assert m, verdict["reason"]
    assert int(m.group(1)) in phase1, (verdict["reason"], phase1)
    assert str(tmp_path) not in verdict["reason"] and "/" not in verdict["reason"].split(": ", 1)[0]
