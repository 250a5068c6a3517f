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
