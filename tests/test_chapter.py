"""The chapter handle: parameters read once from the notebook, headlines recorded as data."""

import json

import pytest
from conftest import notebook_defaults

from cudalab import open_chapter
from cudalab.chapter import catalog
from cudalab.chapter.handle import STANDARD_PARAMETERS
from cudalab.core.errors import CudalabError
from cudalab.core.gpu import gpu_available

pytestmark = pytest.mark.skipif(gpu_available(), reason="opens chapters in replay mode")


def test_open_chapter_takes_every_declared_parameter_from_the_namespace(tmp_path):
    ns = {**notebook_defaults("01_block_size"), "data_dir": str(tmp_path), "sizes": [7, 9], "extra_global": 1}
    lab = open_chapter("01_block_size", ns)
    declared = set(catalog.chapter("01_block_size").parameter_types())
    assert set(lab.params) == declared - set(STANDARD_PARAMETERS)
    assert lab.params["sizes"] == [7, 9] and "extra_global" not in lab.params
    assert lab.mode == "replay" and lab.recorded_dir.parts[-1] == "gtx680"


def test_open_chapter_reads_the_resolved_profile_a_build_hands_it(tmp_path, monkeypatch):
    from cudalab.chapter import profiles

    resolved = profiles.write_resolved(profiles.load_profile("h100"), tmp_path / profiles.RESOLVED, source="h100")

    def no_yaml(*args, **kwargs):
        raise AssertionError("the resolved profile is read as the build validated it, never loaded again")

    monkeypatch.setattr(profiles, "load_profile", no_yaml)
    ns = {**notebook_defaults("01_block_size"), "profile": str(resolved), "data_dir": str(tmp_path / "data")}
    lab = open_chapter("01_block_size", ns)
    assert lab.profile.name == "h100" and lab.recorded_dir.parts[-1] == "h100"
    assert json.loads((tmp_path / "data" / "01_block_size" / "provenance.json").read_text())["profile"] == "h100"
    assert "profile" not in lab.params, "the recorded parameters are the chapter's own, never the file's path"


def test_a_missing_parameter_is_a_clear_error(tmp_path):
    ns = notebook_defaults("01_block_size")
    del ns["block_sizes"]
    with pytest.raises(CudalabError, match="block_sizes"):
        open_chapter("01_block_size", {**ns, "data_dir": str(tmp_path)})


def test_headlines_are_recorded_with_unit_table_and_rows(tmp_path):
    lab = open_chapter("00_gpu_capabilities", {**notebook_defaults("00_gpu_capabilities"), "data_dir": str(tmp_path)})
    assert lab.summary == [], "each run starts its summary afresh"
    import numpy as np

    lab.headline("x", np.float64(2.5), "GB/s", "x is 2.5 GB/s", table="t", rows={"n": np.int64(4)})
    lab.headline("x", 3.0, "GB/s", "x is 3 GB/s")
    lab.headline("nan", float("nan"), "", "no value")
    saved = json.loads((tmp_path / "00_gpu_capabilities" / "summary.json").read_text())
    assert [e["key"] for e in saved] == ["x", "nan"], "a key is recorded once, its last value kept"
    assert saved[0] == {"key": "x", "value": 3.0, "unit": "GB/s", "text": "x is 3 GB/s", "table": "", "rows": {}}
    assert saved[1]["value"] is None, "NaN is recorded as null, not as an invalid JSON NaN"


def test_plots_order_numbers_inside_labels_by_value():
    from cudalab.core import plots

    assert plots.natural_order(["kslices 16", "kslices 4", "kslices 32", "row 128", "kslices 4"]) == [
        "kslices 4",
        "kslices 16",
        "kslices 32",
        "row 128",
    ]


def test_a_duration_keeps_three_digits_so_that_neighbours_read_alike():
    from cudalab.core import plots

    assert [plots.duration(ms) for ms in (0.85, 35.96, 36.08, 150.0, 999.7, 4560.0, 192e3)] == [
        "850 us",
        "36.0 ms",
        "36.1 ms",
        "150 ms",
        "1000 ms",
        "4.56 s",
        "3.20 min",
    ]


def test_plots_colour_a_source_by_whether_it_was_published_not_by_its_position():
    from cudalab.core import plots

    h100, gtx = "NVIDIA H100 (recorded, N=5000)", "GeForce GTX 680 (published, lab 000)"
    assert plots.palette([h100, gtx], sources=True) == plots.palette([gtx, h100], sources=True)
    assert plots.palette([h100, gtx], sources=True)[h100] != plots.palette([h100, gtx], sources=True)[gtx]
    # a kernel family keeps its colour whatever else is in the figure
    assert plots.palette(["basic 16x16", "tile 32"])["tile 32"] == plots.palette(["tile 8", "row 64"])["tile 8"]
    # a panel without the baseline colours the other kernels as the panel with it does
    kernels = [f"ours, step {i}" for i in range(1, 11)]  # enough to reach the baseline's place in the colours
    with_cublas, without = plots.palette(["cuBLAS SGEMM", *kernels]), plots.palette(kernels)
    assert all(with_cublas[k] == without[k] for k in without)


def test_a_missing_lab_number_reads_not_published_and_never_nan():
    import numpy as np
    import pandas as pd

    from cudalab.core import plots

    frame = pd.DataFrame({"step": ["a", "b"], "time_s": [1.0, np.nan], "lab_time_s": [2.0, np.nan]})
    html = plots.styled(frame, {"time_s": "{:.1f}", "lab_time_s": "{:.1f}"}).to_html()
    assert "not published" in html and "–" in html and "nan" not in html.lower()
    assert [plots.size(b) for b in (512, 49152, 256 * 2**20, 3 * 2**30)] == ["512 B", "48 KiB", "256 MiB", "3 GiB"]


def test_a_roofline_places_each_kernel_under_the_lower_roof_at_its_intensity():
    import pandas as pd

    from cudalab.core import plots

    points = pd.DataFrame(
        {
            "label": ["streaming", "tiled", "wrong"],
            "intensity": [0.125, 8.0, 8.0],
            "ops_per_s": [0.3e12, 10e12, 99e12],
            "status": ["ok", "ok", "wrong"],
        }
    )
    table = plots.roofline_table(points, memory={"DRAM": 3e12}, compute={"add+min": 16e12}).set_index("kernel")
    assert list(table.index) == ["streaming", "tiled"], "a wrong result is never placed"
    assert table.loc["streaming", "roof_ops_per_s"] == 0.125 * 3e12 and table.loc["streaming", "bound_by"] == "DRAM"
    assert table.loc["tiled", "roof_ops_per_s"] == 16e12 and table.loc["tiled", "bound_by"] == "add+min"
    assert abs(table.loc["tiled", "fraction_of_roof"] - 10 / 16) < 1e-12


def test_a_roofline_names_each_kernel_once_in_its_legend_however_many_sizes_it_places():
    import matplotlib

    matplotlib.use("Agg")
    import pandas as pd

    from cudalab.core import plots

    points = pd.DataFrame(
        {
            "label": ["tiled", "tiled", "tiled", "fused", "fused"],
            "intensity": [4.0, 16.0, 64.0, 4.0, 16.0],
            "ops_per_s": [1e12, 3e12, 9e12, 0.5e12, 2e12],
        }
    )
    ax = plots.roofline(points, memory={"DRAM": 3e12}, compute={"FP32": 60e12}, ops="FLOP")
    names = [t.get_text() for t in ax.get_legend().get_texts()]
    kernels = [n for n in names if not n.startswith(("DRAM", "FP32"))]
    assert sorted(kernels) == ["fused", "tiled"], names
    assert sum(len(c.get_offsets()) for c in ax.collections) == 5, "every size is still placed"


def test_a_table_lets_long_identifiers_break_and_a_wide_one_print_small():
    import pandas as pd

    from cudalab.core import plots

    frame = pd.DataFrame(
        {"kernel": ["update_clusters_sum_shared", "kmeans_dot"], "stage": ["assign+delta+update (one pass)", "update"]}
    )
    frame["threads"] = [128, 1024]
    frame["gpu"] = ["sm_90", "sm_75"]
    html = plots.styled(frame).to_html()
    assert "update_<wbr>clusters_<wbr>sum_<wbr>shared" in html and "assign+<wbr>delta+<wbr>update" in html
    assert ">sm_90<" in html and ">1024<" in html, "a column of short words, and numbers, stay as they are"
    assert "cudalab-wide" not in html
    assert 'class="cudalab-wide"' in plots.styled(frame, small_print=True).to_html()
    words = plots.styled(frame, whole_header_words=True, small_print=True).to_html()
    assert 'class="cudalab-words cudalab-wide"' in words


def test_the_blocked_bytes_model_counts_the_own_tile_once_per_round():
    from types import SimpleNamespace

    from cudalab.labs.fw import per_k
    from cudalab.labs.fw.blocked import models

    assert models.bytes_per_relaxation(SimpleNamespace(kernel_family="per-k", block_factor=float("nan"))) == 8.0
    assert models.bytes_per_relaxation(SimpleNamespace(kernel_family="blocked", block_factor=64.0)) == 8.0 / 64
    assert per_k.BYTES_PER_RELAXATION == 8.0


def _recorded_ceilings(tmp_path, mode: str = "replay", **tables: str):
    """A chapter handle's stand-in (mode, recorded_dir, data_dir) over a recording whose chapter 00
    holds ``tables`` (file stem -> CSV text)."""
    from types import SimpleNamespace

    from cudalab.chapter import declarations

    (offering,) = declarations.offering_ceilings()  # chapter 00 declares the ceilings it measures
    folder = tmp_path / "rec" / offering
    folder.mkdir(parents=True, exist_ok=True)
    for stem, text in tables.items():
        (folder / f"{stem}.csv").write_text(text)
    return SimpleNamespace(
        id="04_blocking_factor", mode=mode, recorded_dir=tmp_path / "rec", data_dir=tmp_path / "none"
    )


def test_chapters_read_the_ceilings_chapter_00_measured_in_the_same_run(tmp_path):
    from cudalab.chapter.handle import Chapter

    replay = _recorded_ceilings(
        tmp_path,
        ceilings="ceiling,value,unit\ndram_copy_bandwidth,2904.0,GB/s\n",
        add_min_ceiling="instruction,relaxations_per_s,status\na,1.5e13,ok\nb,1.6e13,ok\nc,9e13,wrong\n",
    )
    assert Chapter.ceilings(replay) == {"dram_Bps": 2904.0e9, "add_min_per_s": 1.6e13}
    measure = _recorded_ceilings(tmp_path, mode="measure")
    assert Chapter.ceilings(measure) == {}, "a measured chapter never borrows a recording's ceilings"


def test_the_read_ceiling_carries_its_launch_at_the_faster_quartile(tmp_path):
    from cudalab.chapter.handle import Chapter

    replay = _recorded_ceilings(
        tmp_path,
        ceilings="ceiling,value,unit\ndram_read_bandwidth,3000.0,GB/s\n",
        read_stream="bytes_read,time_ms,time_ms_q1,bandwidth_GBps,status\n"
        "3000000000,1.0,0.96,3000.0,ok\n"  # the launch the ceiling quotes
        "3000000000,1.1,0.50,2727.3,ok\n"  # slower, with a wild quartile: not the ceiling's
        "3000000000,0.5,0.40,6000.0,wrong\n",  # wrong results never count
    )
    found = Chapter.ceilings(replay)
    assert found["dram_read_Bps"] == 3000.0e9
    assert abs(found["dram_read_fast_Bps"] - 3000e9 / 0.96) < 1.0


def test_an_optional_table_an_old_recording_lacks_replays_as_none(tmp_path):
    from cudalab.core.errors import NoRecordedResults

    ns = {**notebook_defaults("05_matmul_footprint"), "data_dir": str(tmp_path)}
    lab = open_chapter("05_matmul_footprint", ns)
    assert lab.mode == "replay"
    assert lab.table("no_such_table", lambda: None, axes=("n",), optional=True) is None
    with pytest.raises(NoRecordedResults, match="was not recorded"):
        lab.table("no_such_table", lambda: None, axes=("n",))
    recorded, missing = lab.tables(
        {"size_sweep": ("n", "kernel"), "no_such_table": ("n",)}, lambda: (), optional=("no_such_table",)
    )
    assert missing is None and len(recorded) > 0


def test_line_figures_take_the_report_colours_for_labels_of_any_string_dtype():
    """pandas 3 reads labels as the str dtype, not object: they still get the fixed palette."""
    import matplotlib
    import pandas as pd
    from matplotlib.colors import to_rgb

    from cudalab.core import plots

    matplotlib.use("Agg")
    kernels = ["cuBLAS SGEMM", "ours, final", "ours, tuned"]
    for dtype in ("object", "str"):
        frame = pd.DataFrame(
            {"n": [1, 2] * 3, "y": range(6), "kernel": pd.Series([k for k in kernels for _ in (1, 2)], dtype=dtype)}
        )
        ax = plots.lines(frame, "n", "y", "kernel", xlabel="n", ylabel="y", title=dtype)
        drawn = {label: to_rgb(h.get_color()) for h, label in zip(*ax.get_legend_handles_labels())}
        assert drawn == {k: to_rgb(c) for k, c in plots.palette(kernels).items()}, dtype


# ---- a chapter declares itself beside its notebook; nothing central lists chapters


def test_each_chapters_declared_figures_name_columns_of_its_recorded_tables():
    import pandas as pd

    from cudalab.chapter import catalog, declarations
    from cudalab.core.paths import RESULTS_DIR

    for chapter in catalog.discover():
        figures = declarations.of(chapter).figures
        assert figures, f"{chapter.id} declares no figure for --compare"
        for figure in figures:
            recorded = sorted(RESULTS_DIR.glob(f"*/*/{chapter.id}/{figure.table}.csv"))
            assert recorded, f"{chapter.id}: no recording holds {figure.table}"
            columns = set(pd.read_csv(recorded[0], nrows=1).columns)
            wanted = {figure.x, figure.y, *([figure.series] if figure.series else []), *figure.best_over}
            assert wanted <= columns, f"{chapter.id}: {sorted(wanted - columns)} are not columns of {figure.table}"


def test_a_declarations_file_that_is_wrong_names_itself_and_the_key(tmp_path):
    import shutil

    from cudalab.chapter import declarations
    from cudalab.core.errors import CudalabError

    nb = tmp_path / "07_toy.ipynb"
    shutil.copy(catalog_path("01_block_size"), nb)
    (tmp_path / "07_toy.yaml").write_text(
        "figures:\n  - {table: t, x: n, y: time_ms, ylabel: ms, title: T, colour: red}\n"
    )
    with pytest.raises(CudalabError, match=r"07_toy.yaml: figures.0.colour: Extra inputs"):
        declarations.of("07_toy", tmp_path)
    (tmp_path / "07_toy.yaml").write_text("ceilings: [\n")
    with pytest.raises(CudalabError, match="07_toy.yaml: not valid YAML"):
        declarations.of("07_toy", tmp_path)
    (tmp_path / "07_toy.yaml").unlink()
    assert declarations.of("07_toy", tmp_path) == declarations.Declarations(), "no file: nothing declared"


def catalog_path(chapter_id: str):
    from cudalab.chapter import catalog

    return catalog.chapter(chapter_id).path


def test_no_chapter_is_named_in_the_report_the_explorer_the_grader_or_the_point_machinery():
    """Adding a chapter is adding files: the report, --compare, the explorer, the grader and
    labs/points.py find what a chapter declares; none of them names a chapter, nor a column only a
    chapter declares (its published best: --compare's ``speedup_over_vecmax00`` was one)."""
    import collections
    import re

    from cudalab.chapter import catalog, declarations
    from cudalab.core.paths import PACKAGE_DIR

    named = re.compile(r"""["'](0\d(?:_[a-z0-9_]+)?)["']""")
    places = [f for p in ("report", "explore", "grading") for f in (PACKAGE_DIR / p).rglob("*.py")]
    places.append(PACKAGE_DIR / "labs" / "points.py")
    found = [f"{p.relative_to(PACKAGE_DIR)}: {m}" for p in places for m in named.findall(p.read_text())]
    assert not found, found
    declaring = collections.Counter(c for info in catalog.discover() for c in declarations.of(info.id).published_best)
    columns = {c for c, chapters in declaring.items() if chapters == 1}  # one chapter's own column
    assert "speedup_over_vecmax00" in columns, "chapter 02 declares its published best"
    said = [f"{p.relative_to(PACKAGE_DIR)}: {c}" for p in places for c in columns if f'"{c}"' in p.read_text()]
    assert not said, said


def test_only_what_someone_set_is_a_request():
    """A replay tells of the requested parameters it cannot show: those injected (a build,
    papermill -p) or edited away from the notebook's default, never a default nobody set."""
    from cudalab.chapter.handle import _requested
    from cudalab.chapter.parameters import Declared

    declared = {"sizes": Declared("sizes", "list[int]", "[256, 512]"), "seed": Declared("seed", "int", "2016")}
    assert _requested({"sizes": [256, 512], "seed": 2016}, declared, set()) == {}
    assert _requested({"sizes": [64], "seed": 2016}, declared, set()) == {"sizes": [64]}
    assert _requested({"sizes": [256, 512], "seed": 2016}, declared, {"seed"}) == {"seed": 2016}


def test_a_shared_legend_names_each_line_once_under_the_last_axes_and_none_over_the_curves():
    import matplotlib
    import pandas as pd

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from cudalab.core import plots

    frame = pd.DataFrame(
        {
            "n": [1, 2, 1, 2, 1, 2],
            "y": [1, 2, 2, 3, 3, 4],
            "kernel": ["a", "a", "b", "b", "cuBLAS SGEMM", "cuBLAS SGEMM"],
        }
    )
    fig, (top, bottom) = plt.subplots(2, 1)
    plots.lines(frame, "n", "y", "kernel", ax=top, xlabel="", ylabel="y", title="all")
    top.axhline(5, label="peak")
    plots.lines(
        frame[frame["kernel"].ne("cuBLAS SGEMM")], "n", "y", "kernel", ax=bottom, xlabel="n", ylabel="y", title="ours"
    )
    plots.shared_legend((top, bottom), below=bottom)
    assert top.get_legend() is None
    labels = [t.get_text() for t in bottom.get_legend().get_texts()]
    assert sorted(labels) == ["a", "b", "cuBLAS SGEMM", "peak"]  # each once, though both axes drew a and b
    plt.close(fig)
