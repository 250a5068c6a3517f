"""The explorer's "Measure my series" on the GPU present (issue 67 item 4): a student's folder over
chapter 04's sweep, driven through the explorer's own controls as a JupyterLab user drives them.

The chapter is the gtx680 profile's recording of this GPU (n = 5000 at BF 8-64: a minute, not the
h200 profile's quarter of an hour). A copy of ``fw_blocked.cu`` that is wrong at BF 16 only is
measured at every point it builds for, beside the reference, in the job's own process: the wrong
point is a cross, the others are timed, the progress bar reaches its end and the figure shows the
series. A second run is cancelled after its first result: it says so, keeps nothing, and no worker
outlives it. ``CUDALAB_KEEP_SERIES=DIR`` keeps the measured series file (the fixture of
``tests/data/yours_series/``)."""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from pathlib import Path

import pandas as pd
import pytest
from conftest import notebook_defaults

from cudalab.core.paths import KERNELS_DIR

pytestmark = pytest.mark.gpu

CHAPTER, TABLE = "04_blocking_factor", "blocking_factor_sweep"
PHASE1_LOOP = "for (int k = 0; k < BF; ++k) {"


@pytest.fixture(scope="module")
def explorer(tmp_path_factory):
    pytest.importorskip("ipywidgets")
    from cudalab import open_chapter
    from cudalab.chapter import catalog
    from cudalab.explore import widgets
    from cudalab.labs.fw.blocked.point import POINT

    os.environ.pop(catalog.BATCH_ENV, None)
    base = tmp_path_factory.mktemp("explore-series")
    params = {**notebook_defaults(CHAPTER), "profile": "gtx680", "mode": "replay", "progress": False}
    lab = open_chapter(CHAPTER, {**params, "data_dir": str(base / "data")})
    for csv in (lab.recorded_dir / CHAPTER).glob("*.csv"):
        shutil.copyfile(csv, lab.out_dir / csv.name)
    return widgets.explore(lab, TABLE, point=POINT), base


def _folder(base: Path, name: str, wrong_at_bf16: bool) -> tuple[Path, str]:
    text = (KERNELS_DIR / "fw_blocked.cu").read_text()
    if wrong_at_bf16:
        assert PHASE1_LOOP in text
        text = text.replace(PHASE1_LOOP, "for (int k = 0; k < BF - (BF == 16); ++k) {", 1)
    folder = base / name
    folder.mkdir()
    (folder / "fw_blocked.cu").write_text(text)
    return folder, hashlib.sha256(text.encode()).hexdigest()


STARTED_BY_A_JOB = (b"cudalab.grading._worker_target", b"cudalab.grading._sanitize_target", b"compute-sanitizer",
                    b"nvcc", b"cicc", b"ptxas")  # fmt: skip


def _workers() -> list[int]:
    """What a series job starts, alive on this host: the grading workers (a student's kernels run
    only in them), the race checker and its target, and the signature check's compilers."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and any(p in (proc / "cmdline").read_bytes() for p in STARTED_BY_A_JOB):
                found.append(int(proc.name))
        except OSError:
            continue
    return found


def test_a_series_is_measured_from_the_explorer_and_drawn_with_its_wrong_point_a_cross(explorer):
    from cudalab.explore import figure

    ex, base = explorer
    assert not ex.series_button.disabled, ex.series_status.value
    folder, sha = _folder(base, "wrong-at-16", wrong_at_bf16=True)
    started = time.monotonic()
    run = ex.measure_series(str(folder))
    ended = run.wait(900)
    print(f"series measured in {time.monotonic() - started:.1f} s: {ended}; {ex.series_status.value}")
    assert ended and ended["event"] == "done", ended
    assert ex.series_progress.value == ex.series_progress.max > 1
    frame = pd.read_csv(ended["path"])
    # the explorer sweeps the table it shows, not the chapter's other recipes (the ladder's steps)
    assert frame["table"].eq(TABLE).all(), frame["table"].unique()
    mine = frame[frame["series"].eq(f"yours {sha[:8]}")]
    table = pd.read_csv(ex.lab.out_dir / f"{TABLE}.csv")
    built = table[table["kernel"].eq("shared")]
    assert set(mine[mine["from_sweep"]]["block_factor"].astype(int)) == set(built["block_factor"].astype(int))
    at16 = mine[mine["block_factor"].astype(int).eq(16)]
    assert len(at16) and not at16["status"].eq("ok").any(), at16[["point", "status", "reason"]]
    others = mine[mine["block_factor"].astype(int).ne(16)]
    assert others["status"].eq("ok").all() and others["speed_vs_reference"].between(0.8, 1.25).all()
    print(frame[["series", "point", "status", "time_ms", "speed_vs_reference"]].to_string())
    texts = figure.legend_texts(ex.last_figure)
    assert f"yours {sha[:8]}" in ex.overlay.value and any(f"yours {sha[:8]}" in t for t in texts), texts
    assert any("not counted" in t for t in texts), texts
    keep = os.environ.get("CUDALAB_KEEP_SERIES")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ended["path"], Path(keep) / f"{CHAPTER}_gtx680_wrong_at_bf16.csv")


def test_a_cancelled_series_stops_its_worker_and_keeps_nothing(explorer):
    from cudalab.grading import series_job

    ex, base = explorer
    folder, sha = _folder(base, "unchanged", wrong_at_bf16=False)
    run = ex.measure_series(str(folder))
    deadline = time.monotonic() + 300
    while ex.series_progress.value < 1 and run.running and time.monotonic() < deadline:
        time.sleep(0.1)
    assert run.running, f"the job ended before it could be cancelled: {run.ended}"
    started = time.monotonic()
    ex.cancel_series()
    assert time.monotonic() - started < 1, "the cancel held the notebook"
    ended = run.wait(60)
    print(f"cancelled in {time.monotonic() - started:.1f} s: {ended}; {ex.series_status.value}")
    assert ended == {"event": "cancelled"} and "cancelled" in ex.series_status.value
    deadline = time.monotonic() + 10
    while _workers() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _workers(), "a worker outlived the cancel"
    assert not series_job.series_path(ex.lab.out_dir, {"fw_blocked.cu": sha}).exists()
    assert not ex.series_button.disabled, "the control is ready for the next run"


def test_a_series_cancelled_in_its_first_second_leaves_nothing_running(explorer):
    """Cancelled while it checks the folder and compiles the signature check (nvcc), before any
    worker: it says cancelled, and no compiler outlives it."""
    ex, base = explorer
    folder, _ = _folder(base, "cancelled-early", wrong_at_bf16=False)
    run = ex.measure_series(str(folder))
    time.sleep(1.0)
    ex.cancel_series()
    ended = run.wait(60)
    print(f"cancelled early: {ended}; {ex.series_status.value}")
    assert ended == {"event": "cancelled"}
    deadline = time.monotonic() + 10
    while _workers() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _workers(), "a process the job started outlived the cancel"
