"""GPU tests for chapter 04: every blocked kernel (the ladder, the blocking factors, the register
tiles with and without DPX, the min-plus kernel) against the CPU reference at V that is not a multiple of any blocking
factor, V = 1, graphs with no edges and graphs with unreachable pairs; the NTHU file path; the
add+min ceiling's own check."""

import numpy as np
import pytest
from conftest import random_graph

from cudalab.labs.fw import harness as fw
from cudalab.labs.fw import nthu
from cudalab.labs.fw.blocked import counters, kernels, plans, variants
from cudalab.labs.fw.blocked.phase_split import phase_split
from cudalab.labs.fw.graphs import NO_EDGE, gen_matrix
from cudalab.labs.fw.reference import floyd_warshall_c

pytestmark = pytest.mark.gpu
SIZES = [
    1,
    2,
    33,
    100,
    130,
    300,
    520,
    600,
]  # 130, 300: three tiles at BF 64 and 128, padded; 520: five rounds at BF 128;
# 600: three rounds at BF 256, each pivot block closed by an inner solve of its 4 x 4 tiles, and two
# at BF 512 (4 x 4 tiles of 128); test_minplus_deepest_rounds_match_cpu runs three at BF 512


@pytest.fixture(scope="module")
def cp():
    import cupy

    return cupy


def every_variant():
    return (
        variants.ladder_variants()
        + variants.blocking_factor_variants([8, 16, 32, 64, 128])
        + variants.registers_variants([64, 128], dpx=[True, False])
        + variants.registers_variants([64], dpx=[True], tiles=[8])
        + variants.minplus_variants([64, 128, 256, 512], dpx=[True, False])
        + [kernels.variant("min-plus BF 256, no look-ahead", lambda: kernels.minplus_plan(256, lookahead=False))]
    )


def no_edges(n):
    mat = np.full((n, n), NO_EDGE, dtype=np.int32)
    np.fill_diagonal(mat, 0)
    return mat


@pytest.mark.parametrize("n", SIZES)
def test_every_blocked_kernel_matches_cpu(cp, rng, n):
    sparse = random_graph(rng, n, 0.03, 1000)
    sparse[:, -1] = NO_EDGE  # no edge into the last vertex: nothing else reaches it
    sparse[-1, -1] = 0
    graphs = {
        "sparse, unreachable pairs": sparse,
        "weights 0 and 1, zero-weight cycles": random_graph(rng, n, 0.05, 1),
        "lab GenMatrix": gen_matrix(n, int(rng.integers(1 << 30))),
        "no edges": no_edges(n),
    }
    if n >= 2:
        assert (floyd_warshall_c(sparse) < 0).any(), "the test graph should leave some pairs unreachable"
    for v in every_variant():
        for kind, mat in graphs.items():
            got, mode = fw.solve_once(v, mat)
            np.testing.assert_array_equal(got, floyd_warshall_c(mat), err_msg=f"{v.label}, n={n}, {kind}")
            assert mode == "cuda-graph"


def test_padding_is_unreachable_with_zero_diagonal(cp):
    d = plans.to_blocked(cp.asarray(np.array([[0, 5, -1], [-1, 0, 2], [1, -1, 0]], dtype=np.int32)), 8)
    host = cp.asnumpy(d)
    assert host.shape == (8, 8)
    assert (np.diag(host) == 0).all()
    assert host[0, 2] == plans.INF and host[0, 1] == 5 and host[3, 4] == plans.INF and host[0, 5] == plans.INF
    np.testing.assert_array_equal(cp.asnumpy(plans.from_blocked(d, 3)), [[0, 5, -1], [-1, 0, 2], [1, -1, 0]])


def test_a_wrong_blocked_kernel_is_flagged(cp):
    """Phase 3 alone (no pivot phases) misses paths through the pivot tiles: the check must see it."""
    plan = kernels.shared_plan(16)
    broken = plans.BlockedPlan(16, plan.phases[2:])
    gpu, _ = fw.sweep([fw.Variant("phase 3 only", {}, lambda n: broken)], [100], seed=3, cpu_max_n=100)
    assert gpu["status"].eq("wrong").all() and gpu["mismatches"].gt(0).all()


def test_phase_split_times_every_phase_and_checks(cp):
    split = phase_split(
        variants.registers_variants([64], dpx=[True]) + variants.blocking_factor_variants([16]), 200, seed=4, repeats=2
    )
    assert set(split["phase"]) == {"phase 1", "phase 2", "phase 3"}
    assert split["status"].eq("ok").all() and split["time_ms"].gt(0).all()
    rounds = split.set_index(["variant", "phase"])["launches"]
    assert rounds[("shared BF 16", "phase 1")] == plans.padded_size(200, 16) // 16


@pytest.mark.parametrize("kernel", ["minplus:64", "registers:64"])
@pytest.mark.parametrize("v,density", [(1, 0.0), (70, 0.0), (70, 0.05), (300, 0.01)])
def test_nthu_case_solved_on_gpu_matches_cpu(cp, tmp_path, v, density, kernel):
    from cudalab.labs.fw import nthu_gpu

    edges = nthu.generate_case(v, density, seed=v)
    nthu.write_case(tmp_path / "c.in", v, edges)
    ms, solved_v = nthu_gpu.solve_file(tmp_path / "c.in", tmp_path / "c.out", kernels.KernelSpec.parse(kernel).plan())
    want = nthu.solve_cpu(v, edges)
    dist = nthu.read_output(tmp_path / "c.out", v)
    assert solved_v == v
    np.testing.assert_array_equal(dist, want)
    assert set(ms) == set(nthu_gpu.STAGES) and all(t >= 0 for t in ms.values())
    if density == 0.0 and v > 1:
        assert (dist[~np.eye(v, dtype=bool)] == nthu.UNREACHABLE).all()


def test_time_split_rows_per_stage(cp, tmp_path):
    from cudalab.labs.fw import nthu_gpu

    chosen = {100: kernels.KernelSpec("shared", 32), 700: kernels.KernelSpec("minplus", 64)}
    split = nthu_gpu.time_split([100, 700], 0.05, seed=1, workdir=tmp_path, repeats=2, kernel_for=chosen.__getitem__)
    assert len(split) == 2 * len(nthu_gpu.STAGES)
    assert split["status"].eq("ok").all()
    # each case names the kernel that solved it: the one chosen for its V
    assert split.groupby("v")["kernel"].agg(set).to_dict() == {v: {s.as_text()} for v, s in chosen.items()}
    assert (split["input_over_fromfile"] > 0).all() and (split["output_over_host_write"] > 0).all()
    assert set(split["checked_against"]) == {"cpu", "cupy"}
    assert not list(tmp_path.iterdir()), "case files are removed after timing"


def test_cli_solves_on_gpu_with_check(cp, tmp_path, capsys):
    from cudalab.apsp import main

    case, out = tmp_path / "c.in", tmp_path / "c.out"
    assert main(["generate", "150", "0.05", str(case)]) == 0
    assert main(["solve", str(case), str(out), "--check"]) == 0
    text = capsys.readouterr().out
    assert "solved on" in text and "compute" in text and "ok: all 22500 distances match" in text
    assert "of chapter 04's kernels, the fastest expected at V = 150" in text, "the default comes from the recording"
    assert main(["solve", str(case), str(out), "--kernel", "shared:32", "--check"]) == 0
    assert "shared BF 32 (--kernel)" in capsys.readouterr().out


def test_add_min_ceiling_checks_and_measures(cp):
    from cudalab.labs import int_ceiling

    frame = int_ceiling.add_min_ceiling(iters=512, blocks_per_sm=4)
    assert frame["status"].eq("ok").all(), frame["reason"].tolist()
    assert frame["relaxations_per_s"].gt(1e10).all()
    assert int_ceiling.ceiling(frame)["relaxations_per_s"] == frame["relaxations_per_s"].max()


def test_nsight_counters_or_a_clear_reason(cp):
    reason = counters.counters_available()
    if reason is not None:
        assert "ncu" in reason
        pytest.skip(reason)
    frame = counters.profile_phase3(
        [
            {"label": "BF 16", "kind": "shared", "bf": 16},
            {"label": "reg 64", "kind": "registers", "bf": 64, "dpx": True},
        ],
        300,
    )
    assert list(frame["variant"]) == ["BF 16", "reg 64"]
    assert frame["kernel_time_ms"].gt(0).all() and frame["integer_instructions"].gt(0).all()
    assert frame["global_load_GBps"].gt(0).all() and frame["shared_load_GBps"].gt(0).all()


def test_the_gpu_output_file_is_byte_identical_through_many_staging_blocks(cp, tmp_path, monkeypatch):
    """Repeated edges (the lightest wins), zero weights, self-loops and unreachable pairs, a V that
    is padded to the blocking factor, and an answer that leaves the device in many row blocks: the
    file must be byte for byte the sequential reference's."""
    from cudalab.labs.fw import nthu_gpu

    v = 301
    rng = np.random.default_rng(7)
    edges = np.stack([rng.integers(0, v, 4000), rng.integers(0, v, 4000), rng.integers(0, 3, 4000)], axis=1)
    edges = np.concatenate([edges, edges[:500] * [1, 1, 0], [[5, 5, 2], [7, 9, 0], [7, 9, 1]]]).astype(np.int32)
    edges[:, 1] = np.where(edges[:, 0] < 40, (edges[:, 1] % 40), edges[:, 1])  # a cluster, and vertices it cannot reach
    nthu.write_case(tmp_path / "c.in", v, edges)
    monkeypatch.setattr(nthu_gpu, "STAGING_BYTES", 4 * v * 7)  # 7 rows per block: 43 blocks through two buffers
    nthu_gpu.solve_file(tmp_path / "c.in", tmp_path / "gpu.out", kernels.KernelSpec("minplus", 64).plan())
    nthu.write_output(tmp_path / "cpu.out", nthu.solve_cpu(v, edges))
    assert (tmp_path / "gpu.out").read_bytes() == (tmp_path / "cpu.out").read_bytes()


def test_file_floors_are_measured_and_the_scratch_file_removed(cp, tmp_path):
    from cudalab.labs.fw import nthu_gpu

    nthu.write_case(tmp_path / "c.in", 50, nthu.generate_case(50, 0.1, seed=1))
    floors = nthu_gpu.file_floors(tmp_path / "c.in", 4 * 50 * 50, tmp_path / "scratch.bin")
    assert floors["fromfile_ms"] > 0 and floors["host_write_ms"] > 0 and not (tmp_path / "scratch.bin").exists()


def test_a_bad_edge_found_on_the_device_is_the_host_checks_error_and_writes_nothing(cp, tmp_path):
    from cudalab.core.errors import CaseFormatError
    from cudalab.labs.fw import nthu_gpu

    edges = nthu.generate_case(60, 0.1, seed=3)
    edges[17] = [4, 60, 5]  # dst out of range
    nthu.write_case(tmp_path / "bad.in", 60, edges)
    with pytest.raises(CaseFormatError) as on_host:
        nthu.read_case(tmp_path / "bad.in")
    with pytest.raises(CaseFormatError) as on_device:
        nthu_gpu.solve_file(tmp_path / "bad.in", tmp_path / "bad.out", kernels.KernelSpec("registers", 64).plan())
    assert str(on_device.value) == str(on_host.value) and "edge 17 at offset 212" in str(on_host.value)
    assert not (tmp_path / "bad.out").exists()


def test_weights_that_could_reach_unreachable_are_refused_as_the_host_refuses_them(cp, tmp_path):
    from cudalab.core.errors import CaseFormatError
    from cudalab.labs.fw import nthu_gpu

    heavy = nthu.max_weight_for(3) + 1  # two such edges in a row weigh 'unreachable' or more
    nthu.write_case(tmp_path / "heavy.in", 3, np.array([[0, 1, heavy], [1, 2, heavy]], dtype=np.int32))
    with pytest.raises(CaseFormatError, match="shortest path could weigh"):
        nthu_gpu.solve_file(tmp_path / "heavy.in", tmp_path / "heavy.out", kernels.KernelSpec("registers", 64).plan())
    assert not (tmp_path / "heavy.out").exists()


def test_precompile_fills_the_module_cache_before_first_use(cp):
    from cudalab.core import kernels as loader

    launches = kernels.minplus_phase_launches(64, dpx=False)
    builds = [x.build for x in launches]
    assert loader.precompile(builds + builds) == 1  # three phases, one build
    path = loader.kernel_path(kernels.MINPLUS_FILE)
    assert any(key[0] == str(path) and key[2][-1] == "-DNO_DPX" for key in loader._modules)


@pytest.mark.parametrize("bf", [256, 512])
def test_minplus_closes_a_deep_pivot_block_through_a_view_of_its_first_cell(cp, bf):
    """At BF 256 and 512 the inner solve's kernels (the BF 64 and BF 128 builds) get a view of the
    pivot block (CuPy passes its first cell's address) and index it with the matrix's row length:
    the block must come out closed."""
    n = 2 * bf
    rng = np.random.default_rng(3)
    mat = np.where(rng.random((n, n)) < 0.05, rng.integers(0, 100, (n, n)), NO_EDGE).astype(np.int32)
    np.fill_diagonal(mat, 0)
    plan = kernels.minplus_plan(bf, lookahead=False)
    work = plans.to_blocked(cp.asarray(mat), bf)
    for step in plan.closing(work, 1):  # round 1's pivot block only
        step.kernel(step.grid, step.block, step.args, shared_mem=step.shared_mem)
    block = np.where(mat[bf:, bf:] < 0, plans.INF, mat[bf:, bf:]).astype(np.int64)
    for k in range(bf):
        np.minimum(block, block[:, k, None] + block[None, k, :], out=block)
    np.testing.assert_array_equal(cp.asnumpy(work[bf:, bf:]), block)
    np.testing.assert_array_equal(cp.asnumpy(work[:bf]), np.where(mat[:bf] < 0, plans.INF, mat[:bf]))


@pytest.mark.parametrize("lookahead", [True, False])
def test_minplus_deepest_rounds_match_cpu(cp, rng, lookahead):
    """BF 512: three rounds (1100 vertices padded to 1536), so that a look-ahead lane relaxes the
    strips of a round that is neither the first nor the last, each pivot block closed by an inner
    solve of its 4 x 4 tiles of 128."""
    mat = random_graph(rng, 1100, 0.02, 1000)
    plan = kernels.variant("min-plus BF 512", lambda: kernels.minplus_plan(512, lookahead=lookahead))
    got, _ = fw.solve_once(plan, mat)
    np.testing.assert_array_equal(got, floyd_warshall_c(mat))


def test_lookahead_solves_as_plain_launches_on_large_matrices_and_as_a_graph_below(cp):
    plan = kernels.minplus_plan(64)
    small, large = cp.zeros((128, 128), dtype=cp.int32), cp.zeros((4096, 4096), dtype=cp.int32)
    assert fw.Solver(plan, small).launch_mode == "cuda-graph"
    assert fw.Solver(plan, large).launch_mode == "stream"
