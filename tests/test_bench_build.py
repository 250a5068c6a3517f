"""tools/bench_build.py's reading of a kept build: where the time went, cell by cell (on CPU)."""

from __future__ import annotations

import importlib.util

import nbformat

from cudalab.core.paths import ROOT


def _bench():
    spec = importlib.util.spec_from_file_location("bench_build", ROOT / "tools" / "bench_build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _executed(path, durations):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(f"\n# cell {i}\nx = {i}") for i in range(len(durations))]
    for cell, seconds in zip(nb.cells, durations):
        cell.metadata["papermill"] = {"duration": seconds}
    nb.cells.append(nbformat.v4.new_markdown_cell("no duration"))
    nbformat.write(nb, path)


def test_slowest_cells_ranks_every_notebooks_cells_by_duration(tmp_path):
    (tmp_path / "notebooks").mkdir()
    _executed(tmp_path / "notebooks" / "04_blocking_factor.ipynb", [1.5, 20.9, None])
    _executed(tmp_path / "notebooks" / "06_kmeans_device_update.ipynb", [24.4, 0.2])
    got = _bench().slowest_cells(tmp_path, count=3)
    assert got == [
        (24.4, "06_kmeans_device_update", 0, "# cell 0"),
        (20.9, "04_blocking_factor", 1, "# cell 1"),
        (1.5, "04_blocking_factor", 0, "# cell 0"),
    ]


def test_chapter_seconds_reads_each_chapters_time_from_the_builds_summary(tmp_path):
    import json

    summary = {
        "chapters": {
            "00_gpu_capabilities": {"seconds": 26.04, "reused": False},
            "04_blocking_factor": {"seconds": 75.0, "reused": True},  # kept from an earlier build: not this one's time
            "06_kmeans_device_update": {"seconds": 59.12},
        }
    }
    (tmp_path / "build.json").write_text(json.dumps(summary))
    assert _bench().chapter_seconds(tmp_path) == {"00_gpu_capabilities": 26.0, "06_kmeans_device_update": 59.1}
    (tmp_path / "build.json").write_text("{not json")
    assert _bench().chapter_seconds(tmp_path) == {}
    assert _bench().chapter_seconds(tmp_path / "missing") == {}


def test_benchmarks_say_where_a_recorded_builds_time_went(tmp_path):
    import json

    from cudalab.report.benchmarks import build_times

    record = {
        "profile": "h100",
        "machine": {"gpu_name": "NVIDIA H100 80GB HBM3", "cpu_count": 16},
        "date_utc": "2026-11-26T14:54:43Z",
        "git_commit": "3c87110cdc7f",
        "builds": {
            "cold": {
                "seconds": 282.1,
                "goal_s": 300.0,
                "meets_goal": True,
                "chapter_seconds": {"00_gpu_capabilities": 25.0, "04_blocking_factor": 77.0},
            },
            "cached": {"seconds": 8.4, "goal_s": 30.0, "meets_goal": True, "chapter_seconds": {}},
        },
    }
    (tmp_path / "build_times").mkdir()
    (tmp_path / "build_times" / "gpu-h100.json").write_text(json.dumps(record))
    text = "\n".join(build_times(tmp_path))
    assert "| `h100` | NVIDIA H100 80GB HBM3, 16 CPU cores | 2026-11-26T14:54:43Z | `3c87110cdc` | cold | 282 |" in text
    assert "chapters 00 25 s, 04 77 s; the rest (start-up, the report) 180 s." in text
    assert text.count("build on") == 1  # the cached build ran no chapter: no line for it
    del record["builds"]["cold"]["chapter_seconds"]  # a recording from before bench_build kept them
    (tmp_path / "build_times" / "gpu-h100.json").write_text(json.dumps(record))
    assert "Where the time went" not in "\n".join(build_times(tmp_path))
