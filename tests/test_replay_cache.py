"""The replay cache (``cudalab.report.replay_cache``): a replayed chapter is kept by the digest of
what it reads, and given back only for the same inputs; a measurement, a failure, or data that
names its folder are never kept."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cudalab.chapter import catalog
from cudalab.report import replay_cache


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv(replay_cache.ENV, str(folder))
    return folder


class FakeChapter:
    """A stand-in for papermill: writes a table and a notebook naming its build's folder, and counts."""

    def __init__(self, ok: bool = True, table: str = "n,time_ms\n1,2.5\n"):
        self.calls = 0
        self.ok, self.table = ok, table

    def __call__(self, chapter, out_nb, params, cell_timeout, progress_bar):
        self.calls += 1
        data = Path(params["data_dir"]) / chapter.id
        data.mkdir(parents=True, exist_ok=True)
        (data / "sweep.csv").write_text(self.table.replace("{out}", str(Path(params["data_dir"]).parent)))
        out_nb.parent.mkdir(parents=True, exist_ok=True)
        out_nb.write_text(json.dumps({"cells": [{"source": f"data_dir = {params['data_dir']!r}"}]}))
        return self.ok, "" if self.ok else "ValueError: no"


def _build(tmp_path: Path, name: str, recording: Path, mode: str = "replay") -> tuple[Path, Path, dict]:
    out = tmp_path / name
    (out / "notebooks").mkdir(parents=True)
    profile = out / "profile.yaml"
    profile.write_text("name: gtx680\n")
    params = {"profile": str(profile), "mode": mode, "data_dir": str(out / "data"), "recorded_dir": str(recording)}
    return out, out / "notebooks" / "01_block_size.ipynb", params


@pytest.fixture
def recording(tmp_path):
    folder = tmp_path / "recording" / "01_block_size"
    folder.mkdir(parents=True)
    (folder / "sweep.csv").write_text("n,time_ms\n1,2.5\n")
    return folder.parent


def test_the_same_inputs_in_another_folder_are_copied_not_run(cache, tmp_path, recording):
    chapter, fake = catalog.chapter("01_block_size"), FakeChapter()
    run = replay_cache.cached(fake)
    first_out, first_nb, first = _build(tmp_path, "first", recording)
    assert run(chapter, first_nb, first, 0, False) == (True, "")
    second_out, second_nb, second = _build(tmp_path, "second", recording)
    assert run(chapter, second_nb, second, 0, False) == (True, "")
    assert fake.calls == 1
    assert (second_out / "data/01_block_size/sweep.csv").read_text() == "n,time_ms\n1,2.5\n"
    assert str(second_out / "data") in second_nb.read_text()  # the notebook names its own folder
    assert str(first_out) not in second_nb.read_text()


def test_other_inputs_run_again(cache, tmp_path, recording):
    chapter, fake = catalog.chapter("01_block_size"), FakeChapter()
    run = replay_cache.cached(fake)
    run(chapter, *_build(tmp_path, "a", recording)[1:], 0, False)
    (recording / "01_block_size" / "sweep.csv").write_text("n,time_ms\n1,2.6\n")  # the recording changed
    run(chapter, *_build(tmp_path, "b", recording)[1:], 0, False)
    out, nb, params = _build(tmp_path, "c", recording)
    params["point_time_limit_s"] = 5.0  # a parameter changed
    run(chapter, nb, params, 0, False)
    run(chapter, *_build(tmp_path, "d", recording)[1:], 0, False)  # the same as b: kept
    out, nb, params = _build(tmp_path, "e", recording)
    (out / "submission").mkdir()
    (out / "submission" / "fw.cu").write_text("// a student's file")  # a student's files staged
    run(chapter, nb, params, 0, False)
    assert fake.calls == 4


@pytest.mark.parametrize(
    "why, fake, mode",
    [
        ("a measurement", FakeChapter(), "measure"),
        ("a failed chapter", FakeChapter(ok=False), "replay"),
        ("data that names its folder", FakeChapter(table="path\n{out}/x\n"), "replay"),
    ],
)
def test_never_kept(cache, tmp_path, recording, why, fake, mode):
    chapter = catalog.chapter("01_block_size")
    run = replay_cache.cached(fake)
    for name in ("a", "b"):
        run(chapter, *_build(tmp_path, name, recording, mode)[1:], 0, False)
    assert fake.calls == 2, why


def test_without_the_variable_every_replay_runs(tmp_path, recording, monkeypatch):
    monkeypatch.delenv(replay_cache.ENV, raising=False)
    chapter, fake = catalog.chapter("01_block_size"), FakeChapter()
    run = replay_cache.cached(fake)
    for name in ("a", "b"):
        run(chapter, *_build(tmp_path, name, recording)[1:], 0, False)
    assert fake.calls == 2


def test_builds_side_by_side_replaying_the_same_inputs_run_the_chapter_once(cache, tmp_path, recording):
    """The suite's two workers often replay the same chapter at the same moment: the second waits
    for the first and copies what it kept (without the lock, both run it: ``calls == 2``)."""
    import threading
    import time

    chapter = catalog.chapter("01_block_size")

    class Slow(FakeChapter):
        def __call__(self, *args):
            time.sleep(0.5)  # long enough that the other build starts while this one runs
            return super().__call__(*args)

    fake = Slow()
    run = replay_cache.cached(fake)
    builds = [_build(tmp_path, name, recording) for name in ("left", "right")]
    results: list = []
    threads = [threading.Thread(target=lambda b=b: results.append(run(chapter, b[1], b[2], 0, False))) for b in builds]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert results == [(True, "")] * 2 and fake.calls == 1
    for out, notebook, _ in builds:
        assert (out / "data" / "01_block_size" / "sweep.csv").is_file() and str(out) in notebook.read_text()
