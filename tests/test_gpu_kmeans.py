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


@pytest.mark.parametrize("variant", ["device_update", "shared_buffers", "fused", "tiled"])
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
    assert "tiled on" in proc.stdout and "iterations:" in proc.stdout
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
