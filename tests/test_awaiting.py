"""Chapter 00 beside the others on Dask (issue 45, item 3): every chapter is submitted at once,
chapter 00 first; a chapter reading chapter 00's ceilings waits for them only there, until the
build says chapter 00 has ended (``chapter.awaiting``); a chapter's seconds are its run, not its
time in the queue. Without a GPU: the waiting itself, and the build's side on an in-process Dask
cluster whose chapter task is a stand-in that records when it ran."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from cudalab.chapter import awaiting


def test_a_serial_build_never_waits(monkeypatch):
    monkeypatch.delenv(awaiting.AWAITING_ENV, raising=False)
    assert awaiting.wait_for("00_gpu_capabilities", timeout=5) == 0.0


def test_a_chapter_waits_while_the_build_marks_chapter_00_measuring_and_no_longer(tmp_path, monkeypatch):
    folder = tmp_path / "awaiting"
    folder.mkdir()
    marker = folder / "00_gpu_capabilities"
    marker.touch()
    monkeypatch.setenv(awaiting.AWAITING_ENV, str(folder))
    threading.Timer(0.6, marker.unlink).start()
    waited = awaiting.wait_for("00_gpu_capabilities", poll=0.05)
    assert 0.5 < waited < 3
    assert awaiting.wait_for("00_gpu_capabilities", poll=0.05) < 0.05, "ended: no wait"
    marker.touch()
    assert 0.2 <= awaiting.wait_for("00_gpu_capabilities", timeout=0.2, poll=0.05) < 1, "at most the timeout"
    marker.unlink()
    folder.rmdir()  # the build stopped: its staging folder is gone, nothing to wait for
    assert awaiting.wait_for("00_gpu_capabilities", poll=0.05) < 0.05


def _stand_in(record: Path):
    """A chapter task that records (in ``record``: the task is serialized, so a file, not a dict)
    when it started, whether chapter 00 was marked measuring then, and when it ended; chapter 00
    takes a second before it moves its data in."""

    def task(chapter, out, staging, params, cell_timeout, kernel_threads, hold=None, kernel_cpus=None):
        import json as _json

        from cudalab.report.cluster import AWAITING

        began = time.monotonic()
        measuring = (Path(staging) / AWAITING / "00_gpu_capabilities").exists()
        time.sleep(1.0 if chapter.id.startswith("00") else 0.3)
        (Path(out) / "data" / chapter.id).mkdir(parents=True)
        with open(record, "a") as f:
            entry = {"id": chapter.id, "start": began, "end": time.monotonic(), "00_measuring": measuring}
            f.write(_json.dumps(entry) + "\n")
        return {"ok": True, "error": "", "worker": "w", "seconds": time.monotonic() - began}

    return task


def test_on_dask_the_others_start_beside_chapter_00_and_its_marker_goes_when_it_ends(tmp_path, monkeypatch):
    pytest.importorskip("distributed")
    import distributed

    from cudalab.chapter import catalog
    from cudalab.report import cluster
    from cudalab.report.build import ChapterJob

    record = tmp_path / "tasks.jsonl"
    monkeypatch.setattr(cluster, "run_chapter_task", _stand_in(record))
    chapters = [c for c in catalog.discover() if c.id[:2] in ("00", "01", "04")]
    jobs = [ChapterJob(i, 3, c, tmp_path / c.path.name, {"mode": "measure"}) for i, c in enumerate(chapters, 1)]
    out = tmp_path / "out"
    (out / "data").mkdir(parents=True)
    ran = SimpleNamespace(outcomes=[], stopped=False)
    lines: list[str] = []
    with distributed.LocalCluster(n_workers=3, threads_per_worker=1, processes=False, dashboard_address=None) as lc:
        with distributed.Client(lc) as client:
            pool = cluster.Pool(client, "test", kernel_threads=1)
            cluster._run_on(pool, jobs, out, ran, cell_timeout=60, fail_fast=False, log=lines.append)
    log = {e["id"]: e for e in map(json.loads, record.read_text().splitlines())}
    first = log["00_gpu_capabilities"]
    for other in ("01_block_size", "04_blocking_factor"):
        assert log[other]["start"] < first["end"], f"{other} started beside chapter 00, not after it"
        assert log[other]["00_measuring"], "and found it marked as measuring"
    assert {o.id for o in ran.outcomes} == {c.id for c in chapters} and all(o.ok for o in ran.outcomes)
    seconds = {o.id: o.seconds for o in ran.outcomes}
    assert 0.9 < seconds["00_gpu_capabilities"] < 3 and seconds["01_block_size"] < 1.5, "the run, not the queue"
    assert not list(out.glob(f"{cluster.STAGING_PREFIX}*")), "the staging folder (and its marks) removed"


def test_ctrl_c_while_a_finished_chapters_result_is_read_keeps_that_chapter(tmp_path, monkeypatch):
    """Ctrl-C can come right as a chapter moves in, while the build reads its result (a full
    ``make test`` interrupted there once): the chapter is still kept, once, not dropped from the
    build's record because it had already left the tasks waited on."""
    pytest.importorskip("distributed")
    import distributed

    from cudalab.chapter import catalog
    from cudalab.report import cluster
    from cudalab.report.build import ChapterJob

    monkeypatch.setattr(cluster, "run_chapter_task", _stand_in(tmp_path / "tasks.jsonl"))
    read = cluster._result_of
    interrupted = []

    def ctrl_c_while_reading(future, chapter_id, staging):
        if chapter_id.startswith("00") and not interrupted:
            interrupted.append(chapter_id)
            raise KeyboardInterrupt
        return read(future, chapter_id, staging)

    monkeypatch.setattr(cluster, "_result_of", ctrl_c_while_reading)
    chapters = [c for c in catalog.discover() if c.id[:2] in ("00", "01")]
    jobs = [ChapterJob(i, 2, c, tmp_path / c.path.name, {"mode": "replay"}) for i, c in enumerate(chapters, 1)]
    out = tmp_path / "out"
    (out / "data").mkdir(parents=True)
    ran = SimpleNamespace(outcomes=[], stopped=False)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as lc:
        with distributed.Client(lc) as client:
            pool = cluster.Pool(client, "test", kernel_threads=1)
            with pytest.raises(KeyboardInterrupt):
                cluster._run_on(pool, jobs, out, ran, cell_timeout=60, fail_fast=False, log=lambda line: None)
    assert interrupted == ["00_gpu_capabilities"]
    kept = [o.id for o in ran.outcomes if o.id.startswith("00")]
    assert kept == ["00_gpu_capabilities"] and all(o.ok for o in ran.outcomes)
