"""Chapters as Dask tasks, without a GPU: a local cluster of process workers replays the same
summaries as the serial build; a real `dask scheduler` with `dask worker` processes survives a
worker killed mid-chapter (the chapter runs once more, then fails with its reason while the others
complete); an unreachable scheduler is one line and exit 2 before any work; Ctrl-C leaves no
partial chapter and the next build resumes from the cache. A plain build never imports Dask."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import FAULT_STACKS, at_a_terminal, ctrl_c

from cudalab.core.paths import RESULTS_DIR, ROOT
from cudalab.report import order
from cudalab.report.cluster import HOLD_ENV, STAGING_PREFIX

pytest.importorskip("distributed")
pytestmark = pytest.mark.slow

CHAPTERS = ("00_gpu_capabilities", "01_block_size")


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), **FAULT_STACKS, **extra}


def build(*args: str, env: dict[str, str] | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "build_report.py"), "--format", "html", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env or _env(),
    )


def start_build(*args: str, env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(ROOT / "build_report.py"), "--format", "html", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=at_a_terminal,
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(what: str, check, timeout: float = 120):
    end = time.time() + timeout
    while time.time() < end:
        found = check()
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def _attempts(out: Path, chapter: str) -> list[str]:
    lines: list[str] = []
    for staging in out.glob(f"{STAGING_PREFIX}*"):
        path = staging / chapter / "attempts"
        if path.is_file():
            lines += path.read_text().splitlines()
    return lines


def _serial_build_without_dask(out: Path) -> None:
    """The serial build in a process of its own, which must end without Dask in ``sys.modules``."""
    code = (
        "import sys, build_report; rc = build_report.main(sys.argv[2:] + ['--format', 'html', '--out', sys.argv[1]]);"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed', 'dask_cuda'))); sys.exit(rc)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(out), "--only", *CHAPTERS],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=_env(),
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().splitlines()[-1] == "[]", f"a plain build imported {proc.stdout}"


@pytest.mark.full  # make test-full: a LocalCluster of two process workers
def test_replay_on_two_local_workers_gives_the_serial_summaries_and_a_plain_build_never_imports_dask(tmp_path):
    serial, dasked = tmp_path / "serial", tmp_path / "dask"
    _serial_build_without_dask(serial)
    second = build("--only", *CHAPTERS, "--out", str(dasked), "--workers", "2")
    assert second.returncode == 0, second.stderr[-3000:]
    assert "LocalCluster, 2 process worker(s)" in second.stderr
    # submitted longest first, by the last recorded build (issue 45): a replay has no first wave
    submitted = [line.split()[1] for line in second.stderr.splitlines() if line.endswith("(a Dask task)")]
    seconds = order.recorded_seconds("gtx680", RESULTS_DIR)
    assert submitted == order.longest_first(list(CHAPTERS), seconds), submitted
    for chapter in CHAPTERS:
        a = json.loads((serial / "data" / chapter / "summary.json").read_text())
        b = json.loads((dasked / "data" / chapter / "summary.json").read_text())
        assert a == b, chapter
        assert sorted(p.name for p in (serial / "data" / chapter).iterdir()) == sorted(
            p.name for p in (dasked / "data" / chapter).iterdir()
        )
    chapters = json.loads((dasked / "build.json").read_text())["chapters"]
    assert all(c["ok"] and c["worker"].startswith("tcp://") for c in chapters.values()), chapters
    # the executed notebook names the output folder, not the staging folder it ran in
    assert STAGING_PREFIX not in (dasked / "notebooks" / f"{CHAPTERS[1]}.ipynb").read_text()
    assert not list(dasked.glob(f"{STAGING_PREFIX}*"))


def test_an_unreachable_scheduler_is_one_line_and_exit_2_before_any_work(tmp_path):
    out = tmp_path / "r"
    t0 = time.time()
    proc = build("--only", "00", "--out", str(out), "--scheduler", f"tcp://127.0.0.1:{_free_port()}", timeout=60)
    assert time.time() - t0 < 30
    assert proc.returncode == 2, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: cannot reach the Dask scheduler"), proc.stderr
    assert not out.exists()


@pytest.fixture
def dask_cluster(tmp_path):
    """A real `dask scheduler` and two single-threaded `dask worker` processes (no nanny, so a
    killed worker stays dead); ``start_worker()`` adds one. Everything is stopped at the end."""
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    procs: list[subprocess.Popen] = []
    log = open(tmp_path / "dask.log", "w")

    def spawn(*args: str) -> subprocess.Popen:
        p = subprocess.Popen(
            [sys.executable, "-m", "dask", *args],
            cwd=ROOT,
            env=_env(),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        procs.append(p)
        return p

    def start_worker() -> subprocess.Popen:
        return spawn("worker", address, "--nthreads", "1", "--no-nanny", "--no-dashboard")

    spawn("scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard")
    workers = [start_worker(), start_worker()]
    try:
        yield address, workers, start_worker
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
        log.close()


@pytest.mark.full  # make test-full: a LocalCluster whose workers are killed
def test_a_chapter_whose_workers_die_runs_once_more_then_fails_while_the_others_complete(tmp_path, dask_cluster):
    address, _, start_worker = dask_cluster
    out = tmp_path / "r"
    # chapter 00 waits 90 s in its task before papermill: its worker is killed meanwhile, twice
    proc = start_build(
        "--only", *CHAPTERS, "--out", str(out), "--scheduler", address, env=_env(**{HOLD_ENV: f"{CHAPTERS[0]}=90"})
    )
    try:
        first = _wait_for("chapter 00's first attempt", lambda: _attempts(out, CHAPTERS[0]))
        os.kill(int(first[0].split()[0]), signal.SIGKILL)
        start_worker()  # so that a worker is left for the other chapter after the second kill
        second = _wait_for("chapter 00's second attempt", lambda: _attempts(out, CHAPTERS[0])[1:])
        assert second[0].split()[1] != first[0].split()[1], "the retry ran on another worker"
        os.kill(int(second[0].split()[0]), signal.SIGKILL)
        stdout, stderr = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1, stderr[-3000:]
    chapters = json.loads((out / "build.json").read_text())["chapters"]
    assert not chapters[CHAPTERS[0]]["ok"]
    assert "died 2 times" in chapters[CHAPTERS[0]]["error"], chapters[CHAPTERS[0]]
    assert chapters[CHAPTERS[1]]["ok"], chapters[CHAPTERS[1]]
    assert (out / "data" / CHAPTERS[1] / "summary.json").is_file()
    assert not (out / "data" / CHAPTERS[0]).exists(), "no partial chapter"
    assert "This chapter failed" in (out / "report.html").read_text()
    assert f"FAILED chapters: {CHAPTERS[0]}" in stderr
    assert not list(out.glob(f"{STAGING_PREFIX}*"))


@pytest.mark.full  # make test-full: a LocalCluster, interrupted
def test_ctrl_c_leaves_no_partial_chapter_and_the_next_build_resumes(tmp_path):
    out = tmp_path / "r"
    proc = start_build(
        "--only", *CHAPTERS, "--out", str(out), "--workers", "2", env=_env(**{HOLD_ENV: f"{CHAPTERS[1]}=120"})
    )

    def chapter_01_started() -> None:
        _wait_for("chapter 00 done", lambda: (out / "data" / CHAPTERS[0] / "summary.json").is_file(), timeout=180)
        _wait_for("chapter 01 started", lambda: _attempts(out, CHAPTERS[1]))

    rc, stderr = ctrl_c(proc, chapter_01_started)
    assert rc == 130, stderr[-3000:]
    assert not (out / "data" / CHAPTERS[1]).exists() and not (out / "notebooks" / f"{CHAPTERS[1]}.ipynb").exists()
    assert not list(out.glob(f"{STAGING_PREFIX}*"))
    again = build("--only", *CHAPTERS, "--out", str(out), "--workers", "2")
    assert again.returncode == 0, again.stderr[-3000:]
    assert f"{CHAPTERS[0]}: unchanged since the last build here, kept" in again.stderr
    assert (out / "data" / CHAPTERS[1] / "summary.json").is_file()


COMPARED = ("nvidia-h100-80gb-hbm3/h100", "nvidia-h100-80gb-hbm3/gtx680")


@pytest.mark.full  # make test-full: a LocalCluster of two process workers
def test_the_comparison_on_two_workers_joins_every_chapter_as_the_serial_one_does(tmp_path):
    """--compare with --workers 2: one task per chapter; the same joined tables as without Dask."""
    serial, dask = tmp_path / "serial", tmp_path / "dask"
    a = build("--compare", *COMPARED, "--out", str(serial))
    b = build("--compare", *COMPARED, "--workers", "2", "--out", str(dask))
    assert a.returncode == 0 and b.returncode == 0, b.stderr[-2000:]
    assert "one task per chapter" in b.stderr and "one task per chapter" not in a.stderr
    csvs = sorted(p.relative_to(serial) for p in serial.rglob("*.csv"))
    assert csvs and csvs == sorted(p.relative_to(dask) for p in dask.rglob("*.csv"))
    for rel in csvs:
        assert (serial / rel).read_bytes() == (dask / rel).read_bytes(), rel
    chapters = json.loads((dask / "build.json").read_text())["chapters"]
    assert chapters == json.loads((serial / "build.json").read_text())["chapters"]


def test_a_comparison_with_an_unreachable_scheduler_writes_nothing(tmp_path):
    out = tmp_path / "c"
    proc = build(
        "--compare", *COMPARED, "--out", str(out), "--scheduler", f"tcp://127.0.0.1:{_free_port()}", timeout=60
    )
    assert proc.returncode == 2 and proc.stderr.strip().splitlines()[-1].startswith("error: cannot reach"), proc.stderr
    assert not out.exists()


@pytest.mark.full  # make test-full: a LocalCluster of two process workers
def test_a_chapter_whose_comparison_fails_on_dask_shows_its_reason_and_exits_1(tmp_path):
    """A table that cannot be read fails its chapter's task (twice: retried once); the other
    chapters are compared, the failed one shows its reason in its place, and the exit status is 1."""
    import shutil

    from cudalab.core.paths import RESULTS_DIR

    results = tmp_path / "results"
    for rel in COMPARED:
        shutil.copytree(RESULTS_DIR / rel, results / rel)
    (results / COMPARED[0] / "01_block_size" / "block_sweep.csv").write_bytes(b"n,variant\n\xff\xfe,\x81\n")
    out = tmp_path / "c"
    proc = build("--compare", *COMPARED, "--results", str(results), "--workers", "2", "--out", str(out))
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "01_block_size: FAILED on Dask" in proc.stderr and "FAILED chapters: 01_block_size" in proc.stderr
    summary = json.loads((out / "build.json").read_text())
    assert summary["failed"] == ["01_block_size"] and "04_blocking_factor" in summary["chapters"]
    html = (out / "report.html").read_text()
    assert "comparison failed:</b> UnicodeDecodeError" in html and (out / "data" / "04_blocking_factor").is_dir()


def test_a_retried_chapter_names_the_worker_that_died_running_it():
    from cudalab.report.cluster import _retried

    assert _retried(1, []) == ""
    earlier = ["1033 tcp://127.0.0.1:40161"]
    assert _retried(2, earlier) == " (attempt 2, after tcp://127.0.0.1:40161 died running it)"
