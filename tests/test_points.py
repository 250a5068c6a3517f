"""Measuring one point (labs.points, explore.measure), the "your measurements" table and scratch
kernels, without a GPU: recipes against the recorded tables, validation, the refusal without a
GPU, compile errors and refusals as statuses, scratch copies that never touch kernels_cu."""

import dataclasses
import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
from conftest import chapter_recipe

from cudalab.core.errors import CudalabError, KernelCompileError, LaunchRefused, NoGPU, SkipPoint
from cudalab.core.kernels import compile_error, included_headers, source_digest
from cudalab.core.paths import KERNELS_DIR, NOTEBOOKS_DIR, RESULTS_DIR
from cudalab.explore import measure, yours
from cudalab.explore.scratch import scratch_kernel
from cudalab.labs import points

CHAPTERS = [p.stem for p in sorted(NOTEBOOKS_DIR.glob("0*.ipynb"))]
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")


def kernels_digests() -> dict[str, str]:
    return {p.name: source_digest(p) for p in sorted(KERNELS_DIR.glob("*.cu"))}


@pytest.fixture
def lab(tmp_path):
    return SimpleNamespace(
        id="01_block_size", out_dir=tmp_path / "data" / "01_block_size", params={"seed": 2016}, point_time_limit_s=None
    )


@pytest.fixture
def gpu_here(monkeypatch):
    """measure_now past its GPU check, with the refusals CuPy would add (none here)."""
    monkeypatch.setattr(measure, "why_no_gpu", lambda: None)
    monkeypatch.setattr("cudalab.core.launch.refusal_types", lambda: (SkipPoint,))


# ---------------------------------------------------------------- recipes


def test_every_chapter_hands_its_explorer_its_own_recipe():
    for chapter in CHAPTERS:
        recipe = chapter_recipe(chapter)
        assert recipe.chapter == chapter and isinstance(recipe, points.PointRecipe)
    assert chapter_recipe("01").chapter == "01_block_size"


def _recordings(chapter: str, table: str) -> list[Path]:
    return sorted(p.parent for p in RESULTS_DIR.glob(f"*/*/{chapter}/{table}.csv"))


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_recipe_axes_are_columns_of_the_recorded_table(chapter):
    r = chapter_recipe(chapter)
    folders = _recordings(chapter, r.table)
    assert folders, f"no recording of {chapter}'s {r.table}"
    for folder in folders:
        recorded = json.loads((folder / "provenance.json").read_text())
        assert r.table in recorded["axes"], f"{folder}: {r.table} has no recorded axes"
        columns = set(pd.read_csv(folder / f"{r.table}.csv", nrows=1).columns)
        names = [*r.axes, *r.kernel_choices]
        assert set(names) <= columns, f"{folder}: {sorted(set(names) - columns)} are not columns of {r.table}"
    assert set(r.defaults) == set(r.axes) | set(r.kernel_choices)
    for name, choices in r.kernel_choices.items():
        assert r.defaults[name] in tuple(choices)
    if r.kernel_file:
        assert (KERNELS_DIR / r.kernel_file).is_file()
        for by_value in r.files.values():
            assert all((KERNELS_DIR / f).is_file() for f in by_value.values())


@pytest.mark.parametrize("chapter", [c for c in CHAPTERS if c != "00_gpu_capabilities"])
def test_default_point_is_one_the_recorded_sweeps_did_not_have(chapter):
    r = chapter_recipe(chapter)
    for folder in _recordings(chapter, r.table):
        frame = pd.read_csv(folder / f"{r.table}.csv")
        same = pd.Series(True, index=frame.index)
        for name in r.axes:
            same &= frame[name].astype(str).eq(str(r.defaults[name]))
        assert not same.any(), f"{folder}: the default point {r.defaults} was recorded already"


def test_a_point_draws_its_input_with_the_chapters_own_seed(lab, gpu_here):
    """The recipe reads the seed (and the rest) from the chapter's parameters, as its sweep: the
    explorer hands it ``lab.params`` and the chapter's time limit; no table beside the notebook
    repeats a seed."""
    seen = {}

    def fake(point, kernel_file=None, params=None):
        seen.update(params)
        return pd.DataFrame([{**point, "variant": "x", "status": "ok", "reason": "", "time_ms": 1.0}])

    recipe = dataclasses.replace(chapter_recipe("01_block_size"), measure=fake)
    measure.measure_now(
        SimpleNamespace(**{**vars(lab), "params": {"seed": 7}, "point_time_limit_s": 30.0}), recipe, {"n": 300}
    )
    assert seen == {"seed": 7, "point_time_limit_s": 30.0}
    assert points.timing_of(seen) == {"time_limit_s": 30.0}
    assert points.seed_of({"seed": "2016"}) == 2016
    with pytest.raises(CudalabError, match="no seed"):
        points.seed_of({})


def test_a_scratch_copy_stands_in_for_its_own_file_only(tmp_path):
    from cudalab.labs.fw import per_k
    from cudalab.labs.fw.blocked import kernels
    from cudalab.labs.kmeans import gpu

    copy = str(tmp_path / "fw_blocked_registers.cu")
    phases = kernels.registers_phase_launches(64, True, 4, copy)
    assert [x.file for x in phases] == ["fw_blocked.cu", "fw_blocked.cu", copy]
    assert per_k.launch("basic", 16, file=tmp_path / "fw_basic_2d.cu").file == str(tmp_path / "fw_basic_2d.cu")
    assert per_k.launch("basic", 16, file=copy).file == "fw_basic_2d.cu"
    tiled = gpu.stage_launches("tiled", 1000, 8, 16, file=tmp_path / "km_03_fused.cu")
    assert tiled["pass"].file == "km_04_tiled.cu" and tiled["finalize"].file == str(tmp_path / "km_03_fused.cu")
    with pytest.raises(CudalabError, match="fw_blocked_registers.cu is not a kernel file of the basic kernel"):
        points.require_used(copy, [per_k.launch("basic", 16, file=copy)], "the basic kernel")
    points.require_used(copy, phases, "the registers kernel")


# ---------------------------------------------------------------- validation and no GPU


def test_point_is_checked_against_its_recipe():
    r = chapter_recipe("02_coalescing")
    got = measure.check_point(r, {"n": "2048", "threads_per_block": 96.0})
    assert got == {"n": 2048, "threads_per_block": 96, "segment_size": 1, "kernel": "coalesced"}
    with pytest.raises(measure.BadPoint, match="unknown 'block'; a point of fw_sweep sets n, threads_per_block"):
        measure.check_point(r, {"block": 16})
    with pytest.raises(measure.BadPoint, match="n = 'big': expected int"):
        measure.check_point(r, {"n": "big"})
    with pytest.raises(measure.BadPoint, match="n = -5: expected a positive integer"):
        measure.check_point(r, {"n": -5})
    with pytest.raises(measure.BadPoint, match="kernel = 'tiled': expected one of coalesced, coalesced_segment"):
        measure.check_point(r, {"kernel": "tiled"})
    assert measure.check_point(chapter_recipe("03"), {"published": "true"})["published"] is True


def test_measure_now_without_a_gpu_says_why(lab):
    assert measure.why_no_gpu() and "GPU host" in measure.why_no_gpu()
    with pytest.raises(NoGPU, match="replays recorded results"):
        measure.measure_now(lab, chapter_recipe("01_block_size"), {"n": 300})
    assert not yours.path(lab, "block_sweep").exists()
    with pytest.raises(measure.BadPoint):  # the point is checked first, GPU or not
        measure.measure_now(lab, chapter_recipe("01_block_size"), {"n": 0})


# ---------------------------------------------------------------- outcomes as statuses


def test_compile_error_in_a_scratch_copy_is_a_status_with_file_and_line(lab, tmp_path, gpu_here):
    copy = scratch_kernel("fw_basic_2d.cu", tmp_path / "scratch")

    def broken(point, kernel_file=None, params=None):
        raise compile_error(Path(kernel_file), f'{kernel_file}(12): error: expected a ";"\n\n1 error detected')

    recipe = dataclasses.replace(chapter_recipe("01_block_size"), measure=broken)
    got = measure.measure_now(lab, recipe, {"n": 300, "block_edge": 24}, kernel_file=copy)
    assert got.status == "compile error"
    assert got.message == 'scratch/fw_basic_2d.cu:12: expected a ";"'
    assert "Traceback" not in got.message and "\n" not in got.message
    saved = yours.load(lab, "block_sweep")
    assert saved["status"].tolist() == ["compile error"] and saved["reason"].iloc[0] == got.message
    assert bool(saved["scratch_copy"].iloc[0]) and saved["kernel_file"].iloc[0] == str(copy.resolve())


def test_refusal_is_skipped_with_its_reason_and_wrong_stays_wrong(lab, gpu_here):
    r = chapter_recipe("01_block_size")

    def refused(point, kernel_file=None, params=None):
        raise LaunchRefused("block 48x48x1 = 2304 threads exceeds this GPU's limit of 1024 threads per block")

    got = measure.measure_now(lab, dataclasses.replace(r, measure=refused), {"block_edge": 48})
    assert got.status == "skipped" and "2304 threads exceeds" in got.message
    wrong_rows = pd.DataFrame(
        [{"n": 300, "variant": "24x24", "time_ms": 1.5, "repeats": 30, "status": "wrong", "reason": "12 mismatches"}]
    )
    got = measure.measure_now(
        lab, dataclasses.replace(r, measure=lambda p, kernel_file=None, params=None: wrong_rows), {"n": 300}
    )
    assert got.status == "wrong" and "WRONG" in got.message and "12 mismatches" in got.message
    assert got.rows["block_edge"].iloc[0] == 24  # the point's own columns, where the rows lack them
    assert yours.load(lab, "block_sweep")["status"].tolist() == ["skipped", "wrong"]


# ---------------------------------------------------------------- the "your measurements" table


def test_your_measurements_are_appended_with_provenance(lab):
    first = pd.DataFrame([{"n": 300, "variant": "24x24", "time_ms": 1.0, "status": "ok", "reason": ""}])
    second = pd.DataFrame([{"n": 400, "variant": "24x24", "status": "skipped", "reason": "too big"}])
    original = KERNELS_DIR / "fw_basic_2d.cu"
    where = yours.append(lab, "block_sweep", first, kernel_file=original)
    assert where == lab.out_dir / "your_measurements_block_sweep.csv"
    yours.append(lab, "block_sweep", second, kernel_file=original)
    saved = yours.load(lab, "block_sweep")
    assert saved["n"].tolist() == [300, 400] and saved["status"].tolist() == ["ok", "skipped"]
    assert set(yours.PROVENANCE_COLUMNS) <= set(saved.columns)
    assert saved["kernel_file"].eq("kernels_cu/fw_basic_2d.cu").all()
    assert saved["kernel_source_digest"].eq(source_digest(original)).all()
    assert not saved["scratch_copy"].astype(bool).any()
    assert saved["git_commit"].str.len().gt(6).all()
    assert yours.load(SimpleNamespace(out_dir=lab.out_dir / "none"), "block_sweep").empty


# ---------------------------------------------------------------- scratch kernels


def test_scratch_copy_brings_its_headers_and_never_touches_kernels_cu(tmp_path):
    before = kernels_digests()
    folder = tmp_path / "scratch"
    copy = scratch_kernel("fw_blocked_minplus.cu", folder)
    assert copy == folder / "fw_blocked_minplus.cu"
    headers = included_headers(KERNELS_DIR / "fw_blocked_minplus.cu")
    assert headers and all((folder / h.name).read_bytes() == h.read_bytes() for h in headers)
    assert [h.parent for h in included_headers(copy)] == [folder.resolve()] * len(headers)
    assert source_digest(copy) == source_digest(KERNELS_DIR / "fw_blocked_minplus.cu")
    copy.write_text(copy.read_text() + "\n// my edit\n")
    with pytest.raises(CudalabError, match="exists already and may hold your edits"):
        scratch_kernel("fw_blocked_minplus.cu", folder)
    assert copy.read_text().endswith("// my edit\n")
    scratch_kernel("fw_blocked_minplus.cu", folder, overwrite=True)
    assert copy.read_bytes() == (KERNELS_DIR / "fw_blocked_minplus.cu").read_bytes()
    with pytest.raises(CudalabError, match="no kernel file 'nothing.cu'"):
        scratch_kernel("nothing.cu", folder)
    with pytest.raises(CudalabError, match="never into kernels_cu"):
        scratch_kernel("fw_basic_2d.cu", KERNELS_DIR, overwrite=True)
    assert kernels_digests() == before


@needs_nvcc
def test_scratch_copy_compiles_on_its_own_and_its_errors_name_it(tmp_path, monkeypatch):
    from cudalab.labs.fw.blocked import kernels
    from cudalab.toolchain.nvcc import kernel_resources_for

    folder = tmp_path / "scratch"
    copy = scratch_kernel("fw_blocked_minplus.cu", folder)
    monkeypatch.setattr("cudalab.core.gpu.compute_capability", lambda: "9.0")
    phase3 = kernels.minplus_phase_launches(64, True, copy)[-1]
    assert phase3.file == str(copy)
    occupancy = points.occupancy_columns(phase3)
    assert 0 < occupancy["occupancy_fraction"] <= 1 and occupancy["occupancy_limited_by"]
    lines = copy.read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if "__global__" in line) + 1
    lines.insert(at, "    int broken = ;")
    copy.write_text("\n".join(lines) + "\n")
    with pytest.raises(KernelCompileError) as err:
        kernel_resources_for(copy, "sm_90", phase3.options)
    assert err.value.path == copy.resolve() and err.value.line == at + 1
    assert measure.compile_message(err.value).startswith(f"scratch/fw_blocked_minplus.cu:{at + 1}: ")
