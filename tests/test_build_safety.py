"""A build never destroys what it did not make, one build per folder, and an interrupt keeps what finished."""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import at_a_terminal

from cudalab.core.errors import UnsafeOutput
from cudalab.core.paths import ROOT
from cudalab.report import outdir

pytestmark = pytest.mark.slow


def build(*args, **kw):
    return subprocess.run(
        [sys.executable, str(ROOT / "build_report.py"), "--replay", "--no-pdf", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        **kw,
    )


@pytest.mark.parametrize("where", [".", "notebooks", "cudalab/core", "results", ".."])
def test_the_checkout_is_never_an_output_folder(where):
    before = sorted(p.name for p in (ROOT / "notebooks").iterdir())
    proc = build("--only", "00", "--out", str(ROOT / where))
    assert proc.returncode == 2 and "choose a folder of its own" in proc.stderr, proc.stderr[-500:]
    assert "Traceback" not in proc.stderr
    assert sorted(p.name for p in (ROOT / "notebooks").iterdir()) == before


def test_a_strangers_folder_and_a_file_are_refused_untouched(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "thesis.csv").write_text("precious")
    proc = build("--only", "00", "--out", str(tmp_path))
    assert proc.returncode == 2 and "was not made by a cudalab build" in proc.stderr
    assert (tmp_path / "data" / "thesis.csv").read_text() == "precious"
    (tmp_path / "file").write_text("x")
    proc = build("--only", "00", "--out", str(tmp_path / "file"))
    assert proc.returncode == 2 and "is a file" in proc.stderr and "Traceback" not in proc.stderr


def test_a_rebuild_removes_only_what_the_last_build_wrote(tmp_path):
    out = tmp_path / "r"
    assert build("--only", "00", "01", "--out", str(out)).returncode == 0
    manifest = json.loads((out / "build.json").read_text())
    assert manifest["made_by"] == outdir.MARKER and "notebooks/01_block_size.ipynb" in manifest["files"]
    (out / "notes.txt").write_text("mine")
    (out / "data" / "00_gpu_capabilities" / "my_extra.csv").write_text("mine too")
    # another profile's build replaces this one's book (an --only build of the same one keeps it:
    # test_only_into_an_earlier_build_keeps_its_other_chapters_and_an_html_build_keeps_its_pdf)
    assert build("--gpu", "h100", "--only", "01", "--out", str(out)).returncode == 0
    assert (out / "notes.txt").read_text() == "mine"
    assert (out / "data" / "00_gpu_capabilities" / "my_extra.csv").read_text() == "mine too"
    assert not (out / "notebooks" / "00_gpu_capabilities.ipynb").exists(), "the old chapter 00 is gone with its build"
    assert not (out / "data" / "00_gpu_capabilities" / "copy_bandwidth.csv").exists()
    assert set(json.loads((out / "build.json").read_text())["chapters"]) == {"01_block_size"}


def test_one_build_at_a_time(tmp_path):
    (tmp_path / outdir.LOCK).write_text(str(os.getpid()))  # a live process holds it
    with pytest.raises(UnsafeOutput, match="another build"):
        with outdir.Lock(tmp_path):
            pass
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (tmp_path / outdir.LOCK).write_text(dead.stdout.strip())  # its holder is gone: taken over
    with outdir.Lock(tmp_path):
        assert (tmp_path / outdir.LOCK).read_text() == str(os.getpid())
    assert not (tmp_path / outdir.LOCK).exists()


@pytest.mark.parametrize(
    "after,finished", [("cudalab: profile", 0), ("] 01_block_size ...", 1), ("01_block_size: ok", 2)]
)
def test_sigterm_keeps_the_finished_chapters_and_marks_the_report_incomplete(tmp_path, after, finished):
    out = tmp_path / "r"
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "build_report.py"), "--replay", "--no-pdf", "--out", str(out)],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.time() + 300
    for line in proc.stderr:
        if after in line or time.time() > deadline:
            break
    proc.send_signal(signal.SIGTERM)
    rest = proc.stderr.read()
    assert proc.wait(timeout=120) == 130, rest[-2000:]
    assert "interrupted:" in rest and "Traceback" not in rest
    summary = json.loads((out / "build.json").read_text())
    assert summary["interrupted"] and not summary["ok"]
    assert len(summary["chapters"]) >= finished and all(c["ok"] for c in summary["chapters"].values())
    for chapter in summary["chapters"]:
        assert (out / "data" / chapter / "provenance.json").is_file()
    assert "Incomplete report." in (out / "report.html").read_text()
    assert not list(out.rglob("*.tmp")), "no half-written files"


@pytest.mark.parametrize("pause", [0.5, pytest.param(2.0, marks=pytest.mark.full)])  # 2.0: make test-full
def test_ctrl_c_from_a_terminal_is_quiet_leaves_no_partial_chapter_and_the_rerun_completes(
    tmp_path, pause, every_replay_runs
):
    """A terminal's Ctrl-C is SIGINT to the build's whole process group, in the middle of a chapter
    (0.5 s after chapter 01 starts: its kernel starting; 2 s: its cells running, or on a fast
    machine chapter 02's start). Required: the interrupt message alone (no kernel's ZMQ traceback,
    no DeadKernelError, no "Kernel died"), exit 130, no file of the interrupted chapter (the one
    that started and did not end) left, and the same command run again completes."""
    out = tmp_path / "r"
    command = [sys.executable, str(ROOT / "build_report.py"), "--replay", "--no-pdf", "--only", "00", "01", "02"]
    proc = subprocess.Popen(
        [*command, "--out", str(out)],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=at_a_terminal,
    )
    deadline, seen = time.time() + 300, []
    for line in proc.stderr:
        seen.append(line)
        if "] 01_block_size ..." in line or time.time() > deadline:
            break
    time.sleep(pause)
    os.killpg(proc.pid, signal.SIGINT)
    said = "".join(seen) + proc.stderr.read()
    assert proc.wait(timeout=120) == 130, said[-3000:]
    assert "interrupted:" in said
    for noise in ("Traceback", "ZMQError", "DeadKernelError", "Kernel died", "KeyboardInterrupt", "Task exception"):
        assert noise not in said, said[-3000:]
    done = set(json.loads((out / "build.json").read_text())["chapters"])
    started = re.findall(r"\] (\d\d_\w+) \.\.\.", said)
    ended = set(re.findall(r"\] (\d\d_\w+): ", said))
    cut = [c for c in started if c not in ended]
    assert cut, f"the Ctrl-C came between chapters, not in one: {said[-2000:]}"
    assert cut[-1] not in done and cut[-1] in ("01_block_size", "02_coalescing"), said[-2000:]
    assert {p.name for p in (out / "data").iterdir()} == done, "no partial chapter's tables"
    assert {p.stem for p in (out / "notebooks").glob("*.ipynb")} == done, "no partial chapter's notebook"
    again = subprocess.run(  # the rerun completing is what is checked: kept replays may serve it
        [*command, "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=600, env=every_replay_runs
    )
    assert again.returncode == 0, again.stderr[-3000:]
    assert set(json.loads((out / "build.json").read_text())["chapters"]) == {
        "00_gpu_capabilities",
        "01_block_size",
        "02_coalescing",
    }


def test_an_interrupted_rebuild_keeps_the_earlier_complete_chapter(tmp_path, every_replay_runs):
    """Issue 42: a chapter that a complete earlier build left in the folder is not lost when a
    rebuild of it is interrupted: its earlier notebook and tables stay, whole and marked kept."""
    out = tmp_path / "r"
    command = [sys.executable, str(ROOT / "build_report.py"), "--replay", "--no-pdf", "--only", "00", "01"]
    first = subprocess.run(  # the earlier complete build, only set up here: kept replays may serve it
        [*command, "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=600, env=every_replay_runs
    )
    assert first.returncode == 0, first.stderr[-2000:]
    before = {p.relative_to(out): p.read_bytes() for p in (out / "data" / "01_block_size").rglob("*") if p.is_file()}
    notebook = (out / "notebooks" / "01_block_size.ipynb").read_bytes()
    proc = subprocess.Popen(
        [*command, "--force", "--out", str(out)],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=at_a_terminal,
    )
    deadline, seen = time.time() + 300, []
    for line in proc.stderr:
        seen.append(line)
        if "] 01_block_size ..." in line or time.time() > deadline:
            break
    time.sleep(1.0)  # inside the chapter: a replayed chapter 01 takes about 3 s on 2 cores
    os.killpg(proc.pid, signal.SIGINT)
    said = "".join(seen) + proc.stderr.read()
    assert proc.wait(timeout=120) == 130, said[-3000:]
    assert "the earlier build's complete chapter is kept" in said, said[-2000:]
    after = {p.relative_to(out): p.read_bytes() for p in (out / "data" / "01_block_size").rglob("*") if p.is_file()}
    assert after == before and (out / "notebooks" / "01_block_size.ipynb").read_bytes() == notebook
    summary = json.loads((out / "build.json").read_text())
    assert summary["chapters"]["01_block_size"].get("kept") and summary["interrupted"]
    assert not (out / outdir.EARLIER).exists(), "nothing left set aside"
    assert "01_block_size" in (out / "report.html").read_text()


def test_a_replay_says_which_requested_parameters_it_cannot_show(tmp_path):
    prof = tmp_path / "small.yaml"
    prof.write_text("name: gtx680\nextends: gtx680\nchapters:\n  01_block_size:\n    params: {sizes: [64, 128]}\n")
    proc = build("--gpu", str(prof), "--only", "01", "--out", str(tmp_path / "r"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "note: 01_block_size: sizes = [64, 128] requested, recorded with" in proc.stderr
    html = (tmp_path / "r" / "report.html").read_text()
    assert "Not shown as requested:" in html and "sizes = [64, 128] requested" in html


def test_a_profile_without_published_numbers_runs_and_says_so(tmp_path):
    prof = tmp_path / "nopub.yaml"
    prof.write_text("name: gtx680\nextends: gtx680\nchapters:\n  01_block_size:\n    published: null\n")
    proc = build("--gpu", str(prof), "--only", "01", "--out", str(tmp_path / "r"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "no published numbers" in (tmp_path / "r" / "report.html").read_text()


def test_a_rerun_keeps_unchanged_chapters_and_force_runs_them(tmp_path):
    out = tmp_path / "r"
    assert build("--only", "00", "--out", str(out)).returncode == 0
    first = json.loads((out / "build.json").read_text())["chapters"]["00_gpu_capabilities"]
    again = build("--only", "00", "--out", str(out))
    assert again.returncode == 0 and "unchanged since the last build here, kept" in again.stderr
    kept = json.loads((out / "build.json").read_text())["chapters"]["00_gpu_capabilities"]
    assert kept["reused"] and kept["inputs"] == first["inputs"]
    assert (out / "data" / "00_gpu_capabilities" / "copy_bandwidth.csv").is_file()
    forced = build("--only", "00", "--force", "--out", str(out))
    assert forced.returncode == 0 and "kept" not in forced.stderr
    assert not json.loads((out / "build.json").read_text())["chapters"]["00_gpu_capabilities"]["reused"]


def test_fail_fast_stops_at_the_first_failed_chapter(tmp_path):
    import shutil

    from cudalab.chapter import recorded

    results = tmp_path / "results"
    shutil.copytree(recorded.find("gtx680")[0].path, results / "some-gpu" / "gtx680")
    (results / "some-gpu" / "gtx680" / "01_block_size" / "block_sweep.csv").unlink()
    proc = build("--gpu", "gtx680", "--results", str(results), "--fail-fast", "--out", str(tmp_path / "r"))
    assert proc.returncode == 1 and "02_coalescing ..." not in proc.stderr
    html = (tmp_path / "r" / "report.html").read_text()
    assert "stopped at the first failure" in html and "not run: 02_coalescing, 03_shared_memory" in html


def test_profile_text_cannot_inject_markup_into_the_report(tmp_path):
    prof = tmp_path / "evil.yaml"
    prof.write_text(
        "name: gtx680\nextends: gtx680\ndevice: {name: '<script>alert(1)</script>', source: '<b>s</b>'}\n"
        "chapters:\n  01_block_size:\n    published:\n      source: '<img src=x onerror=alert(2)>'\n"
        "      gpu: '<i>lab GPU</i> & co'\n      lab: '000'\n      where: w\n      coordinates: [n, block_edge]\n"
        "      rows:\n        - {n: 5000, block_edge: 16, speedup_vs_cpu: 21.1, cite: q}\n"
    )
    proc = build("--gpu", str(prof), "--only", "00", "01", "--out", str(tmp_path / "r"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    html = (tmp_path / "r" / "report.html").read_text()
    assert "<script" not in html and "<img src=x" not in html and "<i>lab GPU</i>" not in html
    assert "&lt;i&gt;lab GPU&lt;/i&gt; &amp; co" in html


def test_a_replay_shows_the_chapters_its_recording_holds_and_says_which_it_leaves_out(tmp_path):
    import shutil

    src = ROOT / "results" / "nvidia-h100-80gb-hbm3" / "gtx680"
    rec = tmp_path / "results" / "nvidia-h100-80gb-hbm3" / "gtx680"
    rec.mkdir(parents=True)
    shutil.copy(src / "recordings.json", rec)
    shutil.copytree(src / "00_gpu_capabilities", rec / "00_gpu_capabilities")
    proc = build("--results", str(tmp_path / "results"), "--out", str(tmp_path / "r"))
    assert proc.returncode == 0, proc.stderr[-800:]
    assert "holds 1 of" in proc.stderr and "left out: 01_block_size" in proc.stderr
    assert sorted(p.name for p in (tmp_path / "r" / "notebooks").iterdir()) == ["00_gpu_capabilities.ipynb"]
    assert "left out: 01_block_size" in (tmp_path / "r" / "report.html").read_text()  # on the first page too
    named = build("--results", str(tmp_path / "results"), "--out", str(tmp_path / "r2"), "--only", "01")
    assert (
        named.returncode == 1
        and "no recorded results for chapter 01_block_size"
        in named.stderr + (tmp_path / "r2" / "report.html").read_text()
    )


def test_a_reader_that_stops_reading_does_not_cost_the_report(tmp_path):
    out = tmp_path / "r"
    cmd = f"{sys.executable} {ROOT / 'build_report.py'} --replay --no-pdf --only 00 01 --out {out} 2>&1 | head -1"
    proc = subprocess.run(cmd, shell=True, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.stdout.startswith("cudalab: profile")
    assert (out / "report.html").is_file() and "01 Block size" in (out / "report.html").read_text()


@pytest.mark.parametrize("only,want", [(["02", "04"], ["00", "02", "04"]), (["00", "05"], ["00", "05"])])
def test_a_recording_always_measures_chapter_00_beside_the_chapters_it_judges(monkeypatch, only, want):
    """Chapters 02-05 judge their kernels by the ceilings chapter 00 measures in the same run: a
    partial --record measures 00 too, and says so, rather than keep fractions of no ceiling."""
    from cudalab.core import gpu
    from cudalab.report import build as report_build

    monkeypatch.setattr(gpu, "gpu_available", lambda: True)
    monkeypatch.setattr(gpu, "attributes", lambda: {"MaxThreadsPerBlock": 1024})
    from cudalab.report.options import BuildOptions

    request = report_build._resolve_request("h100", BuildOptions(only=only, record=True), None)
    assert [c.number for c in request.chapters] == want
    assert any("00_gpu_capabilities" in note for note in request.notes) == (want != only)
    plain = report_build._resolve_request("h100", BuildOptions(only=only), None)
    assert [c.number for c in plain.chapters] == sorted(only), "only a recording adds chapter 00"


def test_only_into_an_earlier_build_keeps_its_other_chapters_and_an_html_build_keeps_its_pdf(tmp_path):
    """``--only`` rebuilds what it names and leaves the rest of an earlier build of the same kind
    in the folder: the report stitches all of them, the kept ones marked; a build without a PDF
    leaves the earlier PDF. A build removes only what it replaces."""
    out = tmp_path / "r"
    first = subprocess.run(
        [sys.executable, str(ROOT / "build_report.py"), "--replay", "--only", "00", "01", "02", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert first.returncode == 0, first.stderr[-2000:]
    had_pdf = (out / "report.pdf").is_file()
    before = {p.relative_to(out): p.read_bytes() for p in (out / "data").rglob("*") if p.is_file()}
    again = build("--only", "01", "--force", "--out", str(out))
    assert again.returncode == 0, again.stderr[-2000:]
    assert "kept from the earlier build" in again.stderr and "00_gpu_capabilities, 02_coalescing" in again.stderr
    for rel, data in before.items():
        if rel.parts[1] != "01_block_size":
            assert (out / rel).read_bytes() == data, f"{rel} changed or went"
    summary = json.loads((out / "build.json").read_text())
    assert set(summary["chapters"]) == {"00_gpu_capabilities", "01_block_size", "02_coalescing"}
    assert [c for c, v in summary["chapters"].items() if v.get("kept")] == ["00_gpu_capabilities", "02_coalescing"]
    report = (out / "report.html").read_text()
    assert report.count("kept from the earlier build in this folder") == 2
    assert all(f"{c}.ipynb" in " ".join(summary["files"]) for c in summary["chapters"])
    if had_pdf:
        assert (out / "report.pdf").is_file() and "report.pdf" in summary["files"]
        assert "report.pdf is the earlier build's" in again.stderr
    # another profile is another book: nothing of the gtx680 build is stitched into it
    other = build("--gpu", "h100", "--only", "01", "--out", str(out))
    assert other.returncode == 0, other.stderr[-2000:]
    assert set(json.loads((out / "build.json").read_text())["chapters"]) == {"01_block_size"}


# ---- a student's build never mixes submissions (issue 65, item 9)


class _Killed(BaseException):
    """A build killed half-way (SIGKILL, a power cut): nothing of the build's own catches it."""


def _stand_in_chapters(monkeypatch, stop_at: str = "", stop: type[BaseException] = KeyboardInterrupt):
    """Chapters run by a stand-in for papermill that writes, in a second, what a chapter's section
    shows: the sha256 of the student's files it was measured with (the build's submission.json),
    or that there were none. ``stop_at``: the chapter whose run raises ``stop`` instead."""
    import nbformat

    from cudalab.core import gpu
    from cudalab.report import build as report_build

    monkeypatch.setattr(gpu, "gpu_available", lambda: False)

    def run_chapter(chapter, notebook, params, cell_timeout, progress_bar):
        data = Path(params["data_dir"])
        if chapter.id == stop_at:
            (data / chapter.id).mkdir(parents=True, exist_ok=True)
            (data / chapter.id / "yours.csv").write_text("half")
            raise stop
        record = data.parent / "submission.json"
        files = json.loads(record.read_text())["files"] if record.is_file() else {}
        shown = "measured with " + (" ".join(sorted(files.values())) or "no student's files")
        nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(shown)]), notebook)
        (data / chapter.id).mkdir(parents=True, exist_ok=True)
        (data / chapter.id / "provenance.json").write_text(json.dumps({"gpu_name": "NVIDIA H100 80GB HBM3"}))
        (data / chapter.id / "yours.csv").write_text(shown)
        return True, ""

    monkeypatch.setattr(report_build, "_run_chapter", run_chapter)


def _submission(folder, **files):
    folder.mkdir(parents=True)
    for name, text in files.items():
        (folder / name).write_text(text)
    from cudalab.grading.submission import check

    return folder, sorted(check(folder).sha256.values())


def _build(out, kernels=None, measuring=(), only=()):
    from cudalab.grading.submission import check
    from cudalab.report import build as report_build
    from cudalab.report.options import BuildOptions

    checked = check(kernels) if kernels is not None else None  # the grading room reads the folder, once
    options = BuildOptions(kernels=checked, measuring=measuring, only=only, pdf=False)
    return report_build.run("h100", options, out=out)


def _shown(out, chapter):
    return (out / "notebooks" / f"{chapter}.ipynb").read_text()


def test_a_students_build_keeps_no_chapter_measured_with_another_submissions_files(tmp_path, monkeypatch):
    """The bug: a chapter an earlier build into the same folder had finished was kept beside the
    next one if this build did not run it ("kept from the earlier build"), or reused "from cache"
    by a build without --kernels, though it showed another submission's files: student c's
    chapter 03 beside student a's chapter 04 and a's sha256 on page 1."""
    _stand_in_chapters(monkeypatch)
    c, c_sha = _submission(tmp_path / "c", **{"fw_blocked.cu": "// c\n", "fw_shared_tile.cu": "// c\n"})
    a, a_sha = _submission(tmp_path / "a", **{"fw_blocked.cu": "// a\n"})
    out = tmp_path / "out"
    assert _build(out, c, measuring=("03", "04")).ok
    assert c_sha[0] in _shown(out, "03_shared_memory") and c_sha[0] in _shown(out, "04_blocking_factor")
    summary = _build(out, a, measuring=("04",))
    assert set(summary.chapters) == {"04_blocking_factor"} and not summary.kept, summary.chapters
    assert a_sha[0] in _shown(out, "04_blocking_factor")
    report = (out / "report.html").read_text()
    assert a_sha[0] in report and not any(sha in report for sha in c_sha)
    assert not (out / "data" / "03_shared_memory").exists(), "c's chapter 03 went with c's build"
    # a build without a student's files reuses none of a student's chapters
    assert _build(out, a, measuring=("04",)).ok
    plain = _build(out, only=("04",))
    assert not plain.reused and "no student's files" in _shown(out, "04_blocking_factor")


def test_a_killed_students_build_leaves_no_chapter_under_the_earlier_builds_name(tmp_path, monkeypatch):
    """The bug: a build killed half-way (no Ctrl-C to catch) left the earlier build's build.json,
    which still listed a chapter whose files the killed build had rewritten with its own student's
    kernels; the next build of the earlier student kept it as that student's. A build claims in
    build.json, from its start, only the chapters it keeps as they are."""
    c, c_sha = _submission(tmp_path / "c", **{"fw_blocked.cu": "// c\n", "fw_shared_tile.cu": "// c\n"})
    a, a_sha = _submission(tmp_path / "a", **{"fw_blocked.cu": "// a\n", "fw_shared_tile.cu": "// a\n"})
    out = tmp_path / "out"
    _stand_in_chapters(monkeypatch)
    assert _build(out, c, measuring=("03", "04")).ok
    _stand_in_chapters(monkeypatch, stop_at="04_blocking_factor", stop=_Killed)
    with pytest.raises(_Killed):
        _build(out, a, measuring=("03", "04"))
    assert a_sha[0] in _shown(out, "03_shared_memory"), "the killed build had finished a's chapter 03"
    assert not json.loads((out / "build.json").read_text())["chapters"], "nothing of c's is claimed any more"
    _stand_in_chapters(monkeypatch)
    summary = _build(out, c, only=("04",))
    assert "03_shared_memory" not in summary.chapters, summary.chapters
    assert not any(sha in (out / "report.html").read_text() for sha in a_sha)


def test_an_interrupted_students_build_keeps_only_its_own_submissions_chapter_and_says_why(tmp_path, monkeypatch):
    """The bug: Ctrl-C in a student's build put back the earlier build's chapter whatever files it
    was measured with (student c's "does not fit the launch" under student a's name), and the
    contents said it was kept for --only, which no one gave."""
    c, c_sha = _submission(tmp_path / "c", **{"fw_blocked.cu": "// c\n"})
    a, a_sha = _submission(tmp_path / "a", **{"fw_blocked.cu": "// a\n"})
    out = tmp_path / "out"
    _stand_in_chapters(monkeypatch)
    assert _build(out, a, measuring=("04",)).ok
    _stand_in_chapters(monkeypatch, stop_at="04_blocking_factor")
    again = _build(out, a, measuring=("04",))  # the same files: a's own complete chapter comes back
    assert again.interrupted and again.kept == ["04_blocking_factor"]
    assert again.chapters["04_blocking_factor"]["kept_why"] == "interrupted"
    report = (out / "report.html").read_text()
    assert "not rebuilt: this build was interrupted" in report and "--only" not in report
    _stand_in_chapters(monkeypatch)
    assert _build(out, c, measuring=("04",)).ok
    _stand_in_chapters(monkeypatch, stop_at="04_blocking_factor")
    cut = _build(out, a, measuring=("04",))
    assert cut.interrupted and not cut.chapters, cut.chapters
    assert not (out / "data" / "04_blocking_factor").exists() and not (out / outdir.EARLIER).exists()
    report = (out / "report.html").read_text()
    assert a_sha[0] in report and c_sha[0] not in report
