"""Your kernel across the sweep, in the explorer (issue 67 item 4), without a GPU: a series recorded
on a GPU drawn beside the chapter's own, wrong points as crosses, the control disabled with its
reason; the job's process watched, its progress read and its cancel reaching every process it
started. ``tests/test_gpu_explore_series.py`` runs the real job on a GPU."""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
from conftest import notebook_defaults

from cudalab import open_chapter
from cudalab.chapter import catalog
from cudalab.core.errors import CudalabError
from cudalab.core.gpu import gpu_available
from cudalab.core.paths import KERNELS_DIR
from cudalab.explore import data, figure, series
from cudalab.grading import isolate, series_job

FIXTURE = Path(__file__).parent / "data" / "yours_series" / "04_blocking_factor_h200.csv"
MINE = "yours 2a9e0728"
CHAPTER, TABLE = "04_blocking_factor", "blocking_factor_sweep"


@pytest.fixture
def lab(tmp_path):
    """Chapter 04 replayed from the h200 recording, with the recorded student series kept beside it
    where the explorer keeps one it measured."""
    if gpu_available():
        pytest.skip("opens the chapter in replay mode")
    lab = open_chapter(
        CHAPTER, {**notebook_defaults(CHAPTER), "profile": "h200", "data_dir": str(tmp_path), "progress": False}
    )
    for csv in (lab.recorded_dir / CHAPTER).glob("*.csv"):
        shutil.copyfile(csv, lab.out_dir / csv.name)
    (lab.out_dir / series_job.FOLDER).mkdir()
    shutil.copyfile(FIXTURE, lab.out_dir / series_job.FOLDER / "2a9e0728.csv")
    return lab


def _load(lab) -> data.TableData:
    axes = data.run_tables(lab.provenance)[TABLE]
    return data.load(lab, TABLE, extra=series.sources(lab, TABLE, axes))


def test_a_recorded_series_is_a_source_beside_the_reference_measured_with_it(lab):
    d = _load(lab)
    kinds = {s.label: s.kind for s in d.sources}
    assert kinds[MINE] == data.YOURS and kinds[f"reference beside {MINE}"] == data.YOURS
    mine = d.frame[d.frame["source"].eq(MINE)]
    # every point of the chapter's table the file was measured at, each on the table's own axes
    assert set(zip(mine["n"], mine["block_factor"])) == {(8192, bf) for bf in (8, 16, 32, 64, 128)} | {
        (16384, 64),
        (16384, 128),
    }
    assert mine["variant"].str.startswith("shared BF").all() and mine["status"].eq("ok").all()
    sel = figure.default_selection(d)
    assert MINE in sel.overlays, "a student's series is drawn from the first view"
    fig = figure.draw(d, sel)
    assert any(MINE in text for text in figure.legend_texts(fig))


def test_a_point_that_is_not_correct_is_a_cross_never_a_time(lab):
    frame = pd.read_csv(FIXTURE)
    mine = frame["series"].eq(MINE)
    wrong = mine & frame["block_factor"].eq(16)
    late = mine & frame["block_factor"].eq(64) & frame["n"].eq(16384)
    frame.loc[wrong, "status"], frame.loc[late, "status"] = "wrong", "timed out"
    frame.to_csv(lab.out_dir / series_job.FOLDER / "2a9e0728.csv", index=False)
    d = _load(lab)
    sel = figure.Selection(metric="time_ms", x="n", colour="variant", overlays=[MINE], filters={})
    fig = figure.draw(d, sel)
    drawn = {round(float(y), 3) for ax in fig.axes for line in ax.get_lines() for y in line.get_ydata()}
    for row in frame[wrong | late].itertuples():
        assert round(row.time_ms, 3) not in drawn, f"{row.status} at BF {row.block_factor} drawn as a time"
    texts = figure.legend_texts(fig)
    assert "wrong result (not counted)" in texts and "timed out (not counted)" in texts
    # and no line bridges it: over the variants, the student's line at n = 8192 breaks at BF 16
    across = figure.draw(d, figure.Selection(metric="time_ms", x="variant", colour="n", overlays=[MINE]))
    (ax,) = across.axes
    at = {t.get_text(): t.get_position()[0] for t in ax.get_xticklabels()}["shared BF 16"]
    gaps = {x for line in ax.get_lines() for x, y in zip(line.get_xdata(), line.get_ydata()) if pd.isna(y)}
    assert at in gaps, (at, gaps)


def test_a_damaged_or_foreign_series_file_is_left_out(lab):
    (lab.out_dir / series_job.FOLDER / "junk.csv").write_text("not,a\nseries,file\n")
    (lab.out_dir / series_job.FOLDER / "empty.csv").write_text("")
    labels = [s.label for s, _ in series.sources(lab, TABLE, ["n", "variant"])]
    assert labels == [MINE, f"reference beside {MINE}"]


def test_without_a_gpu_the_series_control_says_why_and_the_recorded_series_is_drawn(lab, monkeypatch):
    pytest.importorskip("ipywidgets")
    from cudalab.explore import measure, widgets
    from cudalab.labs.fw.blocked.point import POINT

    monkeypatch.delenv(catalog.BATCH_ENV, raising=False)
    ex = widgets.explore(lab, TABLE, point=POINT)
    assert "cudalab-explore-series-measure" in ex.series_button._dom_classes
    assert ex.series_button.disabled and ex.series_button.tooltip == measure.why_no_gpu()
    assert "fw_blocked.cu" in ex.series_folder.placeholder
    assert ex.series_progress.layout.display == "none" and ex.series_cancel.layout.display == "none"
    assert MINE in ex.overlay.options and MINE in ex.overlay.value
    assert any(MINE in text for text in figure.legend_texts(ex.last_figure))


def test_a_chapter_that_measures_no_students_file_has_no_series_control(tmp_path, monkeypatch):
    pytest.importorskip("ipywidgets")
    if gpu_available():
        pytest.skip("opens the chapter in replay mode")
    from types import SimpleNamespace

    from cudalab.explore import widgets

    monkeypatch.delenv(catalog.BATCH_ENV, raising=False)
    chapter = "00_gpu_capabilities"
    lab = open_chapter(chapter, {**notebook_defaults(chapter), "data_dir": str(tmp_path), "progress": False})
    for csv in (lab.recorded_dir / chapter).glob("*.csv"):
        shutil.copyfile(csv, lab.out_dir / csv.name)
    assert series.kernel_files(chapter) == []
    point = SimpleNamespace(
        chapter=chapter, table="copy_bandwidth", axes={}, defaults={}, kernel_file="", kernel_choices={}
    )
    assert widgets.explore(lab, "copy_bandwidth", point=point).series_box is None


# ---- the job's process, watched and cancelled


def _stand_in(tmp_path: Path, body: str) -> tuple[str, ...]:
    """A job's process in place of ``grading._series_target``: reads its job, then ``body``; its
    child (as a worker would be) writes its pid where the test can find it."""
    script = tmp_path / "stand_in.py"
    script.write_text(
        "import json, os, signal, subprocess, sys, time\n"
        "job = json.loads(sys.stdin.read())\n"
        "def say(**event): print(json.dumps(event), flush=True)\n" + body
    )
    return (str(script),)


def _job(tmp_path: Path) -> series_job.SeriesJob:
    return series_job.SeriesJob(folder=str(tmp_path), chapter=CHAPTER, out_dir=str(tmp_path))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, not yet reaped by its parent) is gone as far as the GPU goes
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def test_progress_arrives_in_order_and_the_run_ends_with_done(tmp_path):
    body = (
        "say(event='plan', total=3, seed=7, files=['fw_blocked.cu'], refused='')\n"
        "print('a library says something on stdout')\n"
        "for i in range(3): say(event='tick', done=i + 1, total=3, what=f'point {i}')\n"
        "say(event='done', path='x.csv')\n"
    )
    events = []
    run = series.SeriesRun(_job(tmp_path), events.append, command=_stand_in(tmp_path, body))
    assert run.wait(30) == {"event": "done", "path": "x.csv"}
    assert [e["event"] for e in events] == ["plan", "tick", "tick", "tick", "done"]
    assert [e["done"] for e in events if e["event"] == "tick"] == [1, 2, 3]


def test_a_job_that_dies_without_a_word_is_an_error_with_its_last_words(tmp_path):
    body = "sys.stderr.write('Traceback...\\nMemoryError: out of memory\\n'); os._exit(3)\n"
    events = []
    log = tmp_path / "job.log"
    run = series.SeriesRun(_job(tmp_path), events.append, log=log, command=_stand_in(tmp_path, body))
    ended = run.wait(30)
    assert ended["event"] == "error" and "status 3" in ended["reason"] and "MemoryError" in ended["reason"]
    assert events == [ended]


@pytest.mark.parametrize("obeys", [True, False], ids=["obeys SIGTERM", "ignores SIGTERM"])
def test_cancel_stops_the_job_and_every_process_it_started(tmp_path, monkeypatch, obeys):
    """A job that obeys says "cancelled" once its worker is gone; one that ignores SIGTERM is killed
    after the grace period with everything it started, its worker in a session of its own (as the
    grader's workers, compilers and sanitizers are) among them. Either way the run says "cancelled",
    and the cancel returns at once."""
    monkeypatch.setattr(series, "CANCEL_GRACE_S", 2.0)
    pidfile = tmp_path / "worker.pid"
    body = (
        f"worker = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'], start_new_session=True)\n"
        f"open({str(pidfile)!r}, 'w').write(str(worker.pid))\n"
        + (
            "def stop(*a):\n    worker.kill(); worker.wait(); say(event='cancelled'); sys.exit(130)\n"
            "signal.signal(signal.SIGTERM, stop)\n"
            if obeys
            else "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        )
        + "say(event='plan', total=2, seed=1, files=[], refused='')\n"
        "say(event='tick', done=1, total=2, what='reference')\n"
        "time.sleep(120)\n"
    )
    events = []
    run = series.SeriesRun(_job(tmp_path), events.append, command=_stand_in(tmp_path, body))
    deadline = time.monotonic() + 30
    while not any(e["event"] == "tick" for e in events) and time.monotonic() < deadline:
        time.sleep(0.05)
    worker = int(pidfile.read_text())
    started = time.monotonic()
    run.cancel()
    assert time.monotonic() - started < 1, "the cancel waited for the job (the notebook would freeze)"
    ended = run.wait(30)
    assert time.monotonic() - started < 10
    assert not run.running
    assert ended == {"event": "cancelled"}, ended
    deadline = time.monotonic() + 5
    while _alive(worker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(worker), "the job's worker outlived the cancel"


def test_an_exception_in_the_wait_kills_the_worker_it_waits_on(tmp_path):
    """``isolate.run`` under a cancelled job: the interrupt unwinds the wait and the worker's
    process group goes with it (the worker here would sleep two minutes)."""
    pidfile = tmp_path / "worker.pid"
    script = tmp_path / "fake_worker.py"
    script.write_text(
        "import json, os, sys, time\n"
        "events = os.fdopen(int(os.environ['CUDALAB_EVENTS_FD']), 'w', buffering=1)\n"
        "json.loads(sys.stdin.read())\n"
        f"open({str(pidfile)!r}, 'w').write(str(os.getpid()))\n"
        "print(json.dumps({'event': 'start', 'index': 0}), file=events, flush=True)\n"
        "print(json.dumps({'event': 'point', 'index': 0, 'status': 'ok'}), file=events, flush=True)\n"
        "time.sleep(120)\n"
    )

    def interrupted(index, result):
        raise KeyboardInterrupt  # as SIGTERM raises it in the job (grading._series_target)

    with pytest.raises(KeyboardInterrupt):
        isolate.run({"points": [[{}, "f.cu"]] * 2}, worker=(str(script),), on_point=interrupted)
    assert not _alive(int(pidfile.read_text()))


def test_the_real_job_refuses_a_folder_without_the_chapters_file_in_one_line(tmp_path):
    import subprocess

    (tmp_path / "notes.txt").write_text("no kernel here\n")
    job = series_job.SeriesJob(folder=str(tmp_path), chapter=CHAPTER, out_dir=str(tmp_path / "out"))
    proc = subprocess.run(
        [sys.executable, *series.TARGET], input=job.to_json(), capture_output=True, text=True, timeout=120
    )
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert proc.returncode == 1 and [e["event"] for e in events] == ["error"]
    assert "fw_blocked.cu" in events[0]["reason"] and "\n" not in events[0]["reason"]
    assert not (tmp_path / "out").exists(), "nothing written for a refused folder"


def test_the_explorers_job_sweeps_its_own_table_alone(tmp_path):
    """The explorer of chapter 04 draws its blocking-factor sweep: its job measures the groups whose
    recipe measures that table, not the ladder's steps it would never draw (GPU time for nothing)."""
    (tmp_path / "fw_blocked.cu").write_text((KERNELS_DIR / "fw_blocked.cu").read_text())
    job = series_job.SeriesJob(folder=str(tmp_path), chapter=CHAPTER, out_dir=str(tmp_path / "out"), table="nope")
    assert series_job.SeriesJob.from_json(job.to_json()) == job
    with pytest.raises(CudalabError, match="nothing chapter 04_blocking_factor measures"):
        series_job.run(job)
    lab = SimpleNamespace(id=CHAPTER, out_dir=tmp_path, params={}, point_time_limit_s=None, ceilings=lambda: {})
    made, _ = series.job_for(lab, tmp_path, "blocking_factor_sweep")
    assert made.table == "blocking_factor_sweep"


def test_chapter_06s_series_is_a_stage_of_its_own_on_its_stage_times():
    """A k-means series point is a whole iteration, which none of stage_times's stages is: the
    chapter declares the stage it stands for (``series_axes``), the series rows carry it, and the
    explorer draws them there; a row without it is still left out (the stages are undecided)."""
    from cudalab.grading import plan
    from cudalab.grading import series as grading_series

    chapter = "06_kmeans_device_update"
    (task,) = plan.chapter_tasks(chapter, ["km_01_device_update.cu"])
    assert task.yours.series_axes == {"stage": "whole iteration"}
    label = plan.point_label(dict(task.points[0][0]))
    measured = pd.DataFrame([{"point": label, "file": "km_01_device_update.cu", "source": s, "status": "ok",
                              "time_ms": 1.5} for s in ("yours", "reference")])  # fmt: skip
    rows = grading_series.as_table(measured, task, {"km_01_device_update.cu": "ab" * 32})
    assert set(rows["stage"]) == {"whole iteration"}
    run = pd.DataFrame([{**dict(task.points[0][0]), "stage": s, "time_ms": 0.5} for s in ("assign", "update")])
    placed = series._with_axes(rows, run, ["n", "d", "k", "variant", "stage"])
    assert len(placed) == 2 and set(placed["stage"]) == {"whole iteration"}
    assert series._with_axes(rows.drop(columns="stage"), run, ["n", "d", "k", "variant", "stage"]).empty


def test_a_point_is_drawn_only_where_the_table_has_it_and_it_decides_the_tables_axes():
    """A series row is placed by its own point's keys: a row of another table (other keys) is left
    out, and so is a point at which the table holds several values of an axis the point does not
    name (chapter 06's stages: a whole iteration's time is none of them)."""
    run = pd.DataFrame(
        {
            "n": [5000, 5000, 5000, 5000],
            "block_factor": [8, 16, 64, 64],
            "kernel": ["shared", "shared", "registers", "registers"],
            "variant": ["shared BF 8", "shared BF 16", "registers BF 64", "registers BF 64 + DPX"],
            "time_ms": [1.0, 2.0, 3.0, 4.0],
        }
    )
    frame = pd.DataFrame(
        {
            "point": [
                "n=5000, block_factor=8, kernel=shared",
                "n=5000, block_factor=64, kernel=registers",  # two variants at this point: undecided
                "n=3000, block_factor=32, kernel=shared",  # not on the table's grid
                "n=5000, block_edge=32",  # another table's point
            ],
            "n": [5000, 5000, 3000, 5000],
            "block_factor": [8, 64, 32, None],
            "kernel": ["shared", "registers", "shared", None],
            "block_edge": [None, None, None, 32],
            "status": ["ok"] * 4,
            "time_ms": [1.1, 3.3, 9.9, 7.7],
        }
    )
    placed = series._with_axes(frame, run, ["n", "variant"])
    assert list(placed["variant"]) == ["shared BF 8"] and list(placed["time_ms"]) == [1.1]


def test_the_done_message_counts_what_is_drawn_and_names_each_point_not_correct(lab):
    frame = pd.read_csv(FIXTURE)
    frame.loc[frame["series"].eq(MINE) & frame["block_factor"].eq(16), "status"] = "wrong"
    path = lab.out_dir / series_job.FOLDER / "2a9e0728.csv"
    frame.to_csv(path, index=False)
    said = series.summary(path, lab, TABLE, ["n", "variant"])
    # eight points measured, the graded one (n = 3000) on no point of the h200 grid
    assert "8 point(s) of yours measured" in said and "7 of them" in said
    assert "n=8192, block_factor=16, kernel=shared: wrong" in said


@pytest.mark.parametrize(
    "folder,said",
    [("", "name the folder"), ("/no/such/folder", "no such folder"), ("~no_such_user_here/x", "no_such_user")],
)
def test_a_folder_that_cannot_be_measured_says_why_in_one_line(folder, said):
    assert said in series.folder_problem(folder) and "\n" not in series.folder_problem(folder)


def test_a_folder_that_is_a_file_is_refused(tmp_path):
    (tmp_path / "fw_blocked.cu").write_text("// a file, not a folder\n")
    assert "not a folder" in series.folder_problem(tmp_path / "fw_blocked.cu")
    assert series.folder_problem(tmp_path) is None


def test_a_job_that_fails_in_any_way_says_one_line_never_a_traceback(tmp_path):
    import subprocess

    proc = subprocess.run(
        [sys.executable, *series.TARGET], input='{"no_such_field": 1}', capture_output=True, text=True, timeout=120
    )
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert proc.returncode == 1 and [e["event"] for e in events] == ["error"], proc.stdout + proc.stderr
    assert events[0]["reason"].startswith("TypeError: ") and "Traceback" not in proc.stdout + proc.stderr


def test_a_placed_series_keeps_the_tables_own_types(lab):
    """Block factors stay 8, 16, ... in the explorer's filters, not 8.0 beside 8."""
    d = _load(lab)
    mine = d.frame[d.frame["source"].eq(MINE)]
    assert set(map(str, pd.unique(d.frame["variant"]))) >= {"shared BF 8", "shared BF 128"}
    assert str(mine["n"].dtype).startswith("int") and sorted(set(mine["n"])) == [8192, 16384]


def test_an_interrupt_in_a_compile_kills_the_compiler(tmp_path):
    """A cancelled job's interrupt while it waits on nvcc (the signature check) takes the compiler
    with it, rather than waiting up to the compile limit for it."""
    import signal

    from cudalab.core import limits as L
    from cudalab.toolchain import compile_only

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 0.5)
    try:
        with pytest.raises(KeyboardInterrupt):
            compile_only._run_limited(["sleep", "60"], tmp_path, None, compile_only.LIMITS)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    left = [p for p in L.descendants(os.getpid()) if "sleep" in Path(f"/proc/{p}/cmdline").read_text(errors="replace")]
    assert not left, f"the compiler outlived the interrupt: {left}"
