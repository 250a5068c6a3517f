"""build_report.py --compare: one report setting recordings side by side, from the committed
recordings, without a GPU (issue 26, requirement 3)."""

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from cudalab.chapter import recorded
from cudalab.core.paths import RESULTS_DIR, ROOT
from cudalab.report.compare import points as compare_points
from cudalab.report.compare.sources import resolve
from cudalab.report.stitch import find_browser

PDF_TOOLS = find_browser() is not None and shutil.which("pdftotext") is not None
H100_GPU = recorded.find("h100")[0].path.parent  # results/<the GPU that recorded the h100 profile>
H100 = H100_GPU / "h100"
GTX680 = recorded.find("gtx680", gpu=H100_GPU.name)[0].path


def build(*args, timeout=300):
    return subprocess.run(
        [sys.executable, str(ROOT / "build_report.py"), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    """Two profiles of different grids recorded on one GPU, and the gtx680 profile's published numbers."""
    from tests.shared_builds import as_proc, as_result, built_once

    def make(folder: Path) -> dict:
        formats = "html,pdf" if PDF_TOOLS else "html"
        proc = build(
            "--compare",
            str(GTX680),
            str(H100.relative_to(RESULTS_DIR)),
            "lab",
            "--format",
            formats,
            "--out",
            str(folder / "out"),
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        return as_result(proc)

    folder, result = built_once(tmp_path_factory, "compare-gtx680-h100", make)
    return folder / "out", as_proc(result)


@pytest.mark.skipif(not PDF_TOOLS, reason="Chromium or pdftotext missing")
def test_the_pdf_holds_every_chapter_and_no_empty_cell(compared):
    out, _ = compared
    text = subprocess.run(["pdftotext", str(out / "report.pdf"), "-"], capture_output=True, text=True).stdout
    for chapter in json.loads((out / "build.json").read_text())["chapters"]:
        assert chapter.replace("_", " ")[:2] in text
    assert "What changed in the lesson" in text and "Point by point" in text
    assert not re.search(r"\b(None|nan|NaN)\b", text)


def test_the_comparison_has_every_shared_chapter_headlines_figures_and_labels(compared):
    out, _ = compared
    html = (out / "report.html").read_text()
    summary = json.loads((out / "build.json").read_text())
    assert summary["made_by"] == "cudalab build" and summary["kind"] == "comparison"
    assert len(summary["chapters"]) == 7 and [s["kind"] for s in summary["sources"]] == [
        "recording",
        "recording",
        "lab",
    ]
    for chapter in summary["chapters"]:
        assert f'id="chapter-{chapter}"' in html, chapter
    assert html.count("What changed in the lesson") == 7 and html.count("Headline numbers") == 7
    assert len(re.findall(r'src="data:image/png;base64,', html)) >= 7, "each chapter's main figure, overlaid"
    assert re.search(r"\d\.\d{3}x,? (same|faster|slower)", html), "ratios labelled by the recorded spread"
    assert "<script" not in html and "Traceback" not in html
    text = re.sub(r"<[^>]+>", " ", html[html.index("<body") :])
    assert not re.search(r"\b(None|nan|NaN)\b", text), re.search(r".{60}\b(None|nan|NaN)\b.{20}", text)
    for f in summary["files"]:
        assert (out / f).is_file(), f


def test_one_colour_per_source_throughout(compared):
    out, _ = compared
    html = (out / "report.html").read_text()
    chips = set(re.findall(r'<span style="color:(#[0-9a-f]{6})">\u25a0</span>\xa0([^<]+)<', html))
    by_label: dict[str, set] = {}
    for colour, label in chips:  # the lab is named per chapter (its own lab and GPU), in one colour
        by_label.setdefault("the lab" if "(published" in label else label, set()).add(colour)
    assert len(by_label) == 3 and all(len(c) == 1 for c in by_label.values()), by_label
    assert len({next(iter(c)) for c in by_label.values()}) == 3, "three sources, three colours"


def test_the_lesson_is_computed_from_each_recordings_headlines(compared):
    """Chapter 01: the fastest block shape of each recording, read from its summary.json."""
    out, _ = compared
    html = (out / "report.html").read_text()
    chapter = html[html.index('id="chapter-01_block_size"') : html.index('id="chapter-02_coalescing"')]
    lesson = chapter[chapter.index("What changed in the lesson") : chapter.index("Headline numbers")]
    for rec in (GTX680, H100):
        best = next(
            h
            for h in json.loads((rec / "01_block_size" / "summary.json").read_text())
            if h["key"] == "best_block_time_ms"
        )
        assert f"{best['rows']['variant']} (N = {best['rows']['n']:,})" in lesson, (rec, lesson)


@pytest.fixture(scope="module")
def h100_h200(tmp_path_factory):
    """The H100 on h100 beside the H200 on h200, and the lab (the h100 profile's published numbers)."""
    from tests.shared_builds import built_once

    def make(folder: Path) -> dict:
        h200 = recorded.find("h200")[0].path
        out = folder / "out"
        proc = build("--compare", str(H100), str(h200), "lab", "--gpu", "h100", "--format", "html", "--out", str(out))
        assert proc.returncode == 0, proc.stderr[-3000:]
        return {}

    folder, _ = built_once(tmp_path_factory, "compare-h100-h200", make)
    return (folder / "out" / "report.html").read_text()


def _chapter(page: str, chapter: str) -> str:
    start = page.index(f'id="chapter-{chapter}"')
    end = page.find('class="cudalab-chapter-start"', start + 1)
    return page[start : end if end > 0 else len(page)]


def test_the_lesson_opens_with_the_hardware_and_says_which_ceiling_each_kernel_followed(h100_h200):
    """Issue 42: the H200's memory bandwidth is about 1.42x the H100's, its integer rate the same;
    every chapter says so from chapter 00's ceilings, and chapter 00's copies gained as the memory
    did while the add+min ceiling moved as the arithmetic did; headlines by their names."""
    import html as html_lib

    from cudalab.report.compare import hardware
    from cudalab.report.compare.sources import Source

    # the two recordings' own ceilings: the same integer rate (the same SMs and clocks), within the
    # spread of two runs, not a number typed here
    def add_min(path) -> float:
        return hardware.ceilings(Source("", "recording", "", path))["add_min_per_s"]

    rate = add_min(recorded.find("h200")[0].path) / add_min(H100)
    assert 0.97 < rate < 1.03, rate
    for chapter in ("00_gpu_capabilities", "04_blocking_factor"):
        text = html_lib.unescape(_chapter(h100_h200, chapter))
        lesson = text[text.index("What changed in the lesson") : text.index("Headline numbers")]
        assert "The hardware, as chapter 00 measured it" in lesson and "DRAM copy bandwidth 1.4" in lesson, lesson
        assert f"int32 add+min rate {rate:.2f}x" in lesson, (rate, lesson)
    text = html_lib.unescape(_chapter(h100_h200, "00_gpu_capabilities"))
    lesson = text[text.index("What changed in the lesson") : text.index("Headline numbers")]
    memory = lesson[lesson.index("Gained as the memory bandwidth did") : lesson.index("Moved as the integer")]
    arithmetic = lesson[lesson.index("Moved as the integer arithmetic rate did") :].split(". ")[0]
    assert "device to device copy" in memory and "int32 add+min ceiling" in arithmetic, lesson
    assert "add min relaxations" not in text and "best speedup over cupy is cupy" not in text


def test_a_different_sizes_headline_is_compared_at_a_size_both_recorded(h100_h200):
    import html as html_lib

    text = html_lib.unescape(_chapter(h100_h200, "00_gpu_capabilities"))
    row = next(r for r in text.split("<tr>") if r.startswith("<td>device to device copy"))
    assert "at device_to_device, transfer_bytes = 536,870,912 (both recorded it" in row, row


def test_the_lab_column_names_each_chapters_own_lab_and_gpu(h100_h200):
    """Lab 001's numbers are the NTHU course GPU's, lab 004's the RTX 2080's, never the GTX 680's."""
    assert "lab 001, NTHU course cluster GPU (not named) (published)" in _chapter(h100_h200, "04_blocking_factor")
    k_means = _chapter(h100_h200, "06_kmeans_device_update")
    assert "lab 004, GeForce RTX 2080 (published)" in k_means and "GTX 680" not in k_means


def test_different_grids_list_the_points_only_one_side_has(compared):
    """gtx680 and h100 sweep different N: every recorded correct point is either joined or listed."""
    out, _ = compared
    html = (out / "report.html").read_text()
    chapter = html[html.index('id="chapter-01_block_size"') : html.index('id="chapter-02_coalescing"')]
    assert "Points not in every source" in chapter and "n = 5000" in chapter and "n = 3072" in chapter
    sources = resolve([str(GTX680), str(H100)], RESULTS_DIR, None)
    joined = {j.table: j for j in compare_points.joined_tables(sources, "01_block_size")}["block_sweep"]
    for s in sources:
        ok = s.table("01_block_size", "block_sweep")
        ok = ok[ok["status"].eq("ok")]
        listed = sum(len(v) for k, v in joined.only.items() if s.label in k.split(", ") or k == s.label)
        assert len(joined.points) + listed == len(ok), s.label


def test_a_recording_against_its_copy_is_the_same_everywhere_and_a_missing_point_is_listed(tmp_path):
    """The join and the labels, on a committed recording copied under another GPU's folder."""
    copy = tmp_path / "results" / "another-gpu" / "h100"
    shutil.copytree(H100, copy)
    sources = resolve([str(H100), str(copy)], RESULTS_DIR, None)
    for j in compare_points.joined_tables(sources, "01_block_size"):
        assert set(j.points[j.points.columns[-1]]) == {"same"} and not j.only, j.table
    frame = sources[0].table("01_block_size", "block_sweep")
    one_less = frame.drop(index=frame.index[frame["status"].eq("ok")][0])
    j = compare_points.join_table({"A": frame, "B": one_less}, ["n", "variant"], "block_sweep")
    assert list(j.only) == ["A"] and len(j.only["A"]) == 1
    rows = compare_points.headlines(sources, "01_block_size")
    assert rows and all(v.endswith("1.000x, same") for r in rows for v in r.verdicts.values()), rows


def test_faster_and_slower_follow_the_unit():
    assert compare_points.label(0.5, 0.0, "ms") == "faster" and compare_points.label(0.5, 0.0, "GB/s") == "slower"
    assert compare_points.label(1.005, 0.0, "ms") == "same", "within 1% is the same"
    assert compare_points.label(1.2, 0.3, "ms") == "same", "within the recorded spread is the same"


@pytest.mark.parametrize(
    "args, says",
    [
        (["results/no-such-gpu/h100", "lab"], "no recording at results/no-such-gpu/h100"),
        (["results/nvidia-h100-80gb-hbm3/h100"], "at least two"),
        (["--gpu", "h100", "no-such-gpu", "lab"], "no recorded results for profile 'h100'"),
    ],
)
def test_bad_sources_are_one_line_exit_2_and_nothing_written(tmp_path, args, says):
    out = tmp_path / "out"
    gpu = args[:2] if args[0] == "--gpu" else []
    proc = build(*gpu, "--compare", *args[len(gpu) :], "--out", str(out), "--format", "html")
    assert proc.returncode == 2, proc.stderr
    assert says in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert not out.exists()


def test_recordings_with_no_chapter_in_common_are_refused(tmp_path):
    results = tmp_path / "results"
    for gpu, chapter in (("gpu-a", "01_block_size"), ("gpu-b", "05_matmul_footprint")):
        dest = results / gpu / "h100"
        shutil.copytree(H100 / chapter, dest / chapter)
        shutil.copy(H100 / recorded.RECORDINGS, dest / recorded.RECORDINGS)
    out = tmp_path / "out"
    proc = build("--compare", "gpu-a/h100", "gpu-b/h100", "--results", str(results), "--out", str(out))
    assert proc.returncode == 2 and "no chapter in common" in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and not out.exists()


def test_a_comparison_never_writes_into_a_folder_it_did_not_make(tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    proc = build("--compare", str(GTX680), str(H100), "--out", str(out), "--format", "html")
    assert proc.returncode == 2 and (out / "notes.txt").read_text() == "keep me"
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]


def test_the_published_numbers_join_on_their_coordinates():
    """vecMax's lab 002 times at 80 x 128 join the recorded sweep point by point."""
    sources = resolve([str(GTX680), "lab"], RESULTS_DIR, None)
    pub = [j for j in compare_points.joined_tables(sources, "02_coalescing") if j.against]
    vec = next(j for j in pub if j.table == "vecmax_sweep")
    assert len(vec.points) == 2 and set(vec.points["kernel"]) == {"vecmax00", "vecmax01"}
    assert isinstance(vec.points, pd.DataFrame) and (vec.points.filter(like="ratio").to_numpy() < 1).all()


def test_benchmarks_set_each_gpus_own_profile_side_by_side(tmp_path):
    """BENCHMARKS.md's side-by-side section: the H100 on h100 beside the H200 on h200 (the committed
    recordings), and a full run measured at another N on each GPU is named as such, never ranked."""
    from cudalab.report.benchmarks import native_recordings, side_by_side

    native = {(r.gpu_name, r.profile) for r in native_recordings(RESULTS_DIR)}
    assert {("NVIDIA H100 80GB HBM3", "h100"), ("NVIDIA H200", "h200")} <= native
    assert not any(p == "gtx680" for _, p in native), "a lab's profile replayed on an H100 is not the H100's own"
    text = "\n".join(side_by_side(RESULTS_DIR))
    assert "## The GPUs side by side" in text and "H100 80GB HBM3, h100" in text and "H200, h200" in text
    runs = [line for line in text.splitlines() if line.startswith("| run_fixed_s")]
    assert runs and "different sizes (N = 4,194,304" in runs[0] and "N = 8,388,608" in runs[0], runs
    assert "not ranked" in runs[0] and "no size in both" in runs[0], "a full run recorded at no common N"
    assert "faster" not in runs[0] and "slower" not in runs[0]
    # one GPU recorded on its own profile: nothing to set beside it
    shutil.copytree(H100, tmp_path / H100_GPU.name / "h100")
    assert side_by_side(tmp_path) == []


def test_a_headline_without_a_size_takes_its_tables():
    h200 = recorded.find("h200")[0].path
    src = resolve([str(H100), str(h200)], RESULTS_DIR, None)
    entry = next(e for e in src[1].headlines("06_kmeans_device_update") if e["key"] == "run_fixed_s")
    assert entry["rows"] == {"variant": "fixed"}
    rows = compare_points.sized_rows(src[1], "06_kmeans_device_update", entry)
    assert rows["variant"] == "fixed" and int(rows["n"]) == 8388608 and int(rows["k"]) == 32


def test_a_chapter_that_cannot_be_compared_costs_no_other(tmp_path):
    """A recorded table that cannot be read fails its chapter alone: its reason in its place, exit 1."""
    results = tmp_path / "results"
    for src in (H100, GTX680):
        shutil.copytree(src, results / src.parent.name / src.name)
    bad = results / H100.parent.name / "h100" / "01_block_size" / "block_sweep.csv"
    bad.write_bytes(b"n,variant\n\xff\xfe,\x81\n")
    out = tmp_path / "c"
    proc = build(
        "--compare", f"{H100.parent.name}/h100", f"{GTX680.parent.name}/gtx680", "--results", str(results),
        "--format", "html", "--out", str(out),
    )  # fmt: skip
    assert proc.returncode == 1 and "FAILED chapters: 01_block_size" in proc.stderr, proc.stderr[-2000:]
    assert "comparison failed:</b> UnicodeDecodeError" in (out / "report.html").read_text()
    assert json.loads((out / "build.json").read_text())["failed"] == ["01_block_size"]
    assert (out / "data" / "04_blocking_factor").is_dir()


def test_a_numeric_series_is_named_in_the_legend():
    """Chapter 05's footprint grid draws a line per block width: "block x 16", not a bare 16 (nor the
    16.0 that a column with the baseline's gaps reads as)."""
    from cudalab.report.compare.figures import _named

    assert _named("H200, gtx680", "block_x", 16) == "H200, gtx680: block x 16"
    assert _named("H200, gtx680", "kernel", "matmult01: 32x32 footprint") == "H200, gtx680: matmult01: 32x32 footprint"
    assert _named("H200, gtx680", None, None) == "H200, gtx680"
