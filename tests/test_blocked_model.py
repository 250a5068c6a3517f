"""Chapter 04's pure parts: padding, the ladder's order, the traffic model, the ceiling's closed form,
and every build variant of the blocked kernels compiling with nvcc."""

import shutil

import numpy as np
import pandas as pd
import pytest

from cudalab.core.errors import LaunchRefused
from cudalab.core.launch import Dim3, Launch
from cudalab.labs import int_ceiling
from cudalab.labs.fw.blocked import kernels, models, plans, variants
from cudalab.labs.fw.blocked.ladder import OPTIMIZATION_STEPS
from cudalab.toolchain.nvcc import nvcc_check

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")


@pytest.mark.parametrize("n,bf,want", [(1, 64, 64), (64, 64, 64), (65, 64, 128), (100, 8, 104), (12000, 64, 12032)])
def test_padded_size(n, bf, want):
    assert plans.padded_size(n, bf) == want


def test_a_matrix_beyond_int32_indices_is_refused_with_the_reason():
    from cudalab.core.launch import LaunchRefused

    plans.require_int32_indexable(46336)
    with pytest.raises(LaunchRefused, match="more than 2\\^31 entries"):
        plans.require_int32_indexable(46400)


def test_ladder_is_the_labs_seven_steps_in_order():
    assert [s.step for s in OPTIMIZATION_STEPS] == list(range(1, 8))
    assert [s.name for s in OPTIMIZATION_STEPS][0] == "GPU baseline" and OPTIMIZATION_STEPS[
        -1
    ].name == "Occupancy optimization"
    assert [s.bf for s in OPTIMIZATION_STEPS] == [32] * 5 + [64] * 2


def test_traffic_model_counts_phase3_tiles():
    m = models.traffic_model(256, 64)  # R = 4 rounds, 9 phase-3 tiles per round
    tiles = 4 * 9
    assert m["relaxations"] == 64**3 * tiles
    assert m["global_load_bytes"] == 4 * 3 * 64 * 64 * tiles and m["global_store_bytes"] == 4 * 64 * 64 * tiles
    assert m["shared_load_bytes"] == 4 * 2 * 64**3 * tiles
    assert models.traffic_model(256, 64, 0.5)["shared_load_bytes"] == m["shared_load_bytes"] / 4
    # a larger blocking factor moves fewer global bytes for the same work
    assert models.traffic_model(1024, 64)["global_load_bytes"] < models.traffic_model(1024, 16)["global_load_bytes"]


def test_ceiling_closed_form_matches_a_direct_simulation():
    iters, x, y = 50, 3, 100
    sums = int_ceiling.expected_sums(2, 4, iters, x, y)
    direct = []
    for _block in range(2):
        for tid in range(4):
            acc = [tid + c for c in range(int_ceiling.CHAINS)]
            for _ in range(iters):
                acc = [min(a + x, y + c) for c, a in enumerate(acc)]
            direct.append(sum(acc))
    np.testing.assert_array_equal(sums, direct)


@needs_nvcc
@pytest.mark.parametrize(
    "label,filename,options",
    variants.sass_builds([8, 16, 32, 64, 128], [64, 128]),
    ids=lambda v: v if isinstance(v, str) else " ".join(v),
)
def test_every_build_variant_compiles(label, filename, options):
    usages = nvcc_check(filename, arch="sm_90", options=options)
    assert usages and all(u.registers > 0 for u in usages)


def test_ladder_steps_change_one_build_option_at_a_time():
    """Each ladder step differs from the one before by one build option or file (the lab's method)."""
    for before, after in zip(OPTIMIZATION_STEPS, OPTIMIZATION_STEPS[1:]):
        if before.file == after.file:
            assert len(set(before.options) ^ set(after.options)) <= 2, (before.name, after.name)


@pytest.mark.parametrize(
    "text,spec",
    [
        ("registers:64", kernels.KernelSpec("registers", 64)),
        ("registers:128:t8", kernels.KernelSpec("registers", 128, True, 8)),
        ("registers:64:t8:nodpx", kernels.KernelSpec("registers", 64, False, 8)),
        ("shared:32", kernels.KernelSpec("shared", 32)),
    ],
)
def test_a_kernel_spec_reads_and_writes_its_text(text, spec):
    assert kernels.KernelSpec.parse(text) == spec and spec.as_text() == text


@pytest.mark.parametrize("text", ["registers:64:t6", "shared:32:t8", "registers:x", "global:32", "registers:64:fast"])
def test_a_bad_kernel_spec_is_refused_with_the_forms_it_takes(text):
    with pytest.raises(LaunchRefused, match="registers:BF"):
        kernels.KernelSpec.parse(text)


def test_the_register_tile_sets_the_phase_3_block_and_options():
    launch = kernels.registers_phase_launches(128, True, 8)[2]
    assert launch.block == Dim3(16, 16) and launch.threads == 256 and "-DTILE=8" in launch.options
    assert launch.labels == {"phase": "phase 3"} and launch.tunables == {"block_factor": 128, "dpx": True, "tile": 8}
    assert "-DTILE=4" not in kernels.registers_phase_launches(64)[2].options, "4 x 4 builds as before"
    row = pd.Series({"kernel": "registers", "block_factor": 128.0, "dpx": True, "tile": 8.0})
    assert kernels.KernelSpec.from_row(row) == kernels.KernelSpec("registers", 128, True, 8)
    old = pd.Series({"kernel": "registers", "block_factor": 64.0, "dpx": True})
    assert kernels.KernelSpec.from_row(old).tile == 4


def test_a_sweep_point_expected_over_budget_is_chosen_by_its_time_at_a_smaller_n():
    from cudalab.labs.fw.harness import expected_s

    rows = [
        {"variant": "shared BF 8", "n": 8192, "status": "ok", "time_ms": 650.0},
        {"variant": "shared BF 8", "n": 4096, "status": "ok", "time_ms": 81.0},
        {"variant": "registers", "n": 8192, "status": "wrong", "time_ms": 1.0},
    ]
    assert expected_s(rows, "shared BF 8", 16384) == pytest.approx(5.2)  # from the largest smaller n, as n^3
    assert expected_s(rows, "registers", 16384) is None, "a wrong result predicts nothing"
    assert expected_s(rows, "shared BF 8", 4096) is None


@pytest.mark.parametrize(
    "text,spec",
    [
        ("minplus:64", kernels.KernelSpec("minplus", 64, True, 8)),
        ("minplus:128:nodpx", kernels.KernelSpec("minplus", 128, False, 8)),
        ("minplus:256", kernels.KernelSpec("minplus", 256, True, 8)),
        ("minplus:512:nodpx", kernels.KernelSpec("minplus", 512, False, 8)),
    ],
)
def test_minplus_kernel_spec_round_trips(text, spec):
    assert kernels.KernelSpec.parse(text) == spec and spec.as_text() == text
    assert spec.label().startswith("min-plus BF")


@pytest.mark.parametrize("text", ["minplus:32", "minplus:64:t4", "minplus:1024"])
def test_minplus_kernel_spec_refuses_what_the_file_does_not_build(text):
    with pytest.raises(LaunchRefused):
        kernels.KernelSpec.parse(text)


def test_minplus_launches_match_the_kernel_file():
    """Phase 1 on 32 x 32 threads without dynamic shared memory; phases 2 and 3 on 8 x 8 threads
    (tiles of 64 at every BF) with two stages of a 16-deep chunk of A (transposed, rows padded by
    4) and of B (rows padded by 16), and the C tile; at BF 256 phase 1's kernel is the BF 64 build's,
    at BF 512 the BF 128 build's (four rounds of closing either way)."""
    p1, p2, p3 = kernels.minplus_phase_launches(128)
    assert all(isinstance(p, Launch) and p.grid is None for p in (p1, p2, p3))
    assert (p1.block, p1.dynamic_shared_bytes) == (Dim3(32, 32), 0)
    assert p2.block == p3.block == Dim3(8, 8)
    assert p3.dynamic_shared_bytes == 4 * (2 * (16 * 68 + 16 * 80) + 64 * 64)
    assert {p.options for p in (p1, p2, p3)} == {("-DBF=128",)}
    assert [p.labels["phase"] for p in (p1, p2, p3)] == ["phase 1", "phase 2", "phase 3"]
    assert p3.arguments[-1] == "part" and p3.tunables == {"block_factor": 128, "dpx": True, "tile": 8}
    assert kernels.minplus_phase_launches(64, dpx=False)[2].options == ("-DBF=64", "-DNO_DPX")
    q1, q2, q3 = kernels.minplus_phase_launches(256)
    assert q1.options == ("-DBF=64",) and q2.options == q3.options == ("-DBF=256",)
    grids = kernels.minplus_grids(256)
    assert (grids["phase 2"](32), grids["phase 3"](32)) == ((128, 8), (128, 128))
    r1, r2, r3 = kernels.minplus_phase_launches(512)
    assert r1.options == ("-DBF=128",) and r2.options == r3.options == ("-DBF=512",)
    assert [kernels.minplus_closing_bf(b) for b in (64, 128, 256, 512)] == [None, None, 64, 128]
    assert r3.dynamic_shared_bytes == p3.dynamic_shared_bytes, "a deeper round costs no shared memory"
    with pytest.raises(LaunchRefused):
        kernels.minplus_phase_launches(32)


def test_operand_model_counts_loads_and_relaxations_per_thread_and_k():
    shared = models.operand_model("shared", 64)
    assert (shared["cells_per_thread"], shared["shared_loads_per_k"]) == (4, 8)
    r4, r8, mp = (
        models.operand_model("registers", 64, 4),
        models.operand_model("registers", 64, 8),
        models.operand_model("min-plus", 128),
    )
    assert (r4["shared_loads_per_k"], r4["relaxations_per_k"], r4["relaxations_per_shared_load"]) == (2, 16, 8)
    assert (r8["shared_loads_per_k"], r8["relaxations_per_k"], r8["relaxations_per_shared_load"]) == (4, 64, 16)
    assert mp["relaxations_per_shared_load"] == 16 and mp["dram_bytes_per_relaxation"] == 8 / 128


def test_operand_table_reads_the_sweep_and_names_the_fastest_per_n():
    sweep = pd.DataFrame(
        [
            {
                "n": 8192,
                "variant": "shared BF 32",
                "kernel": "shared",
                "block_factor": 32,
                "time_ms": 150.0,
                "status": "ok",
            },
            {
                "n": 8192,
                "variant": "shared BF 64",
                "kernel": "shared",
                "block_factor": 64,
                "time_ms": 69.0,
                "status": "ok",
            },
            {
                "n": 8192,
                "variant": "registers BF 64, 8x8 + DPX",
                "kernel": "registers",
                "block_factor": 64,
                "tile": 8,
                "dpx": True,
                "time_ms": 53.0,
                "status": "ok",
            },
            {
                "n": 8192,
                "variant": "min-plus BF 64, 8x8 + DPX",
                "kernel": "min-plus",
                "block_factor": 64,
                "tile": 8,
                "dpx": True,
                "time_ms": 42.0,
                "status": "wrong",
            },
            {
                "n": 8192,
                "variant": "min-plus BF 128, 8x8 + DPX",
                "kernel": "min-plus",
                "block_factor": 128,
                "tile": 8,
                "dpx": True,
                "time_ms": 45.0,
                "status": "ok",
            },
        ]
    )
    table = models.operand_table(models.with_rates(sweep, 16e12))
    assert list(table["variant"]) == ["shared BF 64", "registers BF 64, 8x8 + DPX", "min-plus BF 128, 8x8 + DPX"]
    assert table.loc[2, "fraction_at_8192"] == pytest.approx(8192**3 / 45e-3 / 16e12)
    # a wrong result is never the best, however fast
    assert table.attrs["best"][8192]["variant"] == "min-plus BF 128, 8x8 + DPX"
    assert models.kernel_label(sweep.iloc[2]) == "registers 8x8 + DPX"
    assert (
        models.kernel_label(pd.Series({"kernel": "registers", "tile": float("nan"), "dpx": False})) == "registers 4x4"
    )


def _emulate(schedule, d: np.ndarray, tile: int, lane_first: int) -> list[str]:
    """Runs a min-plus schedule on the host, block by block as fw_blocked_minplus.cu's kernels
    compute it (each launch's grid, its matrix argument, possibly a view at a pivot block's first
    cell, and its round); between two meetings of the lanes, all of lane ``lane_first`` runs
    before the other's. Returns the races: each pair of launches on the two lanes between two
    meetings where one writes a cell the other reads or writes (a launch's own blocks may race,
    as phase 2's do by design: not counted). Run whole, one launch after another, a schedule can
    give the right answer whatever its lanes race on; these pairs are what a GPU would run at
    once."""
    from cudalab.labs.fw import harness as fw

    def run(x) -> tuple[np.ndarray, np.ndarray]:
        """Runs one launch; the cells it reads and the cells it writes."""
        m, r = x.args[0], int(x.args[2])
        offset = (m.__array_interface__["data"][0] - d.__array_interface__["data"][0]) // d.itemsize
        top, left = divmod(offset, d.shape[1])  # where a view at a pivot block starts
        reads, writes = np.zeros(d.shape, bool), np.zeros(d.shape, bool)
        read_here, write_here = reads[top:, left:], writes[top:, left:]

        def product(a, b, c):  # cells c = min(c, a (x) b), every read before the write
            m[c] = np.minimum(m[c], (m[a][:, :, None] + m[b][None, :, :]).min(axis=1))
            read_here[a] = read_here[b] = read_here[c] = write_here[c] = True

        bf = x.launch.tunables["block_factor"]
        s, (gx, gy) = bf // tile, x.grid[:2]
        rows = lambda i: slice(i * tile, (i + 1) * tile)  # noqa: E731
        strip = slice(r * bf, (r + 1) * bf)
        if x.launch.kernel.endswith("phase1"):
            p = m[strip, strip]
            for k in range(bf):
                np.minimum(p, p[:, k, None] + p[None, k, :], out=p)
            read_here[strip, strip] = write_here[strip, strip] = True
            return reads, writes
        for t in range(gx):
            for y in range(gy):
                if x.launch.kernel.endswith("phase2"):
                    if t // s == r:
                        continue
                    if y < s:  # piece y of the pivot row's strip at column tile t
                        own = slice(r * bf + y * tile, r * bf + (y + 1) * tile)
                        product((own, strip), (strip, rows(t)), (own, rows(t)))
                    else:  # piece y - s of the pivot column's strip at row tile t
                        own = slice(r * bf + (y - s) * tile, r * bf + (y - s + 1) * tile)
                        product((rows(t), strip), (strip, own), (rows(t), own))
                    continue
                part = int(x.args[3])
                if part == 1:  # the look-ahead's strips r + 1
                    if t // s == r or (y >= s and t // s == r + 1):
                        continue
                    ti, tj = ((r + 1) * s + y, t) if y < s else (t, (r + 1) * s + y - s)
                else:
                    ti, tj = y, t
                    if r in (ti // s, tj // s) or (part == 2 and r + 1 in (ti // s, tj // s)):
                        continue
                product((rows(ti), strip), (strip, rows(tj)), (rows(ti), rows(tj)))
        return reads, writes

    races: list[str] = []
    segment: list = []
    for x in list(schedule) + [fw.LANES_MEET]:
        if not isinstance(x, fw.LanesMeet):
            segment.append(x)
            continue
        done = [(launch, *run(launch)) for launch in sorted(segment, key=lambda y: y.lane != lane_first)]
        for x1, reads1, writes1 in (y for y in done if y[0].lane == 1):
            for x0, reads0, writes0 in (y for y in done if y[0].lane == 0):
                if (writes0 & (reads1 | writes1)).any() or (writes1 & reads0).any():
                    races.append(f"{_named(x0)} beside {_named(x1)}")
        segment = []
    return races


def _named(x) -> str:
    """A launch as a race names it: its kernel and its integer arguments (round, part)."""
    return f"{x.launch.kernel}{tuple(int(a) for a in x.args[2:])}"


def _emulated_plan(bf: int, tile: int, lookahead: bool, inner_bf: int | None = None) -> plans.LookaheadPlan:
    """``kernels.minplus_plan``'s structure over host stand-ins for its kernels, tiles of ``tile``,
    a deep pivot block closed by the build of BF ``inner_bf`` (None: ``tile``)."""

    def phases(b: int, label: str | None = None):
        grids = kernels.minplus_grids(b, tile)
        out = []
        for p in (1, 2, 3):
            launch = Launch(
                "none.cu",
                f"fw_minplus_phase{p}",
                Dim3(1),
                tunables={"block_factor": b},
                labels={"phase": label or f"phase {p}"},
            )
            args = {"args": lambda w, m, r: (w, m, r, 0)} if p == 3 else {}
            out.append(plans.Phase(launch, None, grids[f"phase {p}"], **args))
        return tuple(out)

    inner = phases(inner_bf or tile, "phase 1") if bf > 2 * tile else None
    return plans.LookaheadPlan(bf, phases(bf), tile=tile, inner=inner, lookahead=lookahead, inner_bf=inner_bf)


@pytest.mark.parametrize("lane_first", [0, 1])
@pytest.mark.parametrize("rounds", [1, 2, 3])
@pytest.mark.parametrize(
    "bf,lookahead,inner_bf", [(2, True, None), (4, True, None), (8, True, None), (8, False, None), (16, True, 4)]
)
def test_minplus_schedule_solves_whichever_lane_runs_first(bf, lookahead, inner_bf, rounds, lane_first):
    """The min-plus plan's launches, run block by block as the kernels index their tiles (here
    tiles of 2 cells, so BF 2, 4, 8 and 16 stand for BF 64, 128, 256 and 512, whose pivot block is
    closed by an inner blocked solve: of its tiles at 256, of its 128-deep sub-rounds at 512,
    as ``kernels.minplus_closing_bf`` chooses), give Floyd-Warshall's answer, zero-weight edges and
    unreachable pairs included, and the look-ahead's lanes never touch what the other writes
    between two meetings (the emulator's race check): either lane's work may run first, or both
    at once."""
    from cudalab.labs.fw.reference import floyd_warshall_numpy

    tile, rng = 2, np.random.default_rng([bf, rounds])
    n = bf * rounds
    # sparse costly edges, and a path through every vertex in a random order, cheaper than any
    # of them: shortest paths that cross the blocks in many orders
    lab = np.where(rng.random((n, n)) < 0.1, rng.integers(n, 2 * n, (n, n)), -1).astype(np.int32)
    order = rng.permutation(n)
    lab[order[:-1], order[1:]] = rng.integers(0, 2, n - 1)
    np.fill_diagonal(lab, 0)
    work = np.where(lab < 0, plans.INF, lab).astype(np.int64)
    schedule = list(_emulated_plan(bf, tile, lookahead, inner_bf).launches(work))
    closing = 3 * (bf // (inner_bf or tile)) if bf > 2 * tile else 1  # launches that close one pivot block
    if lookahead:
        assert sum(1 for x in schedule if getattr(x, "lane", 0) == 1) == (closing + 2) * (rounds - 1) + closing + 1
    assert _emulate(schedule, work, tile, lane_first) == []
    np.testing.assert_array_equal(np.where(work >= plans.INF, -1, work), floyd_warshall_numpy(lab))
