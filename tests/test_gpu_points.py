"""GPU tests of "measure one point now" and the scratch-kernel path, through the explorer's Python
call (``explore.measure.measure_now``): a point of each chapter at small sizes measured and checked
by the chapter's own sweep, a point beyond the GPU's limits skipped with the sweep's reason, and a
scratch copy that does not compile, one that computes a wrong result, and the originals untouched.
The same through the explorer itself (``Explorer.measure``, what its button calls) on a chapter
opened in measure mode: the point appended to "your measurements" and marked over the curve, a
scratch copy's compile error and wrong result shown as such beside the original."""

import re
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
from conftest import notebook_defaults

from cudalab.core.kernels import source_digest
from cudalab.core.paths import KERNELS_DIR, NOTEBOOKS_DIR
from cudalab.explore import figure, yours
from cudalab.explore.measure import measure_now, why_no_gpu
from cudalab.explore.scratch import scratch_kernel
from cudalab.labs.bandwidth import COPY_POINT
from cudalab.labs.fw.blocked.point import POINT as BLOCKING_FACTOR
from cudalab.labs.fw.points import BLOCK_SIZE, COALESCING, SHARED_MEMORY
from cudalab.labs.kmeans.point import POINT as KMEANS
from cudalab.labs.matmul import FOOTPRINT_POINT

pytestmark = pytest.mark.gpu


def kernels_digests() -> dict[str, str]:
    return {p.name: source_digest(p) for p in sorted(KERNELS_DIR.glob("*.cu*"))}


@pytest.fixture
def lab(tmp_path):
    """What the explorer's ``lab`` gives a point: its data folder, the chapter's parameters (a
    seed, chapter 06's iterations and check size, each notebook's default) and its time limit."""
    chapter_06 = notebook_defaults("06_kmeans_device_update")
    params = {"seed": 2016, "iterations": chapter_06["iterations"], "check_n": 20000}
    return SimpleNamespace(
        out_dir=tmp_path / "data", params=params, point_time_limit_s=chapter_06["point_time_limit_s"]
    )


def assert_ok(got, table: str):
    assert got.status == "ok", got.message
    assert (got.rows["status"] == "ok").all(), got.rows.to_string()
    assert got.rows["time_ms"].ge(0).all() and got.rows["time_ms"].sum() > 0
    assert got.saved_to == got.saved_to.parent / f"your_measurements_{table}.csv" and got.saved_to.is_file()


def test_a_gpu_is_here():
    assert why_no_gpu() is None


def test_chapter_01_point_is_measured_checked_and_kept(lab):
    recipe = BLOCK_SIZE
    got = measure_now(lab, recipe, {"n": 300, "block_edge": 24})
    assert_ok(got, "block_sweep")
    row = got.rows.iloc[0]
    assert row["variant"] == "24x24" and row["n"] == 300 and row["threads_per_block"] == 576
    assert row["repeats"] >= 3 and row["mismatches"] == 0 and row["grid"] == "13x13"
    assert "matches the reference" in got.message
    if "occupancy_fraction" in got.rows:  # where nvcc is installed
        assert 0 < row["occupancy_fraction"] <= 1
    saved = yours.load(lab, "block_sweep")
    assert len(saved) == 1 and saved["gpu_name"].iloc[0] and not bool(saved["scratch_copy"].iloc[0])
    assert saved["kernel_source_digest"].iloc[0] == source_digest(KERNELS_DIR / "fw_basic_2d.cu")


def test_point_beyond_the_limits_is_skipped_with_the_sweeps_reason(lab):
    from cudalab.labs.fw import harness as fw
    from cudalab.labs.fw import per_k

    swept, _ = fw.sweep([fw.Variant("48x48", {}, per_k.basic(48))], [100], seed=1, cpu_max_n=0)
    got = measure_now(lab, BLOCK_SIZE, {"n": 100, "block_edge": 48})
    assert got.status == "skipped"
    assert got.rows["reason"].iloc[0] == swept["reason"].iloc[0]
    assert "2304 threads" in got.message


def test_scratch_copy_compile_error_names_the_copy_and_line(lab, tmp_path):
    before = kernels_digests()
    copy = scratch_kernel("fw_basic_2d.cu", tmp_path / "scratch")
    text = copy.read_text()
    statement = "int j = threadIdx.y + blockIdx.y * blockDim.y;"
    line = text[: text.index(statement)].count("\n") + 1
    copy.write_text(text.replace(statement, statement.rstrip(";")))
    got = measure_now(lab, BLOCK_SIZE, {"n": 300, "block_edge": 16}, kernel_file=copy)
    assert got.status == "compile error", got.message
    where = re.match(r"scratch/fw_basic_2d\.cu:(\d+): \S", got.message)
    assert where and int(where.group(1)) in (line, line + 1), got.message  # the compiler may name the next line
    assert "Traceback" not in got.message and "\n" not in got.message
    assert yours.load(lab, "block_sweep")["status"].tolist() == ["compile error"]
    assert kernels_digests() == before


def test_scratch_copy_with_a_wrong_relaxation_is_wrong(lab, tmp_path):
    before = kernels_digests()
    copy = scratch_kernel("fw_basic_2d.cu", tmp_path / "scratch")
    good = measure_now(lab, BLOCK_SIZE, {"n": 300, "block_edge": 16}, kernel_file=copy)
    assert_ok(good, "block_sweep")  # an unedited copy measures as the original does
    text = copy.read_text()
    assert "= Min(" in text
    copy.write_text(text.replace("= Min(", "= max("))  # keeps the longer path: not Floyd-Warshall
    got = measure_now(lab, BLOCK_SIZE, {"n": 300, "block_edge": 16}, kernel_file=copy)
    assert got.status == "wrong", got.message
    assert got.rows["mismatches"].iloc[0] > 0 and "WRONG" in got.message
    saved = yours.load(lab, "block_sweep")
    assert saved["status"].tolist() == ["ok", "wrong"]
    assert saved["scratch_copy"].astype(bool).all()
    assert saved["kernel_source_digest"].nunique() == 2  # the edit is in the provenance
    assert kernels_digests() == before


def test_chapter_00_point(lab):
    got = measure_now(lab, COPY_POINT, {"transfer_bytes": 1 << 20})
    assert_ok(got, "copy_bandwidth")
    assert got.rows["bandwidth_GBps"].iloc[0] > 0


def test_chapter_02_and_03_points(lab):
    assert_ok(measure_now(lab, COALESCING, {"n": 300, "threads_per_block": 96}), "fw_sweep")
    segment = {"n": 300, "threads_per_block": 64, "segment_size": 3, "kernel": "coalesced_segment"}
    assert_ok(measure_now(lab, COALESCING, segment), "fw_sweep")
    got = measure_now(lab, SHARED_MEMORY, {"n": 300, "block": 24})
    assert_ok(got, "shared_sweep")
    assert got.rows["variant"].iloc[0] == "tile 24x24 (fixed)"


@pytest.mark.parametrize("kernel,bf", [("shared", 24), ("registers", 64), ("min-plus", 64)])
def test_chapter_04_point(lab, kernel, bf):
    got = measure_now(lab, BLOCKING_FACTOR, {"n": 300, "block_factor": bf, "kernel": kernel})
    assert_ok(got, "blocking_factor_sweep")
    assert got.rows["block_factor"].iloc[0] == bf and got.rows["relaxations_per_s"].iloc[0] > 0


def test_chapter_04_scratch_copy_of_another_kernel_is_refused(lab, tmp_path):
    copy = scratch_kernel("fw_blocked_minplus.cu", tmp_path / "scratch")
    got = measure_now(lab, BLOCKING_FACTOR, {"n": 300, "block_factor": 32, "kernel": "shared"}, kernel_file=copy)
    assert got.status == "error" and "is not a kernel file of the shared kernel" in got.message


def test_chapter_05_point(lab):
    got = measure_now(lab, FOOTPRINT_POINT, {"n": 256, "block_x": 8, "footprint": 40})
    assert_ok(got, "footprint_sweep")
    assert 0 < got.rows["fraction_of_cublas"].iloc[0] and got.rows["kernel"].iloc[0] == "footprint 40, 8x8 threads"


def test_chapter_06_point(lab):
    got = measure_now(lab, KMEANS, {"n": 65536, "d": 8, "k": 48, "variant": "tiled"})
    assert_ok(got, "stage_times")
    assert set(got.rows["iteration"]) == set(range(lab.params["iterations"]))
    assert "per iteration" in got.message


# ---- through the explorer: what its button calls (Explorer.measure), a lab measured now


def _stars(fig) -> list[tuple[float, float]]:
    """The (x, y) of every "your measurement" star the figure draws."""
    return [
        tuple(xy)
        for ax in fig.axes
        for c in ax.collections
        if c.get_label() == "your measurement"
        for xy in c.get_offsets()
    ]


@pytest.fixture
def measured_explorer(tmp_path, monkeypatch):
    """Chapter 01 opened in measure mode in ``tmp_path``, its block_sweep a small sweep measured now
    (the recipe's points), and the explorer on it with the chapter's point recipe, as its Explore
    cell opens it. Scratch copies go to ``tmp_path/scratch``, never the repository's notebooks/scratch."""
    pytest.importorskip("ipywidgets")
    from cudalab import open_chapter
    from cudalab.chapter import catalog
    from cudalab.core import paths
    from cudalab.explore import scratch, widgets

    monkeypatch.delenv(catalog.BATCH_ENV, raising=False)
    monkeypatch.setattr(paths, "SCRATCH_DIR", tmp_path / "scratch")
    monkeypatch.setattr(scratch, "SCRATCH_DIR", tmp_path / "scratch")
    namespace = {name: p.default for name, p in catalog.chapter("01_block_size").parameters().items()}
    namespace.update(profile="gtx680", mode="measure", data_dir=str(tmp_path / "data"), recorded_dir="", progress=False)
    lab = open_chapter("01_block_size", namespace)
    recipe = BLOCK_SIZE
    sweep = [recipe.measure({"n": n, "block_edge": b}, params=lab.params) for n in (256, 512) for b in (8, 16)]
    lab.table("block_sweep", lambda: pd.concat(sweep, ignore_index=True), axes=("n", "variant"))
    explorer = widgets.explore(lab, "block_sweep", point=recipe)
    assert explorer is not None and not explorer.measure_button.disabled, explorer.measure_status.value
    explorer.point_inputs["n"].value = 300
    explorer.point_inputs["block_edge"].value = 24
    return lab, explorer


def _listing(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*")) if folder.is_dir() else []


REPO_SCRATCH = NOTEBOOKS_DIR / "scratch"  # what paths.SCRATCH_DIR is, outside these tests


def test_the_explorer_measures_a_point_and_marks_it_over_the_curve(measured_explorer):
    lab, explorer = measured_explorer
    repo_scratch = _listing(REPO_SCRATCH)
    before = bytes(explorer.image.value)
    (got,) = explorer.measure()
    assert got.status == "ok", got.message
    row = got.rows.iloc[0]
    assert row["n"] == 300 and row["variant"] == "24x24" and row["time_ms"] > 0
    assert "original: ok" in explorer.measure_status.value
    saved = yours.load(lab, "block_sweep")
    assert got.saved_to == yours.path(lab, "block_sweep") and len(saved) == 1
    assert saved["time_ms"].iloc[0] == pytest.approx(row["time_ms"])
    assert bytes(explorer.image.value) != before, "the figure is redrawn"
    assert (300, pytest.approx(row["time_ms"])) in _stars(explorer.last_figure)
    assert "your measurement" in figure.legend_texts(explorer.last_figure)
    assert _listing(REPO_SCRATCH) == repo_scratch


def test_the_explorer_measures_a_scratch_copy_beside_the_original(measured_explorer, tmp_path):
    from cudalab.core.paths import SCRATCH_DIR

    lab, explorer = measured_explorer
    before, repo_scratch = kernels_digests(), _listing(REPO_SCRATCH)
    # the scratch copy as a student leaves it: made, then edited to a syntax error
    copy = scratch_kernel("fw_basic_2d.cu", dest_dir=SCRATCH_DIR)
    assert copy.parent == tmp_path / "scratch"
    text = copy.read_text()
    statement = "int j = threadIdx.y + blockIdx.y * blockDim.y;"
    line = text[: text.index(statement)].count("\n") + 1
    copy.write_text(text.replace(statement, statement.rstrip(";")))
    explorer.use_scratch.value = True  # as the checkbox: the existing copy (its edits) is used
    assert explorer.scratch_path.value == str(copy)

    original, broken = explorer.measure()
    assert original.status == "ok", original.message
    assert broken.status == "compile error", broken.message
    where = re.match(r"scratch/fw_basic_2d\.cu:(\d+): \S", broken.message)
    assert where and int(where.group(1)) in (line, line + 1), broken.message
    assert "Traceback" not in explorer.measure_status.value
    assert "scratch copy: compile error: scratch/fw_basic_2d.cu:" in explorer.measure_status.value

    copy.write_text(text.replace("= Min(", "= max("))  # keeps the longer path: not Floyd-Warshall
    original, wrong = explorer.measure()
    assert original.status == "ok" and wrong.status == "wrong", wrong.message
    assert "WRONG" in wrong.message and "scratch copy: wrong" in explorer.measure_status.value
    saved = yours.load(lab, "block_sweep")
    assert saved["status"].tolist() == ["ok", "compile error", "ok", "wrong"]
    fig = explorer.last_figure
    assert "your measurement: not ok" in figure.legend_texts(fig), "the wrong point is marked as such"
    wrong_time = saved["time_ms"].iloc[-1]
    if pd.notna(wrong_time):
        assert all(y != pytest.approx(wrong_time) for _, y in _stars(fig)), "a wrong point is never drawn as a time"
    assert len(_stars(fig)) == 2, "the two originals, each a star"
    assert kernels_digests() == before and _listing(REPO_SCRATCH) == repo_scratch
