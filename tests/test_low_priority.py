"""A chapter's bulk compiles run below its timing's CPU priority (cudalab.chapter.low_priority)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from cudalab.chapter import low_priority

linux_threads = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread nice values are Linux's")


def _nice_of_this_thread() -> int:
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


@linux_threads
def test_the_work_its_threads_and_its_processes_run_lower_and_the_caller_keeps_its_priority():
    before = _nice_of_this_thread()
    expected = min(19, before + low_priority.NICENESS)

    def work():
        with ThreadPoolExecutor(2) as pool:  # as compile_ahead's pool of compiler reports
            pooled = list(pool.map(lambda _: _nice_of_this_thread(), range(4)))
        child = subprocess.run(
            [sys.executable, "-c", "import os; print(os.nice(0))"], capture_output=True, text=True, check=True
        )
        return _nice_of_this_thread(), pooled, int(child.stdout)

    own, pooled, child = low_priority.at_low_priority(work)
    assert own == expected and set(pooled) == {expected} and child == expected
    assert _nice_of_this_thread() == before


def test_the_works_result_and_its_error_come_back_to_the_caller():
    assert low_priority.at_low_priority(lambda: 42) == 42

    def fails():
        raise ValueError("no such kernel")

    with pytest.raises(ValueError, match="no such kernel"):
        low_priority.at_low_priority(fails)


def test_without_per_thread_priorities_the_work_runs_as_it_is(monkeypatch):
    monkeypatch.delattr(os, "setpriority")
    assert low_priority.lower_this_thread() is False
    assert low_priority.at_low_priority(lambda: "compiled") == "compiled"


@linux_threads
def test_a_chapters_precompile_compiles_at_low_priority(monkeypatch):
    # compile_ahead: NVRTC's builds and the compiler reports beside them, below the timing's priority
    from cudalab.chapter import occupancy as chapter_occupancy
    from cudalab.core import kernels
    from cudalab.core.launch import Dim3, Launch
    from cudalab.toolchain import nvcc, occupancy_report

    seen = {}
    base = _nice_of_this_thread()
    monkeypatch.setattr(kernels, "precompile", lambda builds: seen.setdefault("nvrtc", _nice_of_this_thread()))
    monkeypatch.setattr(
        nvcc, "kernel_resources_for_cc", lambda file, key, options: seen.setdefault("report", _nice_of_this_thread())
    )
    monkeypatch.setattr(occupancy_report, "present_key", lambda: "9.0")
    launch = Launch("fw_basic_2d.cu", "fw_basic_2d", Dim3.square(16))
    assert chapter_occupancy.compile_ahead([launch], {"GTX 680 (lab GPU)": "3.0", "H100 (this run)": "9.0"}) == 1
    assert seen == {"nvrtc": min(19, base + 10), "report": min(19, base + 10)}
