"""A student's lab report (issue 43, items 1 and 2) without a GPU: build_report.py --kernels DIR
replays the chapter, names the student's files and their sha256 on the first page, and compiles
each file beside the reference, a compile error as the compiler's file:line; bad requests are one
line and exit status 2 before any work."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from cudalab.core.paths import KERNELS_DIR
from cudalab.toolchain.nvcc import cuda_tool

ROOT = Path(__file__).resolve().parent.parent


def _build(*args: str, env_extra: dict | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", **(env_extra or {})}
    return subprocess.run([sys.executable, "build_report.py", *args], cwd=ROOT, capture_output=True, text=True, env=env)


@pytest.mark.slow
@pytest.mark.skipif(cuda_tool("nvcc") is None, reason="nvcc is not installed here")
def test_a_students_kernels_are_named_compiled_beside_the_reference_and_a_broken_one_says_where(tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "fw_blocked.cu").write_text((KERNELS_DIR / "fw_blocked.cu").read_text())
    broken = (KERNELS_DIR / "fw_shared_tile.cu").read_text().splitlines()
    at = next(i for i, t in enumerate(broken) if "__global__" in t) + 2
    broken.insert(at, "    int oops = ;")
    (mine / "fw_shared_tile.cu").write_text("\n".join(broken) + "\n")
    before = {p.name: p.read_bytes() for p in KERNELS_DIR.iterdir()}
    out = tmp_path / "out"
    proc = _build("--kernels", str(mine), "--gpu", "h100", "--format", "html", "--out", str(out))
    # issue 65, item 8: the console says each file's verdict, and a file that does not compile is exit status 1
    assert proc.returncode == 1, proc.stderr[-3000:]
    said = proc.stderr.splitlines()
    assert "no GPU: compiled only; nothing timed, no case solved" in said, proc.stderr[-3000:]
    assert "your fw_blocked.cu in 04_blocking_factor: compiled only" in said
    assert any(
        line.startswith(f"your fw_shared_tile.cu in 03_shared_memory: does not compile fw_shared_tile.cu:{at + 1}:")
        for line in said
    ), proc.stderr[-3000:]
    html = (out / "report.html").read_text()
    for name in ("fw_blocked.cu", "fw_shared_tile.cu"):
        assert hashlib.sha256((mine / name).read_bytes()).hexdigest() in html
    assert "Your kernels beside the reference" in html and "its timings need a GPU" in html
    # issue 67, item 2: the first page leads with the student's results, the reference's summary after, so titled
    results = html.index("<h2>Your results</h2>")
    assert results < html.index("the reference, not yours") and "<h2>Summary</h2>" not in html
    first_page = html[results : html.index("the reference, not yours")]
    assert re.search(
        r"fw_blocked\.cu</code></td><td>.*?04</a></td><td>compiled only</td><td>[^<]*"
        r"\d+ registers, \d+% occupancy \(reference \d+, \d+%\)",
        first_page,
    ), first_page
    assert f"does not compile fw_shared_tile.cu:{at + 1}:" in first_page
    tile = pd.read_csv(out / "data" / "03_shared_memory" / "yours.csv")
    mine_rows = tile[tile["source"].eq("yours")]
    assert list(mine_rows["status"]) == ["does not compile"]
    assert mine_rows["reason"].iloc[0].startswith(f"fw_shared_tile.cu:{at + 1}:"), mine_rows["reason"].iloc[0]
    assert str(tmp_path) not in mine_rows["reason"].iloc[0]
    blocked = pd.read_csv(out / "data" / "04_blocking_factor" / "yours.csv")
    ours = blocked.pivot_table(index="kernel", columns="source", values="registers_per_thread")
    assert (ours["yours"] == ours["reference"]).all(), "the reference's own code compiles to the same registers"
    occupancy = pd.read_csv(out / "data" / "04_blocking_factor" / "yours_occupancy.csv")
    both = occupancy.pivot_table(
        index=["kernel", "threads_per_block", "dynamic_shared_bytes"], columns="source", values="occupancy_fraction"
    )
    assert len(both) and (both["yours"] == both["reference"]).all(), "theoretical occupancy beside the reference's"
    assert "Theoretical occupancy on the profile's GPU" in html
    assert {p.name: p.read_bytes() for p in KERNELS_DIR.iterdir()} == before, "kernels_cu/ is never written"
    assert sorted(p.name for p in mine.iterdir()) == ["fw_blocked.cu", "fw_shared_tile.cu"], (
        "the student's folder is only read"
    )
    assert "01_block_size" not in {p.name for p in (out / "data").iterdir()}, "only the chapters that ask for the files"


@pytest.mark.parametrize(
    "files, extra, says",
    [
        ({"notes.txt": "x"}, (), "nothing to measure"),
        ({"fw_blocked.cu": '#include "/etc/passwd"\n'}, (), "nothing to measure"),
        ({"fw_blocked.cu": "// mine\n"}, ("--record",), "never recorded"),
    ],
)
def test_a_students_build_that_cannot_start_is_one_line_and_status_2(tmp_path, files, extra, says):
    mine = tmp_path / "mine"
    mine.mkdir()
    for name, text in files.items():
        (mine / name).write_text(text)
    proc = _build("--kernels", str(mine), "--gpu", "h100", "--out", str(tmp_path / "out"), *extra)
    assert proc.returncode == 2, proc.stderr
    assert says in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "/etc/passwd" not in proc.stderr or "names a path" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_every_chapter_that_launches_a_students_file_measures_it(tmp_path):
    """The face runs every chapter whose declared points build from a submitted file: the basic
    kernel is chapter 01's lesson and the baseline of 02, 03 and 04."""
    import build_report
    from cudalab.grading.submission import check

    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "fw_basic_2d.cu").write_text("// mine\n")
    assert build_report._chapters_measuring(check(mine)) == (
        ["01_block_size", "02_coalescing", "03_shared_memory", "04_blocking_factor"],
        "",
    )
    (mine / "fw_basic_2d.cu").unlink()
    (mine / "mm_00_naive.cu").write_text("// mine\n")
    chapters, why = build_report._chapters_measuring(check(mine))
    assert chapters == [] and "no chapter measures a student's mm_00_naive.cu" in why
    proc = _build("--kernels", str(mine), "--gpu", "h100", "--out", str(tmp_path / "out"))
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert not (tmp_path / "out").exists()


def test_the_sections_figure_puts_each_point_on_its_own_scale():
    """A chapter's points may differ a thousandfold (vecMax at 0.17 ms beside the basic
    Floyd-Warshall kernel at 63 ms): each point is a row of its own, scaled to its own bars, each
    bar labelled with its value and unit, a wrong result named in its label."""
    import matplotlib

    matplotlib.use("Agg")
    import pandas as pd

    from cudalab.core import plots

    data = pd.DataFrame(
        {
            "point": ["n=67108864, kernel=vecmax00"] * 2 + ["n=2048, block_edge=16"] * 2,
            "source": ["reference", "yours", "reference", "yours (wrong)"],
            "time_ms": [0.174, 0.175, 62.71, 62.72],
        }
    )
    fig = plots.bars_per_panel(data, "point", "time_ms", "source", xlabel="time (ms)", title="t", unit="ms")
    small, large = fig.axes
    assert small.get_xlim()[1] < 1 < 60 < large.get_xlim()[1]
    assert [t.get_text() for t in large.get_yticklabels()] == ["reference", "yours (wrong)"]
    assert [t.get_text() for t in small.texts] == ["0.174 ms", "0.175 ms"]
    assert small.get_title(loc="left") == "n=67108864, kernel=vecmax00"


@pytest.mark.slow
@pytest.mark.full  # make test-full: two students' builds, interrupted
@pytest.mark.skipif(cuda_tool("nvcc") is None, reason="nvcc is not installed here")
def test_ctrl_c_never_leaves_one_students_chapter_in_anothers_report(tmp_path, monkeypatch, capsys):
    """Issue 65, item 9: student a's sha256 on page 1 and student c's "does not fit the launch" in
    chapter 04, after an interrupted build. The bug: an interrupted build put back the earlier
    build's complete chapter whatever kernel files it had measured, and the contents called any
    kept chapter "not rebuilt: --only". Without a GPU (replay, compiled only): a's build, a's again
    cut by Ctrl-C in chapter 04 (a's own chapter 04 comes back, kept because the build was
    interrupted), c's (does not fit: exit status 1), then a's cut again: c's chapter is not kept."""
    import json

    sys.path.insert(0, str(ROOT))
    import build_report
    from cudalab.core import gpu
    from cudalab.report import build as report_build
    from tests.grading_class import students

    monkeypatch.setattr(gpu, "gpu_available", lambda: False)
    shas = {}
    for who, student in (("a", "a_correct"), ("c", "e_signature")):
        (tmp_path / who).mkdir()
        text = students()[student]["fw_blocked.cu"]
        (tmp_path / who / "fw_blocked.cu").write_text(text)
        shas[who] = hashlib.sha256(text.encode()).hexdigest()
    out = tmp_path / "out"
    real = report_build._run_chapter

    def build(who: str, cut: bool = False) -> tuple[int, str, str]:
        def ctrl_c(chapter, *args):
            raise KeyboardInterrupt

        monkeypatch.setattr(report_build, "_run_chapter", ctrl_c if cut else real)
        status = build_report.main(
            ["--kernels", str(tmp_path / who), "--gpu", "h100", "--format", "html", "--out", str(out)]
        )
        return status, capsys.readouterr().err, (out / "report.html").read_text()

    status, said, _ = build("a")
    assert status == 0 and "your fw_blocked.cu in 04_blocking_factor: compiled only" in said, said[-2000:]
    assert build_report.NO_GPU in said
    status, said, report = build("a", cut=True)
    assert status == 130 and "the earlier build's complete chapter is kept" in said, said[-2000:]
    assert shas["a"] in report and "not rebuilt: this build was interrupted" in report and "--only" not in report
    status, said, report = build("c")
    assert status == 1 and "your fw_blocked.cu in 04_blocking_factor: does not fit the launch" in said, said[-2000:]
    assert "does not fit the launch" in report and shas["c"] in report
    status, said, report = build("a", cut=True)
    assert status == 130, said[-2000:]
    assert shas["a"] in report and shas["c"] not in report and "does not fit the launch" not in report
    assert not (out / "data" / "04_blocking_factor").exists()
    assert not json.loads((out / "build.json").read_text())["chapters"]
