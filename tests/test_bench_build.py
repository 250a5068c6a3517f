"""tools/bench_build.py's reading of a kept build: where the time went, cell by cell (on CPU)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

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


def _record(gpus: int, cpus: int, date: str, commit: str, builds: dict) -> dict:
    """A build-times record as bench_build writes it, for the BENCHMARKS renderer."""
    machine = {"gpu_name": "NVIDIA H100 80GB HBM3", "gpu_count": gpus, "cpu_count": cpus}
    return {"profile": "h100", "machine": machine, "date_utc": date, "git_commit": commit, "builds": builds}


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
    assert (
        "cold build on NVIDIA H100 80GB HBM3, 16 CPU cores: chapters 00 25 s, 04 77 s; the rest (start-up, the report) 180 s."
        in text
    )
    assert text.count("build on") == 1  # the cached build ran no chapter: no line for it
    del record["builds"]["cold"]["chapter_seconds"]  # a recording from before bench_build kept them
    (tmp_path / "build_times" / "gpu-h100.json").write_text(json.dumps(record))
    assert "Where the time went" not in "\n".join(build_times(tmp_path))
    record["git_dirty"] = True  # the tree that ran was not the commit's: the row says so
    (tmp_path / "build_times" / "gpu-h100.json").write_text(json.dumps(record))
    assert "| `3c87110cdc` (uncommitted changes) | cold | 282 |" in "\n".join(build_times(tmp_path))


def test_several_gpus_are_set_beside_the_serial_build_against_issue_45s_goals(tmp_path):
    """``--workers 4,2``: the goal of each GPU count from the serial build of the same run (4: 1.15x
    chapter 00 plus the slowest chapter; 2: 0.60x the serial build), and the cells that grew most."""
    import json

    from cudalab.report.benchmarks import build_times

    bench = _bench()
    serial = {"00_gpu_capabilities": 24.0, "04_blocking_factor": 76.0, "05_matmul_footprint": 49.0}
    assert bench.workers_goal_s(serial, 287.3, 4) == 1.15 * (24.0 + 76.0)
    assert round(bench.workers_goal_s(serial, 287.3, 2), 2) == round(0.60 * 287.3, 2)
    for name in ("measured", "spread"):
        (tmp_path / name / "notebooks").mkdir(parents=True)
    _executed(tmp_path / "measured" / "notebooks" / "05_matmul_footprint.ipynb", [4.7, 14.0])
    _executed(tmp_path / "spread" / "notebooks" / "05_matmul_footprint.ipynb", [9.7, 14.8])
    grown = bench.cells_grown(tmp_path / "measured", tmp_path / "spread")
    assert [(c["cell"], c["serial_s"], c["workers_s"]) for c in grown] == [(0, 4.7, 9.7), (1, 14.0, 14.8)]
    record = _record(
        4,
        64,
        "2026-11-27T06:00:40Z",
        "3c87110cdc7f",
        {
            "cold": {"seconds": 287.3, "goal_s": 300.0, "meets_goal": True, "chapter_seconds": serial},
            "workers-4": {
                "seconds": 104.0,
                "goal_s": 115.0,
                "meets_goal": True,
                "gpus": 4,
                "serial_seconds": 287.3,
                "per_chapter_goal": 1.1,
                "chapter_seconds": {"00_gpu_capabilities": 26.0, "04_blocking_factor": 87.0},
                "chapter_ratio": {"00_gpu_capabilities": 1.08, "04_blocking_factor": 1.14},
            },
        },
    )
    (tmp_path / "build_times").mkdir()
    (tmp_path / "build_times" / "gpu-x4-h100.json").write_text(json.dumps(record))
    text = "\n".join(build_times(tmp_path))
    assert (
        "| `h100` | NVIDIA H100 80GB HBM3, 64 CPU cores | 2026-11-27T06:00:40Z | `3c87110cdc` | 4 | 287 | 104 | 115 | yes |"
        in text
    )
    assert "1.14x (goal 1.10x) | 00 24 → 26 s (1.08x), 04 76 → 87 s (1.14x) |" in text
    assert text.count("build on") == 1, "the several-GPU build is in its own table, not summed"


def test_each_gpu_count_builds_cold_and_a_build_that_kept_chapters_meets_no_goal(tmp_path, monkeypatch):
    """``--workers 4,2``: each N writes a folder and caches of its own, so the second is cold too;
    one whose summary lacks a chapter the serial build ran (kept, or never run) is no cold build."""
    import json

    bench = _bench()
    seen = []

    def build(args, env):
        out = Path(args[args.index("--out") + 1])
        seen.append((out.name, env["CUPY_CACHE_DIR"], env["CUDALAB_CACHE_DIR"]))
        out.mkdir(parents=True, exist_ok=True)
        chapters = {"00_gpu_capabilities": {"seconds": 24.0}, "04_blocking_factor": {"seconds": 70.0}}
        if len(seen) == 2:
            chapters["04_blocking_factor"]["reused"] = True
        (out / "build.json").write_text(json.dumps({"chapters": chapters}))
        return 90.0, 0, ""

    monkeypatch.setattr(bench, "_build", build)
    serial = {"seconds": 287.0, "chapter_seconds": {"00_gpu_capabilities": 24.0, "04_blocking_factor": 76.0}}
    four = bench._workers_build("h100", "html", tmp_path, {}, 4, serial)
    two = bench._workers_build("h100", "html", tmp_path, {}, 2, serial)
    assert len({s[0] for s in seen}) == len({s[1] for s in seen}) == len({s[2] for s in seen}) == 2
    assert four["not_measured"] == [] and two["not_measured"] == ["04_blocking_factor"]


def test_chapter_cpus_reads_the_cores_each_chapter_could_use_from_its_provenance(tmp_path):
    import json

    for chapter, provenance in {
        "00_gpu_capabilities": {"cpu_count": 64, "cpus_usable": 16},
        "04_blocking_factor": {"cpu_count": 64},  # recorded before provenance said it
    }.items():
        (tmp_path / "data" / chapter).mkdir(parents=True)
        (tmp_path / "data" / chapter / "provenance.json").write_text(json.dumps(provenance))
    (tmp_path / "data" / "05_matmul_footprint").mkdir()
    (tmp_path / "data" / "05_matmul_footprint" / "provenance.json").write_text("{not json")
    assert _bench().chapter_cpus(tmp_path) == {"00_gpu_capabilities": 16}
    assert _bench().chapter_cpus(tmp_path / "missing") == {}


def test_provenance_says_how_many_cores_the_process_may_use():
    import os

    from cudalab.core.provenance import measurement

    info = measurement()
    assert info["cpu_count"] == os.cpu_count()
    assert 1 <= info["cpus_usable"] <= info["cpu_count"]


def test_add_sets_the_new_build_beside_the_earlier_runs_kept_notebooks_and_keeps_its_date(tmp_path, monkeypatch):
    """``--add --keep DIR``: the 2-GPU build of a second call is set beside the serial build of the
    first (kept in DIR/measured) for the cells that grew, and each build keeps the time it ended,
    so a record made of two calls says so."""
    import json

    bench = _bench()
    keep = tmp_path / "keep"
    (keep / "measured" / "notebooks").mkdir(parents=True)
    _executed(keep / "measured" / "notebooks" / "04_blocking_factor.ipynb", [5.2, 21.0])

    def build(args, env):
        out = Path(args[args.index("--out") + 1])
        (out / "notebooks").mkdir(parents=True)
        _executed(out / "notebooks" / "04_blocking_factor.ipynb", [9.6, 21.1])
        (out / "build.json").write_text(json.dumps({"chapters": {"04_blocking_factor": {"seconds": 80.0}}}))
        return 150.0, 0, ""

    monkeypatch.setattr(bench, "_build", build)
    earlier = {
        "cold": {
            "seconds": 300.0,
            "exit_status": 0,
            "date_utc": "2026-11-27T18:19:47Z",
            "chapter_seconds": {"04_blocking_factor": 76.0},
        }
    }
    record = tmp_path / "record.json"
    result = bench.run("h100", False, "html", True, False, keep, (2,), True, record, earlier)
    spread = result["builds"]["workers-2"]
    assert result["builds"]["cold"]["date_utc"] == "2026-11-27T18:19:47Z"
    assert spread["date_utc"] != "2026-11-27T18:19:47Z" and spread["date_utc"].endswith("Z")
    assert [(c["cell"], c["serial_s"], c["workers_s"]) for c in spread["cells_grown"]] == [
        (0, 5.2, 9.6),
        (1, 21.0, 21.1),
    ]
    assert spread["chapter_ratio"] == {"04_blocking_factor": round(80.0 / 76.0, 2)}
    assert json.loads(record.read_text())["builds"]["workers-2"]["seconds"] == 150.0
    assert (keep / "spread-2" / "notebooks" / "04_blocking_factor.ipynb").is_file()


def test_benchmarks_give_each_build_the_time_it_ended_where_recorded(tmp_path):
    import json

    from cudalab.report.benchmarks import build_times

    builds = {
        "cold": {"seconds": 328.0, "goal_s": 300.0, "meets_goal": False, "date_utc": "2026-11-27T18:19:47Z"},
        "workers-2": {"seconds": 167.1, "goal_s": 196.8, "meets_goal": True},  # recorded before builds had a date
    }
    record = _record(2, 32, "2026-11-27T18:25:55Z", "08e5f80463", builds)
    (tmp_path / "build_times").mkdir()
    (tmp_path / "build_times" / "gpu-x2-h100.json").write_text(json.dumps(record))
    text = "\n".join(build_times(tmp_path))
    assert "| 2026-11-27T18:19:47Z | `08e5f80463` | cold | 328 |" in text
    assert "| 2026-11-27T18:25:55Z | `08e5f80463` | workers-2 | 167 |" in text


def test_imports_are_read_once_before_the_first_timed_build_and_a_missing_one_is_left_out():
    import os

    got = _bench().warm_imports({**os.environ}, ("json", "pandas", "no_such_module_here", "cudalab.chapter"))
    assert got == ["json", "pandas", "cudalab.chapter"]


def test_a_students_build_is_held_to_twice_the_plain_build_of_the_same_chapters(tmp_path, monkeypatch):
    """--yours: the same command twice, the second with --kernels; its goal is 2x the first's seconds,
    and a student's build that exits 1 (a wrong file: a verdict) still counts as measured."""
    import json

    from cudalab.report.benchmarks import build_times

    bench = _bench()
    calls, seconds = [], iter([100.0, 150.0])

    def fake_build(args, env):
        calls.append(args)
        out = Path(args[args.index("--out") + 1])  # what a build writes: its notebooks and data
        (out / "notebooks").mkdir(parents=True)
        (out / "notebooks" / "04_blocking_factor.ipynb").write_text("{}")
        (out / "data" / "04_blocking_factor").mkdir(parents=True)
        if "--kernels" in args:
            (out / "data" / "04_blocking_factor" / "yours_sweep.csv").write_text("series,source_s\n")
        chapters = {c: {"seconds": 10.0} for c in args[args.index("--only") + 1 : args.index("--format")]}
        (out / "build.json").write_text(json.dumps({"chapters": chapters}))
        return next(seconds), 0 if "--kernels" not in args else 1, ""

    monkeypatch.setattr(bench, "_build", fake_build)
    monkeypatch.setattr(bench, "warm_imports", lambda env: [])
    monkeypatch.setattr(bench, "machine", lambda: {"gpu_name": "NVIDIA H200", "gpu_count": 1, "cpu_count": 16})
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "fw_blocked.cu").write_text("// a student's file\n")
    record = tmp_path / "build_times" / "h200-h200-yours-04.json"
    kept = tmp_path / "kept"
    result = bench.yours_builds("h200", tmp_path / "mine", ["04_blocking_factor"], "html", record, kept)
    # chapter 00 in both: --kernels measures it (its ceilings judge the student), so the plain build does too
    assert calls[0][:5] == ["--gpu", "h200", "--only", "00_gpu_capabilities", "04_blocking_factor"]
    assert "--kernels" not in calls[0]
    assert calls[1][-2:] == ["--kernels", str(tmp_path / "mine")] and calls[1][:5] == calls[0][:5]
    plain, yours = result["builds"]["plain"], result["builds"]["yours"]
    assert yours["goal_s"] == 200.0 and yours["meets_goal"] and plain["meets_goal"]
    text = "\n".join(build_times(tmp_path))
    # each row names the chapters its build measured: chapter 00 besides the student's
    assert "| yours, chapters 00 04 with fw_blocked.cu (goal 2x plain) | 150 | 200 | yes |" in text
    assert "| plain, chapters 00 04 | 100 | — | — |" in text  # the yardstick: no goal of its own
    json.loads(record.read_text())  # written as it went
    import tarfile

    with tarfile.open(kept / "keep.tgz") as tar:  # both builds' notebooks and data, in one file
        names = set(tar.getnames())
    assert {"plain/notebooks/04_blocking_factor.ipynb", "yours/data/04_blocking_factor/yours_sweep.csv"} <= names
    seconds = iter([100.0, 201.0])  # past twice the plain build: missed
    assert not bench.yours_builds("h200", tmp_path / "mine", ["04_blocking_factor"], "html")["builds"]["yours"][
        "meets_goal"
    ]
