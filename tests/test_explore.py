"""The explorer: one table from this run, every recording and the lab's published numbers as one
frame; figures that change with the controls; wrong or skipped points never drawn as times; nothing
shown in a batch build, nothing left of it in the report."""

import json
import re
import shutil
import subprocess
import sys
import time
from types import SimpleNamespace

import pandas as pd
import pytest
from conftest import notebook_defaults

from cudalab import open_chapter
from cudalab.chapter import catalog, recorded
from cudalab.core.gpu import gpu_available
from cudalab.core.paths import ROOT
from cudalab.explore import data, figure

pytestmark = pytest.mark.skipif(gpu_available(), reason="opens chapters in replay mode")

H100 = "NVIDIA H100 80GB HBM3"
# the GPU whose gtx680 recording a replay takes (the newest of several): "this run" in replay
REPLAYED = recorded.find("gtx680")[0].gpu_name
# each chapter's Explore cell and the table it opens
MAIN_TABLES = {
    "00_gpu_capabilities": "copy_bandwidth",
    "01_block_size": "block_sweep",
    "02_coalescing": "fw_sweep",
    "03_shared_memory": "shared_sweep",
    "04_blocking_factor": "blocking_factor_sweep",
    "05_matmul_footprint": "size_sweep",
    "06_kmeans_device_update": "stage_times",
}


def replay(chapter_id, profile, tmp_path):
    """A chapter opened in replay with its recorded tables in this run's data folder, as the
    notebook leaves them after running (``lab.table`` copies each)."""
    lab = open_chapter(
        chapter_id, {**notebook_defaults(chapter_id), "profile": profile, "data_dir": str(tmp_path), "progress": False}
    )
    for csv in (lab.recorded_dir / chapter_id).glob("*.csv"):
        shutil.copyfile(csv, lab.out_dir / csv.name)
    return lab


@pytest.fixture
def block_sweep(tmp_path):
    lab = replay("01_block_size", "gtx680", tmp_path)
    return lab, data.load(lab, "block_sweep")


def test_a_table_comes_from_this_run_every_recording_and_the_published_numbers(block_sweep):
    lab, d = block_sweep
    labels = [s.label for s in d.sources]
    assert labels[0] == f"{REPLAYED} · gtx680 (this run)"
    assert f"{H100} · h100 (recorded)" in labels and f"{H100} · maxwell_team5 (recorded)" in labels
    assert f"{REPLAYED} · gtx680 (recorded)" not in labels, "the replayed recording is this run, not an overlay"
    others = [r.gpu_name for r in recorded.all_recordings() if r.profile == "gtx680" and r.gpu_name != REPLAYED]
    assert all(f"{gpu} · gtx680 (recorded)" in labels for gpu in others), "another GPU's gtx680 recording is beside"
    assert "lab 000, GeForce GTX 680 (published)" in labels
    assert d.axes == ["n", "variant"] and d.numeric_axes() == ["n"] and d.categorical_axes() == ["variant"]
    pub = d.frame[d.frame["kind"].eq(data.PUBLISHED)]
    # lab 000 gives the 16x16 time at N = 5000 (41.1 s): its block_edge 16 is our variant "16x16"
    row = pub[pub["time_ms"].notna()].iloc[0]
    assert (row["n"], row["variant"]) == (5000, "16x16") and row["time_ms"] == pytest.approx(41100.0)
    run = pd.read_csv(lab.recorded_dir / "01_block_size" / "block_sweep.csv")
    assert len(d.frame[d.frame["source"].eq(labels[0])]) == len(run)


def test_another_profile_sees_the_gtx680_grid_as_a_recording(tmp_path):
    lab = replay("01_block_size", "h100", tmp_path)
    d = data.load(lab, "block_sweep")
    labels = [s.label for s in d.sources]
    assert labels[0] == f"{H100} · h100 (this run)" and f"{H100} · gtx680 (recorded)" in labels


@pytest.mark.parametrize(
    "column, label",
    [
        ("time_ms", "time (ms)"),
        ("time_s", "time (s)"),
        ("bandwidth_GBps", "bandwidth (GB/s)"),
        ("gflop_per_s", "GFLOP/s"),
        ("relaxations_per_s", "relaxations/s"),
        ("fp32_peak_GFLOPs", "fp32 peak (GFLOP/s)"),
        ("fraction_of_cublas", "fraction of cublas (fraction)"),
        ("occupancy_fraction", "occupancy fraction (fraction)"),
        ("speedup_vs_cpu", "speedup vs cpu (x)"),
        ("transfer_bytes", "transfer bytes (bytes)"),
    ],
)
def test_every_metric_is_labelled_with_its_unit(column, label):
    assert data.metric_label(column) == label


def test_only_columns_that_state_a_unit_are_metrics(block_sweep):
    _, d = block_sweep
    assert next(iter(d.metrics)) == "time_ms", "a time is the first metric offered"
    assert "time_ms_q1" not in d.metrics and "n" not in d.metrics and "block_edge" not in d.metrics
    assert data.unit_of("block_x") is None and data.unit_of("tile") is None


def test_filters_keep_the_chosen_values_and_ranges(block_sweep):
    _, d = block_sweep
    picked = data.select(d, filters={"variant": ["8x8", "16x16"], "n": (1000, 3000)})
    assert set(picked["variant"]) == {"8x8", "16x16"} and picked["n"].between(1000, 3000).all()
    assert set(picked["source"]) == {d.run_source}, "overlays appear only when chosen"
    both = data.select(d, sources=[f"{H100} · h100 (recorded)"])
    assert set(both["source"]) == {d.run_source, f"{H100} · h100 (recorded)"}


def test_the_rows_table_shows_status_and_never_nan(block_sweep):
    _, d = block_sweep
    shown = data.rows_table(data.select(d, sources=d.overlays), d, "time_ms")
    assert {"source", "n", "variant", "time (ms)", "status"} <= set(shown.columns)
    assert not shown.isna().any().any() and "nan" not in shown.to_string().lower()
    assert "–" in set(shown["time (ms)"]), "a published row without a time reads –"


# ---- derived speedups


def test_speedup_over_a_baseline_is_its_time_over_the_rows_at_the_same_n_and_source(block_sweep):
    _, d = block_sweep
    assert list(d.baselines) == ["variant"]
    assert list(d.baselines["variant"]) == ["4x4", "8x8", "16x16", "32x32"], "the run's order; 4x4 the default"
    assert d.metrics["speedup_over_16x16"] == "speedup over 16x16 (x)"
    offered = d.offered_metrics()
    assert offered["speedup_over_4x4"] == "speedup over a variant (x)" and "speedup_over_8x8" not in offered
    f = d.frame
    for source, n in ((d.run_source, 1000), (f"{H100} · h100 (recorded)", 1024)):
        rows = f[f["source"].eq(source) & f["n"].eq(n)].set_index("variant")
        assert rows.loc["16x16", "speedup_over_16x16"] == pytest.approx(1.0)
        assert rows.loc["8x8", "speedup_over_4x4"] == pytest.approx(
            rows.loc["4x4", "time_ms"] / rows.loc["8x8", "time_ms"]
        )


def test_a_wrong_or_skipped_baseline_or_row_has_no_speedup(tmp_path):
    lab = replay("01_block_size", "gtx680", tmp_path)
    csv = lab.out_dir / "block_sweep.csv"
    run = pd.read_csv(csv)
    run.loc[run["n"].eq(1000) & run["variant"].eq("4x4"), "status"] = "wrong"
    run.loc[run["n"].eq(2000) & run["variant"].eq("8x8"), ["status", "time_ms"]] = ["skipped", None]
    run.to_csv(csv, index=False)
    d = data.load(lab, "block_sweep")
    mine = d.frame[d.frame["source"].eq(d.run_source)].set_index(["n", "variant"])
    assert mine.loc[(1000, "8x8"), ["speedup_over_4x4"]].isna().all(), "over a wrong baseline: missing"
    assert mine.loc[(1000, "4x4"), ["speedup_over_8x8", "speedup_vs_cpu"]].isna().all(), "a wrong row: missing"
    assert mine.loc[(2000, "8x8"), ["speedup_over_4x4", "speedup_vs_cpu"]].isna().all(), "a skipped row: missing"
    assert mine.loc[(2000, "16x16"), "speedup_over_4x4"] > 0
    shown = data.rows_table(data.select(d, filters={"n": (1000, 1000)}), d, "speedup_over_4x4")
    assert set(shown.loc[shown["variant"].ne("4x4"), "speedup over 4x4 (x)"]) == {"–"}


def test_speedup_over_the_cpu_joins_the_cpu_reference_on_n_and_the_lab_speedups_sit_beside_it(block_sweep):
    lab, d = block_sweep
    assert d.metrics[data.CPU_SPEEDUP] == "speedup over the CPU (x)"
    cpu = pd.read_csv(lab.out_dir / "cpu_reference.csv").set_index("n")["cpu_time_ms"]
    f = d.frame
    mine = f[f["source"].eq(d.run_source)].set_index(["n", "variant"])
    assert mine.loc[(500, "16x16"), "speedup_vs_cpu"] == pytest.approx(cpu[500] / mine.loc[(500, "16x16"), "time_ms"])
    assert mine.loc[(5000, "16x16"), ["speedup_vs_cpu"]].isna().all(), "beyond the CPU reference: missing"
    pub = f[f["kind"].eq(data.PUBLISHED)].set_index("variant")["speedup_vs_cpu"]
    assert pub.to_dict() == {"8x8": 17.3, "16x16": 21.1, "32x32": 10.6}, "lab 000's published speedups"
    fig = figure.draw(d, figure.Selection(metric="speedup_vs_cpu", x="n", colour="variant", overlays=d.overlays))
    assert 21.1 in _plotted_y(fig) and fig.axes[0].get_ylabel() == "speedup over the CPU (x)"


def test_chapter_02_published_speedups_find_their_variant(tmp_path):
    lab = replay("02_coalescing", "gtx680", tmp_path)
    d = data.load(lab, "fw_sweep")
    pub = d.frame[d.frame["kind"].eq(data.PUBLISHED)]
    assert {"basic 16x16", "coalesced 128"} <= set(pub["variant"]) and pub["speedup_vs_cpu"].notna().all()


def test_the_labs_numbers_sit_beside_every_table_they_published(tmp_path):
    """Lab 001's ladder beside chapter 04's (step by step), its phase-3 counters on our shared
    kernel at each blocking factor (not one 'not stated' point), lab 004's baseline run beside
    chapter 06's whole runs; each labelled with the GPU as its lab names it, no size invented."""
    lab = replay("04_blocking_factor", "gtx680", tmp_path / "04")
    ladder = data.load(lab, "ladder").frame
    pub = ladder[ladder["kind"].eq(data.PUBLISHED)]
    assert set(pub["source"]) == {"lab 001, NTHU course cluster GPU (not named) (published)"}
    assert pub.set_index("variant")["time_ms"]["7. Occupancy optimization"] == pytest.approx(2177.445)
    assert set(pub["n"]) == {data.NOT_STATED}  # the lab's test case is not this run's N
    counters = data.load(lab, "phase3_counters").frame
    pub = counters[counters["kind"].eq(data.PUBLISHED)]
    assert list(pub["variant"]) == ["shared BF 8", "shared BF 16", "shared BF 32", "shared BF 64"]
    lab = replay("06_kmeans_device_update", "gtx680", tmp_path / "06")
    runs = data.load(lab, "full_runs").frame
    pub = runs[runs["kind"].eq(data.PUBLISHED)]
    assert list(pub["variant"]) == ["host_update"] and list(pub["total_ms"]) == [2790.0]
    assert set(pub["source"]) == {"lab 004, GeForce RTX 2080 (published)"}


def test_a_table_without_a_categorical_axis_or_time_has_no_speedups(block_sweep):
    lab, _ = block_sweep
    cpu = data.load(lab, "cpu_reference")
    assert cpu.baselines == {} and not [m for m in cpu.metrics if m.startswith("speedup")]


def _plotted_y(fig):
    return [y for ax in fig.axes for line in ax.lines for y in line.get_ydata()]


def test_wrong_and_skipped_points_are_never_drawn_as_times(block_sweep):
    _, d = block_sweep
    frame = d.frame.copy()
    run = frame["source"].eq(d.run_source)
    wrong = run & frame["n"].eq(1000) & frame["variant"].eq("8x8")
    skipped = run & frame["n"].eq(2000) & frame["variant"].eq("8x8")
    frame.loc[wrong, ["status", "time_ms"]] = ["wrong", 1.0e9]
    frame.loc[skipped, ["status", "time_ms", "reason"]] = ["skipped", 2.0e9, "over the point's time limit"]
    bad = data.TableData(d.chapter, d.table, frame, d.axes, d.metrics, d.sources)
    fig = figure.draw(bad, figure.Selection(metric="time_ms", x="n", colour="variant"))
    assert 1.0e9 not in _plotted_y(fig) and 2.0e9 not in _plotted_y(fig)
    legend = figure.legend_texts(fig)
    assert "wrong result (not counted)" in legend and any(t.startswith("skipped") for t in legend)
    rows = data.rows_table(data.select(bad), bad, "time_ms")
    assert "over the point's time limit" in set(rows["reason"])


def _grids() -> data.TableData:
    """Chapter 04's case (issue 42): this run at N = 5000 only; a recording at N = 8192 for every
    blocking factor and at 16384 for BF 64 and 128 only (BF 8-32 skipped there). BF 64 is about 2x
    faster than BF 32 at every N."""
    rows = []
    for bf, t in ((8, 40.0), (16, 30.0), (32, 20.0), (64, 10.0), (128, 12.0)):
        rows.append({"n": 5000, "variant": f"BF {bf}", "time_ms": t, "status": "ok", "source": "run", "kind": "run"})
        rows.append(
            {"n": 8192, "variant": f"BF {bf}", "time_ms": 4 * t, "status": "ok", "source": "rec", "kind": "recorded"}
        )
        skipped = bf <= 32
        rows.append(
            {
                "n": 16384,
                "variant": f"BF {bf}",
                "time_ms": float("nan") if skipped else 32 * t,
                "status": "skipped" if skipped else "ok",
                "source": "rec",
                "kind": "recorded",
            }
        )
    sources = [data.Source("run", data.RUN, "."), data.Source("rec", data.RECORDED, ".")]
    return data.TableData("04_x", "bf", pd.DataFrame(rows), ["n", "variant"], {"time_ms": "time (ms)"}, sources)


def _lines(fig) -> dict:
    """Each panel's lines: panel title -> [(x positions, y values)]."""
    return {ax.get_title(): [(list(ln.get_xdata()), list(ln.get_ydata())) for ln in ax.lines] for ax in fig.axes}


def test_the_explorer_never_folds_different_n_into_one_point():
    """Two sources on different grids, x = variant: no point is a median over N values that differ
    between the series or between the points of one series; the figure says what it did."""
    d = _grids()
    fig = figure.draw(d, figure.Selection(metric="time_ms", x="variant", overlays=["rec"]))
    panels = _lines(fig)
    assert set(panels) == {"n = 5000", "n = 8192", "n = 16384"}, panels  # faceted by the differing axis
    assert "panels by n" in fig._suptitle.get_text()
    for title, lines in panels.items():
        n = int(title.split("= ")[1])
        for _, ys in lines:  # each panel's values are its own N's, never a median over two N
            assert set(ys) <= set(d.frame[d.frame["n"].eq(n)]["time_ms"]), (title, ys)
    # at 16384 only BF 64 and BF 128 ran (x positions 3 and 4 of BF 8..128), each at its own time
    ((xs, ys),) = panels["n = 16384"]
    assert xs == [3, 4] and ys == [320.0, 384.0]


def test_one_source_folds_only_the_n_every_point_has():
    """The recording alone: BF 8-32 have N = 8192 only, so every point is drawn at 8192, said in
    the title; a median of 8192 and 16384 for some points would make BF 64 look slower than BF 32."""
    d = _grids()
    rec = data.TableData(d.chapter, d.table, d.frame[d.frame["source"].eq("rec")], d.axes, d.metrics, d.sources[1:])
    fig = figure.draw(rec, figure.Selection(metric="time_ms", x="variant"))
    (lines,) = _lines(fig).values()
    ((_, ys),) = lines
    assert ys == [4 * t for t in (40.0, 30.0, 20.0, 10.0, 12.0)]
    assert "n = 8192" in fig._suptitle.get_text() and "median over" not in fig._suptitle.get_text()


def test_a_median_over_the_same_values_everywhere_is_named_with_them():
    d = _grids()
    same = d.frame[d.frame["variant"].isin(["BF 64", "BF 128"]) & d.frame["source"].eq("rec")]
    rec = data.TableData(d.chapter, d.table, same, d.axes, d.metrics, d.sources[1:])
    title = figure.draw(rec, figure.Selection(metric="time_ms", x="variant"))._suptitle.get_text()
    assert "median over n = 8192, 16384, the same at every point" in title


def test_your_measurement_is_marked_over_the_curve(block_sweep):
    _, d = block_sweep
    mine = pd.DataFrame([{"n": 3000, "variant": "24x24", "time_ms": 123.0, "status": "ok"}])
    fig = figure.draw(d, figure.default_selection(d), points=mine)
    assert "your measurement" in figure.legend_texts(fig)


def test_the_legend_stays_under_the_title_and_axes_state_their_units(tmp_path):
    lab = replay("00_gpu_capabilities", "gtx680", tmp_path)
    d = data.load(lab, "copy_bandwidth")
    sel = figure.Selection(metric="time_ms", x="transfer_bytes", colour="direction", overlays=d.overlays, logy=True)
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = figure.draw(d, sel)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    title = fig._suptitle.get_window_extent(renderer)
    legend = next(ax.get_legend() for ax in fig.axes if ax.get_legend() is not None).get_window_extent(renderer)
    assert legend.y1 <= title.y0 + 1 or legend.x0 >= title.x1, "the legend overlaps the title"
    assert fig.axes[0].get_xlabel() == "transfer bytes (bytes)"
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels() if t.get_text()]
    assert labels and not any("times" in t or "^" in t for t in labels), labels


def test_every_explorer_table_draws(tmp_path):
    for chapter_id, table in MAIN_TABLES.items():
        lab = replay(chapter_id, "gtx680", tmp_path / chapter_id)
        assert table in data.explorable_tables(lab), chapter_id
        d = data.load(lab, table)
        sel = figure.default_selection(d)
        sel.overlays = d.overlays
        assert figure.png(figure.draw(d, sel)).startswith(b"\x89PNG"), chapter_id


@pytest.mark.parametrize("chapter_id", list(MAIN_TABLES))
def test_each_chapter_opens_on_its_declared_view(chapter_id, tmp_path):
    """The first view is the chapter's own (``explore`` in its declarations): its table, x, y,
    colour, facet and filters, applied to the h100 recording beside every other; every point of
    it folds the same values (the title names them, or none are folded)."""
    from cudalab.chapter import declarations

    view = declarations.of(chapter_id).explore
    assert view is not None and view.table == MAIN_TABLES[chapter_id]
    lab = replay(chapter_id, "h100", tmp_path)
    d = data.load(lab, view.table)
    sel = figure.default_selection(d, view)
    assert (sel.metric, sel.x, sel.colour, sel.facet) == (view.y, view.x, view.colour, view.facet), chapter_id
    for column, wanted in view.filters.items():
        assert {float(v) for v in sel.filters[column]} == {float(w) for w in wanted}, (chapter_id, column)
    sel.overlays = [s.label for s in d.sources if s.kind == data.RECORDED]
    fig = figure.draw(d, sel)
    assert any(ax.lines for ax in fig.axes), chapter_id
    title = fig._suptitle.get_text()
    assert "median over" not in title or "the same at every point" in title, title


def test_block_factor_is_an_axis_of_chapter_04(tmp_path):
    lab = replay("04_blocking_factor", "h100", tmp_path)
    d = data.load(lab, "blocking_factor_sweep")
    assert {"block_factor", "kernel", "dpx"} <= set(d.choosable()) and d.is_numeric("block_factor")
    assert "status" not in d.choosable() and "time_ms" not in d.choosable()


# ---- the widgets


@pytest.fixture
def explorer(block_sweep, monkeypatch):
    pytest.importorskip("ipywidgets")
    from cudalab.explore import widgets

    monkeypatch.delenv(catalog.BATCH_ENV, raising=False)
    lab, _ = block_sweep
    return widgets.explore(lab, "block_sweep")


def test_the_widgets_carry_the_css_classes_of_the_contract(explorer):
    assert "cudalab-explorer" in explorer.box._dom_classes
    for name in ("table", "metric", "baseline", "x", "colour", "facet", "logx", "logy", "overlay"):
        assert f"cudalab-explore-{name}" in getattr(explorer, name)._dom_classes, name
    assert "cudalab-explore-figure" in explorer.figure_box._dom_classes
    assert "cudalab-explore-rows" in explorer.rows._dom_classes
    for axis, control in explorer.filters.items():
        assert {"cudalab-explore-filter", f"cudalab-explore-filter-{axis}"} <= set(control._dom_classes)
    assert dict(explorer.metric.options)["time (ms)"] == "time_ms", "the metric is offered with its unit"


def test_the_figure_changes_when_a_control_changes(explorer):
    timings = []
    for change in (
        lambda: setattr(explorer.metric, "value", "launches"),
        lambda: setattr(explorer.filters["variant"], "value", ("8x8", "16x16")),
        lambda: setattr(explorer.overlay, "value", (f"{H100} · h100 (recorded)",)),
        lambda: setattr(explorer.logy, "value", not explorer.logy.value),
        lambda: setattr(explorer.colour, "value", figure.SOURCE),
        lambda: setattr(explorer.facet, "value", "variant"),
    ):
        before = explorer.image.value
        start = time.perf_counter()
        change()
        timings.append(time.perf_counter() - start)
        assert bytes(explorer.image.value) != bytes(before) and bytes(explorer.image.value)[:4] == b"\x89PNG"
    assert "16x16" in explorer.rows.value and "8x8" in explorer.rows.value and "32x32" not in explorer.rows.value
    # a performance goal (under 1 s per redraw) is reported, not asserted in a timed unit test
    print(f"explorer redraw: median {sorted(timings)[len(timings) // 2]:.3f} s, slowest {max(timings):.3f} s")


def test_a_speedup_metric_offers_its_baselines_beside_it(explorer):
    assert explorer.baseline.layout.display == "none", "no baseline beside a time"
    explorer.metric.value = "speedup_over_4x4"
    assert explorer.baseline.layout.display != "none"
    assert [label for label, _ in explorer.baseline.options] == ["4x4", "8x8", "16x16", "32x32"]
    assert explorer.selection().metric == "speedup_over_4x4"
    before = bytes(explorer.image.value)
    explorer.baseline.value = "speedup_over_16x16"
    assert explorer.selection().metric == "speedup_over_16x16" and bytes(explorer.image.value) != before
    explorer.metric.value = "time_ms"
    assert explorer.selection().metric == "time_ms" and explorer.baseline.layout.display == "none"


def test_a_new_table_brings_its_own_metrics_and_filters(explorer):
    explorer.table.value = "cpu_reference"
    assert list(explorer.filters) == ["n"] and dict(explorer.metric.options).get("cpu time (ms)") == "cpu_time_ms"


def test_a_batch_build_shows_nothing(block_sweep, monkeypatch):
    from cudalab.explore import widgets

    monkeypatch.setenv(catalog.BATCH_ENV, "1")
    assert widgets.explore(block_sweep[0], "block_sweep") is None


def test_without_a_gpu_the_measure_control_is_disabled_and_says_why(block_sweep, monkeypatch):
    pytest.importorskip("ipywidgets")
    from cudalab.explore import widgets

    monkeypatch.delenv(catalog.BATCH_ENV, raising=False)
    point = SimpleNamespace(
        chapter="01_block_size",
        table="block_sweep",
        axes={"n": int, "block_edge": int},
        defaults={"n": 3000, "block_edge": 24},
        kernel_file="fw_basic_2d.cu",
        kernel_choices={},
    )
    ex = widgets.explore(block_sweep[0], "block_sweep", point=point)
    assert "cudalab-explore-measure" in ex.measure_button._dom_classes
    assert ex.measure_button.disabled and ex.measure_button.tooltip
    assert ex.measure_button.tooltip in ex.measure_status.value
    assert ex.point_values() == {"n": 3000, "block_edge": 24}
    module = widgets._measure_module()
    assert ex.measure_button.tooltip == (widgets.NOT_AVAILABLE if module is None else module.why_no_gpu())


def test_importing_the_explorer_needs_no_ipywidgets():
    code = (
        "import sys; sys.modules['ipywidgets'] = None\n"
        "import cudalab.explore.data, cudalab.explore.figure, cudalab.explore.widgets\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]


# ---- the notebooks and the static report


@pytest.mark.parametrize("chapter_id", MAIN_TABLES)
def test_each_chapter_ends_its_results_with_an_explore_cell(chapter_id):
    cells = json.loads(catalog.chapter(chapter_id).path.read_text())["cells"]
    tagged = [i for i, c in enumerate(cells) if catalog.interactive_only(c)]
    questions = next(i for i, c in enumerate(cells) if "questions" in c.get("metadata", {}).get("tags", []))
    assert len(tagged) == 2 and tagged[-1] + 1 == questions, "an Explore markdown and code cell before the questions"
    code = "".join(cells[tagged[-1]]["source"])
    call = re.search(rf'explore\(lab, "{MAIN_TABLES[chapter_id]}", point=(\w+)\)', code)
    assert call, code
    # the recipe is the chapter's own, imported from its kernel family's module
    imports = "\n".join(line for line in code.splitlines() if line.startswith("from cudalab.labs"))
    namespace: dict = {}
    exec(imports, namespace)
    recipe = namespace[call.group(1)]
    assert recipe.chapter == chapter_id and recipe.measure.__module__.startswith("cudalab.labs.")


def test_the_stitched_report_and_the_handout_leave_explore_cells_out(tmp_path):
    import nbformat

    from cudalab.report import handout, stitch

    nb = nbformat.v4.new_notebook()
    widget = nbformat.v4.new_code_cell("explore(lab)", metadata={"tags": ["explore"]})
    widget.outputs = [
        nbformat.v4.new_output(
            "display_data",
            data={"text/plain": "VBox(...)", "application/vnd.jupyter.widget-view+json": {"model_id": "x"}},
        )
    ]
    nb.cells = [nbformat.v4.new_markdown_cell("kept"), widget]
    path = tmp_path / "01.ipynb"
    nbformat.write(nb, path)
    outcome = stitch.ChapterOutcome("01_block_size", "01", path, True)
    book = stitch.stitch([outcome], nbformat.v4.new_markdown_cell("cover"))
    assert not [c for c in book.cells if catalog.interactive_only(c)]
    assert handout._listings(json.loads(path.read_text())) == []
