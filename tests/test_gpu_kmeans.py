"""GPU tests of chapter 06's k-means variants: each against the float64 reference, iteration by
iteration, on small data with awkward shapes; and whole runs against the classic code."""

import numpy as np
import pytest

from cudalab.labs.kmeans import reference
from cudalab.labs.kmeans.gpu import VARIANTS

pytestmark = pytest.mark.gpu

CASES = [(1000, 5, 7), (1, 3, 1), (777, 1, 4), (4099, 16, 32), (300, 2, 1)]  # N not a multiple of any block


@pytest.fixture(scope="module")
def gpu():
    from cudalab.labs.kmeans import gpu

    return gpu


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("n,d,k", CASES, ids=[f"n{n}-d{d}-k{k}" for n, d, k in CASES])
def test_every_variant_matches_float64_at_every_iteration(gpu, variant, n, d, k):
    problem = gpu.Problem(reference.blobs(n, d, max(k, 2), seed=n + d), k)
    check = gpu.check_against_float64(problem, variant, iterations=4)
    assert check["status"].eq("ok").all(), check.to_string()


@pytest.mark.parametrize("variant", VARIANTS)
def test_an_empty_cluster_keeps_its_centre(gpu, variant):
    points = np.array([[0.0, 0.0], [0.0, 0.0], [10.0, 0.0], [10.5, 0.0], [9.5, 0.0]], dtype=np.float32)
    runner = gpu.Runner(gpu.Problem(points, 3), variant)  # centres 0 and 1 coincide: 1 never wins a tie
    runner.step()
    centres, membership = runner.result()
    assert 1 not in membership.tolist()
    assert (centres[1] == [0.0, 0.0]).all()


@pytest.mark.parametrize("variant", ["device_update", "shared_buffers", "fused", "tiled", "tensor"])
def test_a_whole_run_agrees_with_the_classic_code(gpu, variant):
    points = reference.blobs(20000, 8, 12, seed=5)
    classic = reference.classic(points, 12)
    run = gpu.run_to_convergence(gpu.Problem(points, 12), variant)
    same = (run["membership"] == classic.membership).mean()
    assert same > 0.999 and abs(run["iterations"] - classic.iterations) <= 2
    assert np.abs(run["centres"] - classic.centres).max() < 1e-3


def test_stage_times_are_recorded_for_each_iteration(gpu):
    problem = gpu.Problem(reference.blobs(5000, 4, 8, seed=1), 8)
    frame = gpu.time_iterations(problem, "host_update", iterations=3)
    assert set(frame["stage"]) == {"assign", "delta", "transfer", "update"}
    assert (frame["time_ms"] > 0).all() and frame["iteration"].nunique() == 3


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_variants_iteration_is_enqueued_behind_the_hold_without_waiting_on_the_host(gpu, variant):
    # A stage that synchronized with the host inside the held region (as cupy.bincount would)
    # would keep the host from releasing the hold until its spin gave up: host_behind.
    problem = gpu.Problem(reference.blobs(20000, 8, 12, seed=3), 12)
    runner = gpu.Runner(problem, variant)
    runner.step()  # compiles CuPy's own kernels on first use
    for _ in range(3):
        runner.step()
        assert not runner.host_behind, f"{variant}: the host fell behind the stream's hold"
    assert set(runner.last_times) >= {"transfer"} and all(ms >= 0 for ms in runner.last_times.values())


def test_shapes_beyond_the_kernels_limits_are_refused(gpu):
    from cudalab.core.errors import LaunchRefused

    assert "exceed" in gpu.refusal("fused", 200, 100) and gpu.refusal("fused", 32, 32) == ""
    with pytest.raises(LaunchRefused, match="shared memory"):
        gpu.Runner(gpu.Problem(reference.blobs(20000, 128, 4, seed=1), 200), "host_update")


def test_the_command_runs_on_the_gpu_and_writes_the_classic_outputs(gpu, tmp_path):
    import subprocess
    import sys

    from cudalab.core.paths import ROOT
    from cudalab.labs.kmeans import files

    points = reference.blobs(3000, 4, 5, seed=9)
    files.write_text(tmp_path / "blobs.txt", points)
    proc = subprocess.run(
        [sys.executable, "-m", "cudalab.kmeans", "-i", str(tmp_path / "blobs.txt"), "-n", "5"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "exact on" in proc.stdout and "iterations:" in proc.stdout
    classic = reference.classic(files.read(tmp_path / "blobs.txt", binary=False), 5)
    got = files.read_membership(tmp_path / "blobs.txt.membership")
    assert (got == classic.membership).mean() > 0.999


@pytest.mark.parametrize(
    "knobs",
    [
        {"SUMS_BY_WARP": 0},
        {"SUMS_BY_WARP": 0, "POINTS": 2, "CENTRE_UNROLL": 4},
        {"SUMS_BY_WARP": 0, "CENTRES_IN_SHARED": 1, "CENTRE_UNROLL": 4},
    ],
    ids=["lane-atomics", "two-points", "shared-centres"],
)
def test_the_fused_kernels_other_paths_are_correct_too(gpu, knobs, monkeypatch):
    monkeypatch.setattr(gpu, "FUSED_OPTIONS", {**gpu.FUSED_OPTIONS, **knobs})
    problem = gpu.Problem(reference.blobs(3001, 8, 6, seed=3), 6)
    assert gpu.check_against_float64(problem, "fused", iterations=3)["status"].eq("ok").all()


# K across the tiled kernel's blockings: one lane per group with odd TQ (scalar centre loads),
# 16 lanes of 7 centres (a padded K), 32 lanes of 10 (the smallest tile); D past a warp's lanes.
TILED_CASES = [(2003, 4, 7), (5003, 16, 100), (2001, 3, 300), (4099, 33, 32)]


@pytest.mark.parametrize("n,d,k", TILED_CASES, ids=[f"n{n}-d{d}-k{k}" for n, d, k in TILED_CASES])
def test_the_tiled_kernel_matches_float64_across_its_blockings(gpu, n, d, k):
    plan = gpu.tiled_shape(d, k)
    assert plan["G"] * plan["TQ"] >= k
    problem = gpu.Problem(reference.blobs(n, d, k, seed=k), k)
    check = gpu.check_against_float64(problem, "tiled", iterations=3)
    assert check["status"].eq("ok").all(), check.to_string()


# The fixed-point kernel across shapes: N not a multiple of any tile, D and K not powers of two,
# K up to 128 (and past the 32 lanes' 8 centres each), D past a warp's lanes.
FIXED_CASES = [(1, 3, 1), (2003, 5, 7), (5003, 16, 100), (4099, 33, 32), (3001, 32, 128), (777, 1, 4), (2001, 3, 300)]


@pytest.mark.parametrize("n,d,k", [(50003, 32, 32), (20011, 7, 13), (30000, 32, 128)])
def test_the_fixed_point_kernel_gives_the_same_bits_every_run(gpu, n, d, k):
    """Two runners (two grids' worth of atomics in whatever order they land) give the same
    memberships and centres, bit for bit, at every iteration; the float-sum tiled kernel need not."""
    if gpu.refusal("fixed", d, k):
        pytest.skip(gpu.refusal("fixed", d, k))
    problem = gpu.Problem(reference.blobs(n, d, k, seed=3), k)
    first, second = gpu.Runner(problem, "fixed"), gpu.Runner(problem, "fixed")
    for _ in range(6):
        assert first.step() == second.step()
        (c1, m1), (c2, m2) = first.result(), second.result()
        assert np.array_equal(m1, m2)
        assert np.array_equal(c1.view(np.int32), c2.view(np.int32))


def test_the_fixed_point_kernel_agrees_with_the_sequential_code_over_a_whole_run(gpu):
    from cudalab.labs.kmeans import chapter

    table = chapter.agreement(20000, 8, 12, 5, ["fixed", "tiled"]).set_index("variant")
    fixed = table.loc["fixed"]
    assert fixed["status"] == "ok" and fixed["same_bits_twice"]
    assert fixed["membership_agreement"] >= 0.999 and fixed["max_centre_difference"] < 1e-3


# The register kernel across shapes: N odd (no vector loads) or not a multiple of a warp's 64
# objects, D not a multiple of 4 (scalar tails) and past a warp's lanes, K = 1 and up to 128,
# PPT = 1 (D = 100).
DOT_CASES = [(1, 3, 1), (2003, 5, 7), (5002, 16, 100), (4099, 33, 32), (3001, 32, 128), (777, 1, 4), (1001, 100, 9)]


@pytest.mark.parametrize("n,d,k", [(50003, 32, 32), (20011, 7, 13), (30000, 32, 128)])
def test_the_register_kernel_gives_the_same_bits_every_run_and_as_the_fixed_point_kernel(gpu, n, d, k):
    """Two runners give the same bits at every iteration; and the same bits as kmeans_fixed, which
    sums each score in the same order and the same integers."""
    problem = gpu.Problem(reference.blobs(n, d, k, seed=3), k)
    first, second, fixed = gpu.Runner(problem, "dot"), gpu.Runner(problem, "dot"), gpu.Runner(problem, "fixed")
    for _ in range(6):
        assert first.step() == second.step() == fixed.step()
        (c1, m1), (c2, m2), (c3, m3) = first.result(), second.result(), fixed.result()
        assert np.array_equal(m1, m2) and np.array_equal(m1, m3)
        assert np.array_equal(c1.view(np.int32), c2.view(np.int32))
        assert np.array_equal(c1.view(np.int32), c3.view(np.int32))


TUNES = [
    {"cpair": 1},
    {"ppt": 4},
    {"ppt": 4, "threads": 256, "cpair": 1},
    {"ppt": 1, "threads": 256},
    {"ppt": 8},
    {"prefetch": 1},
    {"ppt": 1, "prefetch": 1, "cpair": 1},
]


@pytest.mark.parametrize("tune", TUNES, ids=lambda t: "-".join(f"{a}{b}" for a, b in t.items()))
@pytest.mark.parametrize("n,d,k", [(20011, 7, 13), (30001, 12, 33)])
def test_the_register_kernels_tunables_keep_the_fixed_point_kernels_bits(gpu, tune, n, d, k):
    """Every PPT, block size and centres-per-step (odd K: the pair loop's last centre alone) gives
    kmeans_fixed's memberships and centres bit for bit: the per-score summation order is the same."""
    why = gpu.refusal("dot", d, k, tune=tune)
    if why:
        pytest.skip(why)
    problem = gpu.Problem(reference.blobs(n, d, k, seed=5), k)
    tuned, fixed = gpu.Runner(problem, "dot", tune=tune), gpu.Runner(problem, "fixed")
    for _ in range(4):
        assert tuned.step() == fixed.step()
        (c1, m1), (c2, m2) = tuned.result(), fixed.result()
        assert np.array_equal(m1, m2) and np.array_equal(c1.view(np.int32), c2.view(np.int32))


def test_the_register_kernel_agrees_with_the_sequential_code_over_a_whole_run(gpu):
    from cudalab.labs.kmeans import chapter

    row = chapter.agreement(20000, 8, 12, 5, ["dot"]).set_index("variant").loc["dot"]
    assert row["status"] == "ok" and row["same_bits_twice"]
    assert row["membership_agreement"] >= 0.999 and row["max_centre_difference"] < 1e-3


def test_the_register_kernel_at_the_goal_shape(gpu):
    """Issue 25's shape, N = 4Mi, D = K = 32: one iteration checked against float64's nearest
    centres and its centres' means (two iterations)."""
    problem = gpu.Problem(gpu.blobs_on_device(4194304, 32, 32, seed=2011), 32)
    check = gpu.check_against_float64(problem, "dot", iterations=2)
    assert check["status"].eq("ok").all(), check.to_string()


# The tensor-core kernel across shapes: N not a multiple of a warp's 32 objects (and odd: no
# float4 loads), D and K not multiples of 8 (padded fragments), K = 1 and up to its 64.
TENSOR_CASES = [(1, 3, 1), (2003, 5, 7), (5002, 16, 64), (4099, 32, 32), (777, 1, 4), (3001, 31, 9)]


SHAPE_CASES = [("fixed", case) for case in FIXED_CASES] + [("dot", case) for case in DOT_CASES]
SHAPE_CASES += [("tensor", case) for case in TENSOR_CASES]


@pytest.mark.parametrize(
    "variant,n,d,k",
    [(v, *case) for v, case in SHAPE_CASES],
    ids=[f"{v}-n{n}-d{d}-k{k}" for v, (n, d, k) in SHAPE_CASES],
)
def test_the_fixed_point_register_and_tensor_core_kernels_match_float64_across_their_shapes(gpu, variant, n, d, k):
    why = gpu.refusal(variant, d, k)
    if why:
        pytest.skip(why)
    problem = gpu.Problem(reference.blobs(n, d, max(k, 2), seed=k + d), k)
    check = gpu.check_against_float64(problem, variant, iterations=4)
    assert check["status"].eq("ok").all(), check.to_string()


@pytest.mark.parametrize("n,d,k", [(50003, 32, 32), (20011, 7, 13), (30000, 32, 64)])
def test_the_tensor_core_kernel_gives_the_same_bits_every_run_and_nearly_the_fixed_point_kernels(gpu, n, d, k):
    """Two runners give the same bits at every iteration (integer sums, the tensor cores' fixed
    order). Against kmeans_fixed, whose scores are float32's, only points within a few last bits of
    a tie may choose differently; a cluster that holds the same points in both has the same centre,
    bit for bit (the same exact integer sums)."""
    if gpu.refusal("tensor", d, k):
        pytest.skip(gpu.refusal("tensor", d, k))
    problem = gpu.Problem(reference.blobs(n, d, k, seed=3), k)
    first, second, fixed = gpu.Runner(problem, "tensor"), gpu.Runner(problem, "tensor"), gpu.Runner(problem, "fixed")
    for _ in range(6):
        assert first.step() == second.step()
        fixed.step()
        (c1, m1), (c2, m2), (c3, m3) = first.result(), second.result(), fixed.result()
        assert np.array_equal(m1, m2) and np.array_equal(c1.view(np.int32), c2.view(np.int32))
        assert (m1 == m3).mean() >= 0.999
        same_points = [c for c in range(k) if np.array_equal(m1 == c, m3 == c)]
        assert len(same_points) >= k // 2
        assert np.array_equal(c1[same_points].view(np.int32), c3[same_points].view(np.int32))


CARRIES = [(50003, 32, 32), (20011, 7, 13), (30000, 32, 64), (4099, 16, 32), (300, 2, 1)]


@pytest.mark.parametrize("n,d,k", CARRIES, ids=[f"n{n}-d{d}-k{k}" for n, d, k in CARRIES])
def test_the_tensor_core_kernels_carried_sums_give_the_bits_of_sums_rebuilt_every_pass(gpu, n, d, k, monkeypatch):
    """km_07 item 12: a pass adds only the objects that moved, to the sums carried from the pass
    before, unless many moved. Built to rebuild every pass (CARRY_SUMS 0, the kernel before item
    12) and to never rebuild (REBUILD_ABOVE 0: moved objects only, even where most moved), it must
    give the default build's centres and memberships bit for bit after every iteration: integer
    sums, however they are reached. Odd N (the float path and a last partial step), K past 32 (one
    copy of the sums) and 300 objects (SPLIT 0: carried adds) are among the cases."""
    if gpu.refusal("tensor", d, k):
        pytest.skip(gpu.refusal("tensor", d, k))
    problem = gpu.Problem(reference.blobs(n, d, max(k, 2), seed=n + k), k)
    original = gpu.tensor_shape
    runs = {}
    for name, knobs in {"default": {}, "rebuilt": {"CARRY_SUMS": 0}, "carried": {"REBUILD_ABOVE": 0}}.items():
        monkeypatch.setattr(gpu, "tensor_shape", lambda d, k, knobs=knobs: {**original(d, k), **knobs})
        runner = gpu.Runner(problem, "tensor")
        runs[name] = [(runner.step(), *runner.result()) for _ in range(8)]
    moved = [m for m, _, _ in runs["default"]]
    assert moved[0] == n, "the first pass moves every object from -1"
    assert any(m * 16 <= n for m in moved[:-1]), f"no pass after the first carried its sums: moved {moved}"
    for name in ("rebuilt", "carried"):
        for it, ((m1, c1, s1), (m2, c2, s2)) in enumerate(zip(runs["default"], runs[name], strict=True)):
            assert m1 == m2 and np.array_equal(s1, s2), f"{name}: memberships differ after iteration {it}"
            assert np.array_equal(c1.view(np.int32), c2.view(np.int32)), f"{name}: centres differ after iteration {it}"


@pytest.mark.parametrize("k", [8, 32, 64])
def test_the_tensor_core_kernel_breaks_every_tie_to_the_lowest_index(gpu, k):
    """Centre j repeats centre j % 5 (K of them, so the copies sit in every lane and column tile
    of a quad's exchange): each copy scores exactly as its original, and the original, the lower
    index, must win every such tie. Checked against the classic code's choice among the five."""
    if gpu.refusal("tensor", 16, k):
        pytest.skip(gpu.refusal("tensor", 16, k))
    points = reference.blobs(12345, 16, 5, seed=k)
    points[5:k] = points[np.arange(5, k) % 5]  # the initial centres are the first K points
    runner = gpu.Runner(gpu.Problem(points, k), "tensor")
    runner.step()
    _, membership = runner.result()
    expected, gap = reference.assign64(points, points[:5].astype(np.float64))
    assert membership.max() < 5
    assert ((membership == expected) | (gap <= reference.TIE_RTOL)).all()


def test_the_tensor_core_kernel_agrees_with_the_sequential_code_over_a_whole_run(gpu):
    from cudalab.labs.kmeans import chapter

    if gpu.refusal("tensor", 8, 12):
        pytest.skip(gpu.refusal("tensor", 8, 12))
    row = chapter.agreement(20000, 8, 12, 5, ["tensor"]).set_index("variant").loc["tensor"]
    assert row["status"] == "ok" and row["same_bits_twice"]
    assert row["membership_agreement"] >= 0.999 and row["max_centre_difference"] < 1e-3


def test_the_tensor_core_kernel_at_the_goal_shape(gpu):
    """Issue 25's shape, N = 4Mi, D = K = 32, checked against float64 (two iterations)."""
    if gpu.refusal("tensor", 32, 32):
        pytest.skip(gpu.refusal("tensor", 32, 32))
    problem = gpu.Problem(gpu.blobs_on_device(4194304, 32, 32, seed=2011), 32)
    check = gpu.check_against_float64(problem, "tensor", iterations=2)
    assert check["status"].eq("ok").all(), check.to_string()


def test_the_fixed_point_scale_cannot_overflow(gpu):
    for n, top in [(4194304, 15.0), (17695, 1.0), (1, 3e38), (100, 1e-30)]:
        bits = gpu.fixed_point_bits(n, top)
        assert n * top * 2.0**bits < 2.0**62
    assert gpu.fixed_point_bits(10, 0.0) == gpu.SCALE_MAX_BITS


def test_the_chosen_kernel_is_the_fastest_correct_one_at_every_shape(gpu):
    """A small sweep measured here: at every (N, D, K) the chapter's chosen kernel is a variant of
    ours that passed the float64 check, and none of ours that passed ran faster."""
    import pandas as pd

    from cudalab.labs.kmeans import chapter

    configs = dict(sizes=[65536], dims=[8, 32], clusters=[8, 32], base_d=32, base_k=32)
    stages = chapter.sweep(**configs, iterations=3, seed=1, variants=gpu.LADDER[1:])
    shapes = sorted({(d, k) for _, d, k in chapter.configurations(**configs)})
    checks = pd.concat(chapter.correctness(20000, d, k, 1, 2, variants=gpu.LADDER[1:]) for d, k in shapes)
    wrong_at = checks[checks["status"].eq("wrong")]
    basis = pd.Series({"dram_GBps": 3000.0, "fp32_peak_GFLOPs": 60000.0})
    per_it = chapter.per_iteration(stages, basis)
    for row in wrong_at.itertuples():  # a variant wrong at a shape is not counted there
        per_it.loc[per_it["variant"].eq(row.variant) & per_it["d"].eq(row.d) & per_it["k"].eq(row.k), "status"] = (
            "wrong"
        )
    table = chapter.chosen(per_it)
    assert len(table) == len(chapter.configurations(**configs))
    for row in table.itertuples():
        here = per_it[per_it["n"].eq(row.n) & per_it["d"].eq(row.d) & per_it["k"].eq(row.k)]
        good = here[here["status"].eq("ok") & here["variant"].isin(gpu.LADDER)]
        assert row.variant in set(good["variant"])
        assert row.time_ms == good["time_ms"].min()


def _image_features() -> dict[str, np.ndarray]:
    from cudalab.labs.kmeans import sample_data

    return sample_data.image_features()


def _same_bits(run: dict, classic) -> None:
    assert run["iterations"] == classic.iterations
    assert np.array_equal(run["membership"], classic.membership)
    assert np.array_equal(run["centres"].view(np.int32), classic.centres.view(np.int32))


# K where the fixed-point kernels' runs on these features ended in another local optimum than the
# sequential code's (65-99.7% of the points in the same cluster, on an H100), and a few more.
@pytest.mark.parametrize(
    "data,k",
    [
        ("colour", 2),
        ("colour", 26),
        ("colour", 39),
        ("colour", 128),
        ("texture", 15),
        ("texture", 22),
        ("texture", 35),
        ("texture", 97),
    ],
)
def test_the_exact_variant_gives_the_sequential_codes_bits_on_real_image_features(gpu, data, k):
    points = _image_features()[data]
    _same_bits(gpu.run_to_convergence(gpu.Problem(points, k), "exact"), reference.classic(points, k))


def test_the_exact_variant_matches_the_sequential_code_where_the_first_centres_coincide(gpu):
    """The first K objects are the initial centres; here they are all the same point (as where a
    scan starts in an image's background), so every distance ties until the clusters part."""
    rng = np.random.default_rng(4)
    points = np.concatenate([np.zeros((40, 6)), rng.normal(size=(5000, 6)) * [1, 2, 3, 4, 5, 6] + 3]).astype(np.float32)
    for k in (3, 10, 33):
        _same_bits(gpu.run_to_convergence(gpu.Problem(points, k), "exact"), reference.classic(points, k))


def test_the_command_lines_gpu_mode_writes_the_sequential_modes_files_byte_for_byte(gpu, tmp_path):
    import subprocess
    import sys

    from cudalab.core.paths import ROOT
    from cudalab.labs.kmeans import files

    source = tmp_path / "colour.bin"
    files.write_binary(source, _image_features()["colour"])
    outputs = {}
    for mode, extra in (("gpu", []), ("cpu", ["--cpu"])):
        prefix = tmp_path / mode
        proc = subprocess.run(
            [sys.executable, "-m", "cudalab.kmeans", "-i", str(source), "-b", "-n", "39", "-o", str(prefix), *extra],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == 0, proc.stderr
        assert ("exact on" if mode == "gpu" else "sequential code") in proc.stdout
        outputs[mode] = [
            (prefix.parent / f"{mode}.{suffix}").read_bytes() for suffix in ("cluster_centres", "membership")
        ]
    assert outputs["gpu"] == outputs["cpu"]


def test_the_chapters_real_data_table_finds_the_exact_variant_bit_for_bit(gpu):
    from cudalab.labs.kmeans import chapter

    table = chapter.real_data_agreement([2, 39], ["exact", "dot"]).set_index(["variant", "k"])
    assert table["status"].eq("ok").all()
    exact = table.loc["exact"]
    assert exact["same_bits"].all() and exact["membership_agreement"].eq(1.0).all()
    assert (exact["iterations"] == exact["classic_iterations"]).all()
    assert set(table["d"]) == {9} and set(table["n"]) == {19200}


# The device loop (km_07 item 11): the pass ends the run itself, with the host's test in float32.
LOOPS = [(20000, 8, 12, 500), (4099, 16, 32, 500), (100000, 32, 32, 500), (20000, 8, 12, 2), (300, 2, 1, 500)]


@pytest.mark.parametrize("n,d,k,max_loop", LOOPS, ids=[f"n{n}-d{d}-k{k}-max{m}" for n, d, k, m in LOOPS])
def test_the_device_loop_runs_the_host_loops_iterations_to_the_same_bits(gpu, n, d, k, max_loop):
    points = reference.blobs(n, d, max(k, 2), seed=n + k)
    host = gpu.run_to_convergence(gpu.Problem(points, k), "tensor", max_loop=max_loop, loop_on="host")
    device = gpu.run_to_convergence(gpu.Problem(points, k), "tensor", max_loop=max_loop, loop_on="device")
    assert (host["loop"], device["loop"]) == ("host", "device")
    assert device["iterations"] == host["iterations"] <= max_loop + 1
    assert np.array_equal(device["membership"], host["membership"])
    assert np.array_equal(device["centres"].view(np.int32), host["centres"].view(np.int32))
    assert 0 < device["gpu_ms"] <= device["total_ms"]


def test_after_the_device_loop_ends_the_launches_enqueued_ahead_change_nothing(gpu):
    points = reference.blobs(20000, 8, 12, seed=3)
    runner = gpu.Runner(gpu.Problem(points, 12), "tensor")
    run = runner.run_on_device(reference.THRESHOLD, reference.MAX_LOOP, batch=3)
    assert run["launches"] > run["iterations"], "the host enqueues ahead of the end"
    centres, membership = runner.result()
    again = gpu.run_to_convergence(gpu.Problem(points, 12), "tensor", loop_on="host")
    assert run["iterations"] == again["iterations"]
    assert np.array_equal(membership, again["membership"])
    assert np.array_equal(centres.view(np.int32), again["centres"].view(np.int32))


def test_a_variant_whose_loop_needs_the_host_is_refused_the_device_loop(gpu):
    runner = gpu.Runner(gpu.Problem(reference.blobs(1000, 4, 4, seed=1), 4), "exact")
    with pytest.raises(ValueError, match="device loop"):
        runner.run_on_device(reference.THRESHOLD, reference.MAX_LOOP)
