"""Several profiles in one build (``--gpu gtx680,h100``), replayed from the committed recordings:
one normal build folder per profile with the same summaries a single-profile build writes, and an
index linking them; the same on a local Dask cluster; a bad name in the list writes nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import FAULT_STACKS, at_a_terminal, ctrl_c

from cudalab.core.paths import ROOT
from cudalab.report.cluster import HOLD_ENV, STAGING_PREFIX
from cudalab.report.outdir import LOCK

PROFILES = ("gtx680", "h100")
CHAPTERS = ("00_gpu_capabilities", "01_block_size")


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), **FAULT_STACKS, **extra}


def build(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "build_report.py"), "--format", "html", "--only", *CHAPTERS, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        env=_env(),
    )


@pytest.fixture(scope="module")
def single(tmp_path_factory) -> Path:
    """Each profile built alone, as today: the reference for the several-profile builds."""
    from tests.shared_builds import built_once

    def make(root: Path) -> dict:
        for profile in PROFILES:
            proc = build("--gpu", profile, "--out", str(root / profile))
            assert proc.returncode == 0, proc.stderr[-3000:]
            assert not (root / profile / profile).exists() and (root / profile / "report.html").is_file()
        return {}

    return built_once(tmp_path_factory, "single-profiles", make)[0]


def _check_several(out: Path, single: Path) -> list[dict]:
    index = (out / "index.html").read_text()
    for profile in PROFILES:
        assert f'href="{profile}/report.html"' in index
        one = json.loads((out / profile / "build.json").read_text())
        assert one["profile"] == profile and one["ok"] and one["made_by"] == "cudalab build"
        assert (out / profile / "report.html").is_file()
        for chapter in CHAPTERS:
            a = json.loads((single / profile / "data" / chapter / "summary.json").read_text())
            b = json.loads((out / profile / "data" / chapter / "summary.json").read_text())
            assert a == b, (profile, chapter)
    parent = json.loads((out / "build.json").read_text())
    assert parent["made_by"] == "cudalab build" and parent["files"] == ["index.html"]
    assert [p["profile"] for p in parent["profiles"]] == list(PROFILES)
    assert sorted(p.name for p in out.iterdir()) == sorted(["build.json", "index.html", *PROFILES])
    return [json.loads((out / p / "build.json").read_text()) for p in PROFILES]


@pytest.mark.slow
@pytest.mark.full  # make test-full: two profiles' replays and the single builds beside them
def test_two_profiles_serially_give_the_single_builds_and_an_index(tmp_path, single):
    out = tmp_path / "r"
    proc = build("--gpu", ",".join(PROFILES), "--out", str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    _check_several(out, single)
    # the same command again keeps every chapter; a profile whose build cannot run (another build
    # holds its folder) is shown in the index and costs the other nothing
    (out / PROFILES[1] / LOCK).write_text(str(os.getpid()))
    again = build("--gpu", ",".join(PROFILES), "--out", str(out))
    assert again.returncode == 1, again.stderr[-3000:]
    assert again.stderr.count("unchanged since the last build here, kept") == len(CHAPTERS)
    assert f"FAILED profiles: {PROFILES[1]}" in again.stderr
    assert "build failed: another build" in (out / "index.html").read_text()
    assert json.loads((out / PROFILES[0] / "build.json").read_text())["ok"]
    (out / PROFILES[1] / LOCK).unlink()
    third = build("--gpu", ",".join(PROFILES), "--out", str(out))
    assert third.returncode == 0, third.stderr[-3000:]
    _check_several(out, single)


def test_a_serial_build_of_several_profiles_never_imports_dask(tmp_path):
    code = (
        "import sys, build_report; rc = build_report.main(sys.argv[1:]);"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed', 'dask_cuda'))); sys.exit(rc)"
    )
    args = ["--gpu", ",".join(PROFILES), "--only", "01", "--format", "html", "--out", str(tmp_path / "r")]
    proc = subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, capture_output=True, text=True, env=_env())
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().splitlines()[-1] == "[]", f"a plain build imported {proc.stdout}"


@pytest.mark.slow
@pytest.mark.full  # make test-full: a LocalCluster per profile
def test_two_profiles_on_two_local_workers_give_the_single_builds(tmp_path, single):
    pytest.importorskip("distributed")
    out = tmp_path / "r"
    proc = build("--gpu", ",".join(PROFILES), "--out", str(out), "--workers", "2")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stderr.count("LocalCluster, 2 process worker(s)") == len(PROFILES)
    for summary in _check_several(out, single):
        assert all(c["worker"].startswith("tcp://") for c in summary["chapters"].values()), summary["chapters"]


@pytest.mark.slow
@pytest.mark.full  # make test-full: a LocalCluster per profile, interrupted
def test_ctrl_c_stops_every_profile_on_dask_and_leaves_no_partial_chapter(tmp_path):
    pytest.importorskip("distributed")
    out = tmp_path / "r"
    cmd = [sys.executable, str(ROOT / "build_report.py"), "--format", "html", "--only", *CHAPTERS]
    # a worker per task: every chapter 00 ends while every chapter 01 is held, whichever order the
    # build submits them in (the recorded build times decide it, and can put 01 first)
    workers = str(len(PROFILES) * len(CHAPTERS))
    proc = subprocess.Popen(
        [*cmd, "--gpu", ",".join(PROFILES), "--out", str(out), "--workers", workers],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(**{HOLD_ENV: f"{CHAPTERS[1]}=120"}),
        preexec_fn=at_a_terminal,
    )

    def first_chapters_done() -> None:
        end = time.time() + 180
        firsts = [out / p / "data" / CHAPTERS[0] / "summary.json" for p in PROFILES]
        while not all(f.is_file() for f in firsts) and time.time() < end:
            time.sleep(0.2)
        time.sleep(1)

    rc, stderr = ctrl_c(proc, first_chapters_done)
    assert rc == 130, stderr[-3000:]
    for profile in PROFILES:
        assert not (out / profile / "data" / CHAPTERS[1]).exists(), profile
        assert json.loads((out / profile / "build.json").read_text())["interrupted"], profile
        assert not list((out / profile).glob(f"{STAGING_PREFIX}*")), profile


def test_an_unknown_profile_in_the_list_is_one_line_and_exit_2_with_nothing_written(tmp_path):
    out = tmp_path / "r"
    proc = build("--gpu", "gtx680,gtx9999", "--out", str(out))
    assert proc.returncode == 2, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "unknown profile 'gtx9999'" in lines[0], proc.stderr
    assert not out.exists()


def test_a_folder_cudalab_did_not_make_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    proc = build("--gpu", ",".join(PROFILES), "--out", str(tmp_path))
    assert proc.returncode == 2 and "not made by a cudalab build" in proc.stderr, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]
