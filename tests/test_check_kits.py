"""The check kits of chapters 02 (vecMax), 05 and 06 (``labs.vecmax_checks``, ``labs.matmul_checks``,
``labs.kmeans.checks``) and the ceilings a graded run measures again (``labs.ceilings_now``), on the
CPU: their inputs are the same in every process and as harsh as they claim, and their verdicts say
"" for a right answer and why for a wrong one (the GPU side: tests/test_gpu_check_kits.py)."""

from __future__ import annotations

import inspect

import numpy as np
import pandas as pd
import pytest

from cudalab.chapter.declarations import ceiling_declared, of
from cudalab.labs import matmul_checks, vecmax_checks
from cudalab.labs.kmeans import checks as km_checks
from cudalab.labs.kmeans import reference

VECMAX_POINT = {"n": 5000, "blocks": 4, "threads_per_block": 32, "kernel": "vecmax00"}
MATMUL_POINT = {"n": 45, "block_x": 8, "footprint": 40}
KMEANS_POINT = {"n": 4096, "d": 8, "k": 6, "variant": "device_update"}


def _group(chapter: str, recipe: str):
    return next(y for y in of(chapter).yours if y.recipe == recipe)


def _same(a, b) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
    return np.array_equal(a, b)


# ------------------------------------------------------------------------------ every kit


@pytest.mark.parametrize(
    "kit, point",
    [
        (vecmax_checks.VECMAX, VECMAX_POINT),
        (matmul_checks.FOOTPRINT, MATMUL_POINT),
        (km_checks.POINT, KMEANS_POINT),
    ],
    ids=["vecmax", "matmul", "kmeans"],
)
def test_every_kind_is_drawn_the_same_for_a_seed_and_otherwise_for_another(kit, point):
    assert kit.timed in kit.kinds
    for kind in kit.kinds:
        first, again, other = kit.draw(kind, point, 11), kit.draw(kind, point, 11), kit.draw(kind, point, 12)
        assert _same(first, again), kind
        assert not _same(first, other), kind
        assert kit.verdict(point, kit.expected(point, first), kit.expected(point, first), first) == "", kind


@pytest.mark.parametrize(
    "chapter, recipe, kit",
    [
        ("02_coalescing", "cudalab.labs.vecmax_point:VECMAX_POINT", "cudalab.labs.vecmax_checks:VECMAX"),
        ("05_matmul_footprint", "cudalab.labs.matmul:FOOTPRINT_POINT", "cudalab.labs.matmul_checks:FOOTPRINT"),
        ("06_kmeans_device_update", "cudalab.labs.kmeans.point:POINT", "cudalab.labs.kmeans.checks:POINT"),
    ],
)
def test_the_chapters_declare_their_kits_and_only_kinds_the_kits_draw(chapter, recipe, kit):
    from cudalab.grading.trials import kit_of

    group = _group(chapter, recipe)
    assert group.checks is not None and group.checks.kit == kit
    found = kit_of(kit)
    assert {c.input for c in group.checks.inputs} <= set(found.kinds)
    assert {c.input for c in group.checks.inputs} >= set(found.kinds) - {found.timed}, "every harsh kind is used"
    for point in group.points:
        small = found.small(dict(point))
        assert small["n"] < point["n"]


@pytest.mark.parametrize(
    "chapter, recipe",
    [
        ("02_coalescing", "cudalab.labs.vecmax_point:VECMAX_POINT"),
        ("05_matmul_footprint", "cudalab.labs.matmul:FOOTPRINT_POINT"),
        ("06_kmeans_device_update", "cudalab.labs.kmeans.point:POINT"),
    ],
)
def test_check_inputs_at_the_points_n_are_declared_before_the_others(chapter, recipe):
    """``grading.trials.measure_point`` solves an input at the point's own n with the trial it last
    built: after one at another n, that is a trial of the wrong size. Until it keeps a trial per n,
    the inputs at the point's n come first."""
    sizes = [c.n for c in _group(chapter, recipe).checks.inputs]
    assert sizes == sorted(sizes, key=lambda n: n is not None)


def test_graded_chapters_name_ceilings_chapter_00_offers_and_measures_now():
    matmul, kmeans = (
        _group("05_matmul_footprint", "cudalab.labs.matmul:FOOTPRINT_POINT"),
        _group("06_kmeans_device_update", "cudalab.labs.kmeans.point:POINT"),
    )
    assert (matmul.ceiling, matmul.rate_unit) == ("fp32_FLOPps", "FLOP/s")
    assert (kmeans.ceiling, kmeans.rate_unit) == ("dram_read_Bps", "B/s")
    assert "4 * n * d + 4 * n" in kmeans.rate
    for name in ("fp32_FLOPps", "dram_read_Bps"):
        declared = ceiling_declared(name)
        assert declared is not None and declared.now is not None
        assert declared.now.measure.startswith("cudalab.labs.ceilings_now:")


# ------------------------------------------------------------------------------ vecMax


def test_vecmax_kinds_are_as_harsh_as_they_claim():
    p = VECMAX_POINT
    assert (vecmax_checks.all_negative(p, 3) < 0).all()
    last = vecmax_checks.max_last(p, 3)
    assert np.flatnonzero(last == last.max()).tolist() == [p["n"] - 1]
    assert (vecmax_checks.uniform(p, 3) < 1).all() and vecmax_checks.uniform(p, 3).dtype == np.float32


@pytest.mark.parametrize("kernel", ["vecmax00", "vecmax01", "vecmax02"])
@pytest.mark.parametrize("n", [5000, 4 * (3 * 128 + 128 - 5), 4 * 128 * 2])
def test_vecmax_last_block_kind_puts_the_maximum_where_the_grids_last_busy_block_reads(kernel, n):
    from cudalab.labs import vecmax

    p = {**VECMAX_POINT, "n": n, "kernel": kernel}
    owner = vecmax.owners(kernel, n, p["blocks"], p["threads_per_block"])
    busy = owner[owner >= 0] // p["threads_per_block"]
    for seed in range(5):
        a = vecmax_checks.last_block(p, seed)
        top = np.flatnonzero(a == a.max())
        assert len(top) == 1
        assert owner[top[0]] // p["threads_per_block"] == busy.max(), (kernel, n, seed)


def test_vecmax_declared_ragged_n_is_not_a_multiple_of_the_grid_and_reaches_its_last_block():
    group = _group("02_coalescing", "cudalab.labs.vecmax_point:VECMAX_POINT")
    ragged = [c.n for c in group.checks.inputs if c.input == "last block" and c.n is not None]
    assert ragged
    for point in group.points:
        total = vecmax_checks.grid_threads(point)
        for n in ragged:
            assert n % 4 == 0 and n % total
            assert (n // 4) % total > (point["blocks"] - 1) * point["threads_per_block"], "the last round is ragged"


def test_vecmax_verdicts_say_what_is_wrong():
    p = VECMAX_POINT
    a = vecmax_checks.all_negative(p, 1)
    want = vecmax_checks.expected(p, a)
    ok = {"max": want["max"], "unwritten": np.int64(0), "partials": np.int64(128)}
    assert vecmax_checks.verdict(p, ok, want, a) == ""
    zero = vecmax_checks.verdict(p, {**ok, "max": np.float32(0)}, want, a)
    assert "not" in zero and "start at 0" in zero
    assert "never written" in vecmax_checks.verdict(p, {**ok, "unwritten": np.int64(3)}, want, a)
    b = vecmax_checks.uniform(p, 1)
    over = vecmax_checks.verdict(p, {**ok, "max": vecmax_checks.CANARY}, vecmax_checks.expected(p, b), b)
    assert "beyond the array" in over
    short = vecmax_checks.verdict(p, {**ok, "max": np.float32(0.5)}, vecmax_checks.expected(p, b), b)
    assert "missed part of the array" in short


def test_a_wrong_vecmax_answer_is_judged_wrong_naming_its_input(tmp_path):
    """The grader's path (``trials.judge``) over answers written as the worker writes them: right on
    every input but the all-negative one, where the maximum started at 0."""
    from cudalab.grading import trials

    kit, p = vecmax_checks.VECMAX, VECMAX_POINT
    group = _group("02_coalescing", "cudalab.labs.vecmax_point:VECMAX_POINT")
    inputs = [c for c in group.checks.inputs if c.n is None]
    owed = trials.answers_expected(kit, 5, "key", p, 2, inputs)
    for j, answer in enumerate(owed):
        a = kit.draw(answer.kind, {**p, "n": answer.n}, answer.seed)
        top = a.max() if answer.kind != "all negative" else np.float32(0)
        trials._save(
            {"max": np.float32(top), "unwritten": np.int64(0), "partials": np.int64(128)},
            trials.answer_file(tmp_path, 0, j),
        )
    got = trials.judge(
        kit, p, {"status": trials.MEASURED, "last_timed": 2}, 5, "key", inputs, tmp_path, 0, trials.Expected()
    )
    assert got["status"] == "wrong"
    assert "negative values only" in got["reason"] and "start at 0" in got["reason"]


# ------------------------------------------------------------------------------ matrix multiply


def test_matmul_mixed_scale_spans_decades_and_signs_row_by_row():
    ops = matmul_checks.mixed_scale({**MATMUL_POINT, "n": 64}, 4)
    for m in ops.values():
        mag = np.log10(np.abs(m))
        assert mag.max() - mag.min() > 8
        assert (m < 0).mean() > 0.4 and (m > 0).mean() > 0.4
        assert np.isfinite(m).all() and m.dtype == np.float32
    rows = np.log10(np.abs(ops["a"]).mean(axis=1))
    assert rows.max() - rows.min() > 3, "rows of A scaled apart"


def test_matmul_declared_odd_n_is_a_multiple_of_no_tile():
    group = _group("05_matmul_footprint", "cudalab.labs.matmul:FOOTPRINT_POINT")
    odd = [c.n for c in group.checks.inputs if c.input == "odd n"]
    assert odd
    for point in group.points:
        for n in odd:
            assert matmul_checks.odd_n_ok({**point, "n": n})
        small = matmul_checks.FOOTPRINT.small(dict(point))
        assert matmul_checks.odd_n_ok(small)


def test_matmul_tolerance_is_the_chapters():
    from cudalab.labs import matmul

    assert matmul_checks.tolerance(2048) == matmul.tolerance(2048)


def test_matmul_verdicts_catch_a_lost_term_an_unwritten_edge_and_a_wrong_shape():
    p = MATMUL_POINT
    for kind in ("uniform", "mixed scale"):
        ops = matmul_checks.FOOTPRINT.draw(kind, p, 2)
        want = matmul_checks.expected(p, ops)
        assert np.allclose(want["c"], ops["a"].astype(np.float64) @ ops["b"].astype(np.float64))
        right = (ops["a"] @ ops["b"]).astype(np.float32)  # float32, as a kernel gives it
        assert matmul_checks.verdict(p, {"c": right}, want, ops) == ""
        # the last k term lost (an edge's partial k tile dropped, as an off-by-one would)
        lost = (ops["a"][:, :-1] @ ops["b"][:-1, :]).astype(np.float32)
        said = matmul_checks.verdict(p, {"c": lost}, want, ops)
        assert "entries of C differ from the float64 product" in said, kind
        edge = right.copy()
        edge[:, -3:] = np.nan
        said = matmul_checks.verdict(p, {"c": edge}, want, ops)
        assert "entries are NaN: never written" in said and "columns 42-44" in said
    assert "not 45 x 45" in matmul_checks.verdict(p, {"c": np.zeros((44, 45))}, want, ops)


# ------------------------------------------------------------------------------ k-means


def test_kmeans_centre_tolerance_and_blobs_are_the_chapters():
    from cudalab.labs.kmeans import gpu

    assert km_checks.CENTRE_RTOL == inspect.signature(gpu.check_against_float64).parameters["centre_rtol"].default
    got = km_checks.blobs(KMEANS_POINT, 9)
    assert np.array_equal(got["points"], reference.blobs(4096, 8, 6, 9))
    assert np.array_equal(got["centres"], got["points"][:6])


@pytest.mark.parametrize("kind", list(km_checks.KINDS))
def test_kmeans_assignment_by_a_matrix_product_is_the_chapters(kind):
    p = {**KMEANS_POINT, "n": 20001}
    data = km_checks.KINDS[kind].make(p, 13)
    membership, gap = reference.assign64(data["points"], data["centres"])
    fast, fast_gap = km_checks.assign64(data["points"], data["centres"], chunk=4096)
    differ = membership != fast
    assert (gap[differ] < 1e-9).all(), "only exact ties may be broken otherwise"
    assert np.abs(gap - fast_gap).max() < 1e-9


def test_kmeans_empty_cluster_centres_are_far_from_every_point_and_keep_their_place():
    p = KMEANS_POINT
    data = km_checks.empty_cluster(p, 3)
    points, centres = data["points"], data["centres"]
    far = km_checks.far_clusters(p["k"])
    assert far == [3, 5]
    dist = np.sqrt(((points[:, None, :].astype(np.float64) - centres[None]) ** 2).sum(axis=2))
    near = np.delete(dist, far, axis=1).min(axis=1)
    assert (dist[:, far].min(axis=1) > 20 * near.max()).all()
    want = km_checks.expected(p, data)
    assert not np.isin(want["membership"], far).any()
    assert np.array_equal(want["centres"][far], centres[far].astype(np.float64))
    got = {"membership": want["membership"], "centres": want["centres"].astype(np.float32)}
    assert km_checks.verdict(p, got, want, data) == ""
    zeroed = got["centres"].copy()
    zeroed[far[0]] = 0
    said = km_checks.verdict(p, {**got, "centres": zeroed}, want, data)
    assert f"cluster {far[0]} has no members" in said and "stay where it was" in said
    nan = got["centres"].copy()
    nan[far[1]] = np.nan
    assert "no members" in km_checks.verdict(p, {**got, "centres": nan}, want, data)


def test_kmeans_duplicates_repeat_each_point_in_runs_with_two_identical_centres():
    p = KMEANS_POINT
    data = km_checks.duplicates(p, 5)
    points = data["points"]
    runs = points.reshape(-1, km_checks.REPEATS, p["d"])
    assert (runs == runs[:, :1]).all()
    assert len(np.unique(points, axis=0)) == p["n"] // km_checks.REPEATS
    assert np.array_equal(data["centres"][0], data["centres"][1])
    want = km_checks.expected(p, data)
    assert (want["gap"][want["membership"] == 0] == 0).all(), "the points of the doubled centre are exact ties"
    # a kernel that breaks the exact tie the other way is excused; its centres follow its memberships
    other = np.where(want["membership"] == 0, 1, want["membership"]).astype(np.int32)
    centres = reference.means64(points, other, data["centres"]).astype(np.float32)
    assert km_checks.verdict(p, {"membership": other, "centres": centres}, want, data) == ""
    # ... but not with the centres of the memberships it did not give
    said = km_checks.verdict(p, {"membership": other, "centres": want["centres"].astype(np.float32)}, want, data)
    assert said.startswith("2 of 6 new centres are off the float64 mean of their members"), said


def test_kmeans_last_alone_makes_the_last_point_the_last_clusters_only_member():
    p = {**KMEANS_POINT, "n": 4097}
    data = km_checks.last_alone(p, 6)
    points, centres = data["points"], data["centres"]
    want = km_checks.expected(p, data)
    assert np.flatnonzero(want["membership"] == p["k"] - 1).tolist() == [p["n"] - 1]
    assert np.array_equal(want["centres"][-1], points[-1].astype(np.float64))
    # a kernel that leaves the last object out keeps the last centre where it was
    dropped = want["centres"].astype(np.float32)
    dropped[-1] = centres[-1]
    said = km_checks.verdict(p, {"membership": want["membership"], "centres": dropped}, want, data)
    assert f"cluster {p['k'] - 1}, 1 member:" in said


def test_kmeans_near_ties_straddle_the_tie_rule():
    p = {**KMEANS_POINT, "n": 20000}
    data = km_checks.near_ties(p, 8)
    want = km_checks.expected(p, data)
    gap = want["gap"]
    assert (gap < 1e-2).mean() > 0.9
    assert 0.2 < (gap <= reference.TIE_RTOL).mean() < 0.5
    assert (gap[gap > reference.TIE_RTOL] < 1e-3).mean() > 0.2, "many close calls beyond the rule"


def test_kmeans_verdicts_name_wrong_memberships_and_centres():
    p = KMEANS_POINT
    data = km_checks.near_ties(p, 2)
    want = km_checks.expected(p, data)
    got = {"membership": want["membership"].copy(), "centres": want["centres"].astype(np.float32)}
    assert km_checks.verdict(p, got, want, data) == ""
    clear = int(np.flatnonzero(want["gap"] > 1e-3)[0])
    moved = got["membership"].copy()
    moved[clear] = (moved[clear] + 1) % p["k"]
    said = km_checks.verdict(p, {**got, "membership": moved}, want, data)
    assert f"point {clear} is given cluster {moved[clear]}" in said
    assert "no cluster" in km_checks.verdict(p, {**got, "membership": np.full(p["n"], p["k"])}, want, data)
    off = got["centres"].copy()
    off[2] += 0.01 * np.abs(data["points"]).max()
    assert "off the float64 mean" in km_checks.verdict(p, {**got, "centres": off}, want, data)
    assert "not (4096,)" in km_checks.verdict(p, {**got, "membership": moved[:-1]}, want, data)


# ------------------------------------------------------------------------------ ceilings measured now


def test_fp32_ceiling_now_is_the_spec_tables_peak(monkeypatch):
    from cudalab.labs import capabilities, ceilings_now

    spec = {"cuda_cores_per_multiprocessor": 128, "multiprocessors": 132, "gpu_clock_MHz": 1980.0}
    monkeypatch.setattr(
        capabilities, "present_spec", lambda: {**spec, "fp32_peak_GFLOPs": capabilities.fp32_peak_GFLOPs(spec)}
    )
    declared = ceiling_declared("fp32_FLOPps")
    assert declared.pick(ceilings_now.fp32_peak_now(), declared.now.value) == pytest.approx(66908.16e9)
    unknown = {**spec, "cuda_cores_per_multiprocessor": float("nan")}
    monkeypatch.setattr(capabilities, "present_spec", lambda: {**unknown, "fp32_peak_GFLOPs": float("nan")})
    assert declared.pick(ceilings_now.fp32_peak_now(), declared.now.value) is None


def test_dram_read_now_is_the_fastest_correct_launch_as_a_ceilings_row(monkeypatch):
    from cudalab.labs import ceilings_now, read_stream

    sweep = pd.DataFrame(
        [
            {"blocks": 264, "threads_per_block": 512, "time_ms": 0.50, "time_ms_q1": 0.49, "time_ms_q3": 0.51,
             "bytes_read": 2 << 30, "bandwidth_GBps": 4295.0, "status": "ok"},
            {"blocks": 528, "threads_per_block": 1024, "time_ms": 0.48, "time_ms_q1": 0.47, "time_ms_q3": 0.49,
             "bytes_read": 2 << 30, "bandwidth_GBps": 4474.0, "status": "ok"},
            {"blocks": 1056, "threads_per_block": 1024, "time_ms": 0.10, "time_ms_q1": 0.1, "time_ms_q3": 0.1,
             "bytes_read": 2 << 30, "bandwidth_GBps": 21000.0, "status": "wrong"},
        ]
    )  # fmt: skip
    seen = {}

    def fake_sweep(words, blocks_per_sm, threads, seed=0, timing=None, show_progress=True):
        seen.update(words=words, timing=timing)
        return sweep

    monkeypatch.setattr(read_stream, "read_stream_words", lambda nbytes, share=0.3: nbytes // 4)
    monkeypatch.setattr(read_stream, "read_stream_sweep", fake_sweep)
    rows = ceilings_now.dram_read_now(timing={"time_limit_s": 9})
    assert seen == {"words": ceilings_now.NOW_READ_BYTES // 4, "timing": {"time_limit_s": 9}}
    declared = ceiling_declared("dram_read_Bps")
    assert declared.pick(rows, declared.now.value) == pytest.approx(4474e9)
    assert rows.iloc[0][["time_ms_q1", "time_ms_q3"]].tolist() == [0.47, 0.49]
    monkeypatch.setattr(read_stream, "read_stream_sweep", lambda *a, **k: sweep.assign(status="wrong"))
    assert declared.pick(ceilings_now.dram_read_now(), declared.now.value) is None
