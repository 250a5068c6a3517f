"""K-means without a GPU: the classic file formats, the classic sequential code, the float64 reference."""

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from cudalab.core.errors import CaseFormatError
from cudalab.core.paths import ROOT
from cudalab.labs.kmeans import files, reference


def classic_in_python(points: np.ndarray, k: int, threshold: float = 0.001, max_loop: int = 500):
    """Liao's seq_kmeans written again, in float32 NumPy scalars: an independent check of the C."""
    pts = points.astype(np.float32)
    n, d = pts.shape
    centres = pts[:k].copy()
    membership = np.full(n, -1)
    loop = 0
    while True:
        delta = np.float32(0)
        sums = np.zeros((k, d), dtype=np.float32)
        sizes = np.zeros(k, dtype=np.int64)
        for i in range(n):
            dist = np.zeros(k, dtype=np.float32)
            for c in range(k):
                acc = np.float32(0)
                for j in range(d):
                    diff = np.float32(pts[i, j] - centres[c, j])
                    acc = np.float32(acc + np.float32(diff * diff))
                dist[c] = acc
            index = int(np.argmin(dist))  # the first of equal minima: ties to the lowest index
            if membership[i] != index:
                delta = np.float32(delta + np.float32(1))
            membership[i] = index
            sizes[index] += 1
            for j in range(d):
                sums[index, j] = np.float32(sums[index, j] + pts[i, j])
        for c in range(k):
            if sizes[c] > 0:
                centres[c] = (sums[c] / np.float32(sizes[c])).astype(np.float32)
        delta = np.float32(delta / np.float32(n))
        if not (delta > np.float32(threshold) and loop < max_loop):
            break
        loop += 1
    return centres, membership, loop + 1


@pytest.mark.parametrize("n,d,k,seed", [(60, 3, 4, 1), (97, 2, 5, 2), (40, 1, 3, 3), (30, 4, 1, 4)])
def test_the_c_code_is_the_classic_algorithm(n, d, k, seed):
    points = reference.blobs(n, d, k, seed, spread=3.0)
    got = reference.classic(points, k)
    centres, membership, iterations = classic_in_python(points, k)
    assert got.iterations == iterations
    assert (got.membership == membership).all()
    assert np.array_equal(got.centres, centres)


def test_an_empty_cluster_keeps_its_centre():
    points = np.array([[0.0], [0.0], [10.0], [10.1]], dtype=np.float32)  # centres 0 and 0: the second never wins
    got = reference.classic(points, 2)
    assert (got.membership == [0, 0, 0, 0]).all() or got.centres[1, 0] == 0.0
    assert got.centres[1, 0] == 0.0  # cluster 1 started at the second object and stayed empty (ties go to 0)


def test_float64_reference_assigns_and_measures_ties():
    points = np.array([[0.0, 0.0], [1.0, 0.0], [5.0, 5.0]])
    centres = np.array([[0.0, 0.0], [2.0, 0.0]])
    membership, gap = reference.assign64(points, centres)
    assert membership.tolist() == [0, 0, 1]  # (1, 0) is equidistant: the lowest index
    assert gap[1] == 0.0 and gap[0] == 1.0
    means = reference.means64(points, np.array([0, 0, 0]), centres)
    assert np.allclose(means[0], [2.0, 5.0 / 3.0]) and (means[1] == centres[1]).all()


def test_binary_and_text_round_trip(tmp_path):
    points = reference.blobs(50, 3, 4, 7)
    files.write_binary(tmp_path / "p.bin", points)
    assert np.array_equal(files.read(tmp_path / "p.bin", binary=True), points)
    files.write_text(tmp_path / "p.txt", points)
    assert np.allclose(files.read(tmp_path / "p.txt", binary=False), points, atol=5e-7)
    centres, membership = points[:4], np.arange(50) % 4
    c_path, m_path = files.write_outputs(tmp_path / "p.txt", centres, membership)
    assert c_path.name == "p.txt.cluster_centres" and m_path.name == "p.txt.membership"
    assert c_path.read_text().splitlines()[0].startswith("0 ") and m_path.read_text().splitlines()[3] == "3 3"
    assert np.allclose(files.read_centres(c_path), centres, atol=5e-7)
    assert (files.read_membership(m_path) == membership).all()


def _binary(tmp_path, header, values, name="bad.bin"):
    path = tmp_path / name
    path.write_bytes(np.array(header, dtype="<i4").tobytes() + np.asarray(values, dtype="<f4").tobytes())
    return path


@pytest.mark.parametrize(
    "header,values,message",
    [
        ((3, 2), [1, 2, 3, 4, 5], r"should be 32 bytes; it is 28: truncated: the data ends inside object 2"),
        ((2, 2), [1, 2, 3, 4, 5], r"4 bytes follow the last object \(from byte offset 24\)"),
        ((0, 2), [], r"N = 0 objects; N must be at least 1"),
        ((2, -1), [], r"D = -1 coordinates"),
        ((2, 2), [1, np.nan, 3, 4], r"object 0, coordinate 1 \(byte offset 12\): value nan is not a finite number"),
        ((2, 2), [1, 2, np.inf, 4], r"object 1, coordinate 0"),
        ((1 << 30, 1 << 10), [], r"more than this reader accepts"),
    ],
)
def test_malformed_binary_files_are_refused_with_the_offset(tmp_path, header, values, message):
    with pytest.raises(CaseFormatError, match=message) as err:
        files.read(_binary(tmp_path, header, values), binary=True)
    assert "bad.bin" in str(err.value)


def test_a_binary_file_shorter_than_its_header(tmp_path):
    (tmp_path / "tiny.bin").write_bytes(b"\x01\x00")
    with pytest.raises(CaseFormatError, match="2 bytes; a binary input starts with two int32"):
        files.read(tmp_path / "tiny.bin", binary=True)


@pytest.mark.parametrize(
    "text,message",
    [
        ("0 1.0 2.0\n1 3.0\n", r"bad.txt:2: 1 values where the first object has 2"),
        ("0 1.0 x\n", r"bad.txt:1: 'x' is not a number"),
        ("0 1.0 nan\n", r"object 0, coordinate 1: value nan is not a finite number"),
        ("0 1e39 1\n", r"beyond float32's range"),
        ("\n\n", r"no objects"),
        ("7\n", r"bad.txt:1: an object is an id followed by its coordinates"),
    ],
)
def test_malformed_text_files_are_refused_with_the_line(tmp_path, text, message):
    (tmp_path / "bad.txt").write_text(text)
    with pytest.raises(CaseFormatError, match=message):
        files.read(tmp_path / "bad.txt", binary=False)


@pytest.mark.parametrize(
    "k,message",
    [
        (0, "K = 0 clusters; K must be at least 1"),
        (-3, "K must be at least 1"),
        (5, "K = 5 clusters but only 4 objects"),
    ],
)
def test_k_outside_1_to_n_is_refused(k, message):
    with pytest.raises(CaseFormatError, match=message):
        reference.classic(np.zeros((4, 2), dtype=np.float32), k)


def test_random_and_bit_flipped_binary_files_get_a_clean_answer(tmp_path):
    """Truncated and bit-flipped files: a clean CaseFormatError, or finite points of the right shape.
    Both outcomes are counted: a reader that refused every file (the bug this catches, with one
    that let a NaN or a wrong shape through) would pass the loop alone."""
    rng = np.random.default_rng(0)
    good = _binary(tmp_path, (20, 3), rng.uniform(-1, 1, 60), "good.bin").read_bytes()
    assert files.read(tmp_path / "good.bin", binary=True).shape == (20, 3)
    accepted = refused = 0
    for trial in range(200):
        data = bytearray(good)
        if trial % 3 == 0:
            data = data[: rng.integers(0, len(data))]
        else:
            for _ in range(rng.integers(1, 4)):
                pos = rng.integers(0, len(data))
                data[pos] ^= 1 << int(rng.integers(0, 8))
        path = tmp_path / f"fuzz{trial}.bin"
        path.write_bytes(bytes(data))
        try:
            points = files.read(path, binary=True)
        except CaseFormatError:
            refused += 1
            continue
        accepted += 1
        assert np.isfinite(points).all() and points.shape == (20, 3)
    assert accepted >= 40 and refused >= 40, (accepted, refused)


def run_face(*args):
    return subprocess.run(
        [sys.executable, "-m", "cudalab.kmeans", *args], cwd=ROOT, capture_output=True, text=True, timeout=120
    )


def test_the_command_reproduces_the_classic_code_on_the_cpu(tmp_path):
    points = reference.blobs(500, 4, 6, 11)
    files.write_binary(tmp_path / "blobs.bin", points)
    proc = run_face("-i", str(tmp_path / "blobs.bin"), "-n", "6", "-b", "--cpu")
    assert proc.returncode == 0, proc.stderr
    expected = reference.classic(points, 6)
    assert f"iterations: {expected.iterations}" in proc.stdout
    assert (files.read_membership(tmp_path / "blobs.bin.membership") == expected.membership).all()
    printed = (tmp_path / "blobs.bin.cluster_centres").read_text().splitlines()[0].split()[1:]
    assert printed == [f"{v:f}" for v in expected.centres[0]]


def test_the_command_refuses_bad_requests_without_a_traceback(tmp_path):
    files.write_binary(tmp_path / "p.bin", reference.blobs(10, 2, 2, 1))
    for args, message in [
        (("-n", "11", "-b"), "K = 11 clusters but only 10 objects"),
        (("-n", "0", "-b"), "K must be at least 1"),
        (("-n", "2"), "is not a number (a binary file? read it with -b)"),
        (("-n", "2", "-b", "-t", "2"), "threshold is a fraction"),
        (("-n", "2", "-b", "--variant", "tensorr"), "unknown variant 'tensorr'; variants: host_update"),
    ]:
        proc = run_face("-i", str(tmp_path / "p.bin"), *args, "--cpu")
        assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    proc = run_face("-i", str(tmp_path / "p.bin.membership"), "-n", "2", "-o", str(tmp_path / "p.bin"), "--cpu")
    assert proc.returncode == 2 and proc.stderr == f"error: {tmp_path / 'p.bin.membership'}: no such file\n", (
        proc.stderr
    )
    proc = run_face("-i", str(tmp_path), "-n", "2", "--cpu")
    assert proc.returncode == 2 and "a folder, not a file" in proc.stderr and "Traceback" not in proc.stderr


def test_the_chosen_kernel_is_the_fastest_of_ours_that_ran_correctly():
    from cudalab.labs.kmeans import chapter

    rows = [  # (k, variant, ms, status): a made-up per-iteration table, to test the choice alone
        (8, "fused", 0.33, "ok"),
        (8, "tiled", 0.39, "ok"),
        (8, "fixed", 0.30, "wrong"),  # fastest but wrong: never chosen
        (8, "cupy", 0.10, "ok"),  # not ours: never chosen
        (32, "tiled", 0.39, "ok"),
        (32, "fixed", 0.25, "ok"),
        (64, "fused", float("nan"), "skipped"),
    ]
    per_it = pd.DataFrame(
        [{"n": 1000, "d": 32, "k": k, "variant": v, "time_ms": t, "status": s} for k, v, t, s in rows]
    )
    table = chapter.chosen(per_it).set_index("k")
    assert table.loc[8, "variant"] == "fused" and table.loc[8, "runner_up"] == "tiled"
    assert table.loc[8, "margin"] == pytest.approx(0.39 / 0.33)
    assert table.loc[32, "variant"] == "fixed" and table.loc[32, "candidates"] == 2
    assert table.loc[64, "variant"] == "" and np.isnan(table.loc[64, "time_ms"])


def test_the_fixed_point_kernels_plan_and_scale_need_no_gpu():
    from cudalab.labs.kmeans import gpu

    tiled, fixed = gpu.tiled_shape(32, 32), gpu.fixed_shape(32, 32)
    assert fixed["dynamic_bytes"] - tiled["dynamic_bytes"] == 4 * 4 * 32 * 32  # 4 warps' sums, 4 more bytes each
    assert gpu.refusal("fixed", 32, 128, optin=227 * 1024) == ""
    assert "int64 sums" in gpu.refusal("fixed", 32, 128, optin=64 * 1024)
    for n, top in [(4194304, 15.0), (17695, 1.0), (1, 3e38), (100, 1e-30)]:
        assert n * top * 2.0 ** gpu.fixed_point_bits(n, top) < 2.0**62
    assert gpu.fixed_point_bits(4194304, 15.0) >= 30  # exact sums: a float32 of magnitude ~1 keeps all 24 bits


def test_the_register_kernels_plan_and_refusals_need_no_gpu():
    from cudalab.labs.kmeans import gpu

    plan = gpu.dot_shape(32, 32)
    assert plan["PPT"] == 2 and plan["THREADS"] == 128
    # centres 32 x 32, norms 32, low and high words 2 x 32 x 32, sizes 32, 4 warps x 32 rows x 36
    assert plan["dynamic_bytes"] == 4 * (32 * 32 + 32 + 2 * 32 * 32 + 32 + 4 * 32 * 36)
    assert gpu.dot_shape(5, 7)["dynamic_bytes"] == 4 * (7 * 8 + 8 + 2 * 36 + 8 + 4 * 32 * 12)
    assert gpu.dot_shape(65, 8)["PPT"] == 1 and gpu.dot_shape(64, 8)["PPT"] == 2
    assert gpu.refusal("dot", 32, 128, optin=227 * 1024) == ""
    assert gpu.refusal("dot", 1, 1, optin=48 * 1024) == ""
    assert "exceeds the 128" in gpu.refusal("dot", 129, 4, optin=227 * 1024)
    assert "a block may have" in gpu.refusal("dot", 128, 128, optin=227 * 1024)
    launch = gpu.stage_launches("dot", 4194304, 32, 32, optin=227 * 1024)
    assert launch["pass"].kernel == "kmeans_dot" and "-DPPT=2" in launch["pass"].options
    assert launch["finalize"].kernel == "kmeans_fixed_finalize"
    assert "dot" in gpu.LADDER and gpu.VARIANTS["dot"]


def test_the_tensor_core_kernels_plan_and_refusals_need_no_gpu():
    from cudalab.labs.kmeans import gpu

    # D = K = 32: 4 x 4 split fragments of 32 lanes x 16 bytes, 32 norms, a copy of the sums' low
    # and high words per quad, rows 32 words apart, copies 32 x 32 + 4 words apart
    plan = gpu.tensor_shape(32, 32)
    assert plan == {
        "THREADS": 256,
        "COPIES": 8,
        "MIN_WARPS": 16,
        "dynamic_bytes": 16 * 4 * 4 * 32 + 4 * 32 + 8 * 8 * (32 * 32 + 4),
    }
    # K = 7: padded to one tile of 8
    assert gpu.tensor_shape(5, 7) == {
        "THREADS": 256,
        "COPIES": 8,
        "MIN_WARPS": 16,
        "dynamic_bytes": 16 * 32 + 4 * 8 + 8 * 8 * (7 * 32 + 4),
    }
    # past K = 32, one copy (rows D + 1 words apart) in blocks of 128, and fewer warps for the scores
    assert gpu.tensor_shape(32, 33) == {
        "THREADS": 128,
        "COPIES": 1,
        "MIN_WARPS": 12,
        "dynamic_bytes": 16 * 5 * 4 * 32 + 4 * 40 + 8 * 33 * 33,
    }
    assert gpu.refusal("tensor", 32, 64, cc="9.0") == "" and gpu.refusal("tensor", 1, 1, cc="8.0") == ""
    assert "compute capability 8.0" in gpu.refusal("tensor", 32, 32, cc="7.5")
    assert "this GPU is 3.0" in gpu.refusal("tensor", 8, 8, cc="3.0")
    assert "K <= 64" in gpu.refusal("tensor", 32, 65, cc="9.0")
    assert "D <= 32" in gpu.refusal("tensor", 33, 8, cc="9.0")
    launch = gpu.stage_launches("tensor", 4194304, 32, 32, optin=227 * 1024)
    assert launch["pass"].kernel == "kmeans_tensor"
    assert {"-DK=32", "-DD=32", "-DTHREADS=256", "-DCOPIES=8", "-DMIN_WARPS=16"} <= set(launch["pass"].options)
    assert launch["pass"].dynamic_shared_bytes == gpu.tensor_shape(32, 32)["dynamic_bytes"]
    assert set(launch) == {"pass"}, "the pass's last block finalizes: no finalize launch"
    # on a lab GPU older than Ampere the tables leave it out; on the H100 they list it
    assert not any(g.kernel == "kmeans_tensor" for g in gpu.launches([(65536, 32, 32)], "7.5"))
    assert any(g.kernel == "kmeans_tensor" for g in gpu.launches([(65536, 32, 32)], "9.0"))


def _split_sums(values: list[int], bits: int) -> int:
    """What the tensor kernel's two words hold after split_add of every value, wrapping as 32-bit
    words do, read back as fixed_value does (high x 2^bits + low)."""
    low = sum(v & ((1 << bits) - 1) for v in values) % 2**32
    high = sum(v >> bits for v in values) % 2**32
    high = high - 2**32 if high >= 2**31 else high
    return high * 2**bits + low


@pytest.mark.parametrize("threads, copies, grid", [(256, 8, 264), (128, 1, 528), (256, 8, 1)])
@pytest.mark.parametrize("n", [1, 37, 255, 4096, 17_700, 4_194_304, 100_000_037])
def test_the_tensor_kernels_split_sums_stay_exact_at_the_most_adds_and_the_widest_values(n, threads, copies, grid):
    from cudalab.labs.kmeans import gpu

    # the widest values the scale allows: N x max|x| x 2^s <= 2^61, so max|round(x 2^s)| <= 2^61 / N + 1
    max_fixed = 2**61 // n + 1
    got_grid, bits = gpu.tensor_split(n, max_fixed, threads, copies, grid)
    steps = -(-n // (got_grid * threads))
    adds = steps * threads // copies
    assert got_grid >= grid
    if bits == 0:  # the carrying fallback, only where even one step per warp would overflow
        assert steps == 1 and n < 5000
        return
    assert 1 <= bits <= 31
    # every add of the same extreme value, and an alternating mix, sum exactly as 64-bit integers
    for values in ([max_fixed] * adds, [-max_fixed] * adds, [max_fixed, -max_fixed + 1, -1, 0] * (adds // 4)):
        assert _split_sums(values, bits) == sum(values)
    # and it took the smallest grid that fits: half of it would not (or it started there)
    if got_grid > grid:
        half = got_grid // 2
        half_adds = -(-n // (half * threads)) * threads // copies
        fits = [
            b for b in range(1, 32) if half_adds * ((1 << b) - 1) < 2**32 and half_adds * ((max_fixed >> b) + 1) < 2**31
        ]
        assert not fits


def test_the_split_bound_is_what_fails_past_it():
    # one add more than the low word's bound wraps, and the read-back sum is wrong
    bits = 20
    adds = (2**32 - 1) // ((1 << bits) - 1) + 1
    values = [(1 << bits) - 1] * adds
    assert _split_sums(values, bits) != sum(values)


def test_the_register_kernels_tunables_override_its_plan_and_are_refused_where_they_cannot_run():
    from cudalab.labs.kmeans import gpu

    assert gpu.dot_shape(32, 32) == {**gpu.dot_shape(32, 32, ppt=None, threads=None, cpair=None)}
    plan = gpu.dot_shape(32, 32, ppt=4, threads=256, cpair=1)
    assert (plan["PPT"], plan["THREADS"], plan["CPAIR"], plan["PREFETCH"]) == (4, 256, 1, 0)
    # 8 warps' staging rows instead of 4: 4 x 32 x 36 floats more
    assert plan["dynamic_bytes"] - gpu.dot_shape(32, 32)["dynamic_bytes"] == 4 * 4 * 32 * 36
    assert gpu.refusal("dot", 32, 32, optin=227 * 1024, tune={"ppt": 4, "threads": 256}) == ""
    assert gpu.refusal("dot", 12, 32, optin=227 * 1024, tune={"ppt": 8}) == ""
    assert "exceeds the 96" in gpu.refusal("dot", 16, 32, optin=227 * 1024, tune={"ppt": 8})
    assert "exceeds the 96" in gpu.refusal("dot", 32, 32, optin=227 * 1024, tune={"ppt": 8})  # it spills
    assert "exceeds the 128" in gpu.refusal("dot", 64, 32, optin=227 * 1024, tune={"ppt": 4})
    assert "PPT in" in gpu.refusal("dot", 32, 32, optin=227 * 1024, tune={"ppt": 3})
    assert "CPAIR" in gpu.refusal("dot", 32, 32, optin=227 * 1024, tune={"cpair": 3})
    assert gpu.refusal("dot", 32, 32, optin=227 * 1024, tune={"ppt": 2, "prefetch": 1}) == ""
    assert "x 2 (prefetch) = 256" in gpu.refusal("dot", 32, 32, optin=227 * 1024, tune={"ppt": 4, "prefetch": 1})
    assert "PREFETCH 0 or 1" in gpu.refusal("dot", 32, 32, optin=227 * 1024, tune={"prefetch": 2})
    assert "whole warps" in gpu.refusal("dot", 32, 32, optin=227 * 1024, tune={"threads": 100})
    assert "a block may have" in gpu.refusal("dot", 32, 128, optin=48 * 1024, tune={"threads": 1024})
    launch = gpu.stage_launches("dot", 4194304, 32, 32, optin=227 * 1024, tune={"ppt": 4, "threads": 256})
    assert {"-DPPT=4", "-DTHREADS=256", "-DCPAIR=2", "-DPREFETCH=0"} <= set(launch["pass"].options)
    assert (
        launch["pass"].threads == 256
        and launch["pass"].dynamic_shared_bytes == gpu.dot_shape(32, 32, 4, 256)["dynamic_bytes"]
    )
    with pytest.raises(ValueError, match="dot variant's"):
        gpu.Runner(None, "fixed", tune={"ppt": 4})


def test_the_image_features_are_real_varied_and_the_same_on_every_call():
    from cudalab.labs.kmeans import sample_data

    first, second = sample_data.image_features(), sample_data.image_features()
    assert {name: x.shape for name, x in first.items()} == {"colour": (19200, 9), "texture": (19200, 16)}
    for name, x in first.items():
        assert x.dtype == np.float32 and np.isfinite(x).all()
        assert np.array_equal(x, second[name])
        # a photograph, not noise or a flat image: many distinct points, spread over every coordinate
        assert len(np.unique(x, axis=0)) > 10000 and (x.std(axis=0) > 1e-3).all()
    colour = first["colour"]
    assert (colour[:, :3] >= 0).all() and (colour[:, :3] <= 1).all()  # the channel means, in [0, 1]


def test_a_loop_that_is_neither_host_nor_device_is_refused_before_any_work():
    from cudalab.labs.kmeans import gpu

    with pytest.raises(ValueError, match="auto, host or device"):
        gpu.run_to_convergence(None, "tensor", loop_on="sideways")


def test_the_read_floor_is_the_points_read_and_the_memberships_written_at_the_read_only_rate():
    """Issue 68: an iteration reads its points (N x D float32) and writes its memberships (N int32),
    so its floor is those bytes at chapter 00's read-only streaming rate, not the points alone at a
    device copy's rate (which moves each byte twice). A recording made before keeps its copy rate."""
    from cudalab.labs.kmeans import chapter

    n, d, k = 1 << 22, 32, 32
    stages = pd.DataFrame(
        [
            {"n": n, "d": d, "k": k, "variant": v, "iteration": i, "stage": "assign", "time_ms": t, "status": "ok",
             "reason": ""}
            for v, t in (("tensor", 0.15), ("cupy", 5.0))
            for i in range(3)
        ]
    )  # fmt: skip
    per_it = chapter.per_iteration(stages, pd.Series({"dram_read_GBps": 4800.0, "fp32_peak_GFLOPs": 66908.16}))
    floor_ms = (n * d * 4 + n * 4) / 4.8e12 * 1e3
    assert per_it["read_floor_ms"].tolist() == pytest.approx([floor_ms, floor_ms])
    tensor = per_it.set_index("variant").loc["tensor"]
    assert tensor["x_read_floor"] == pytest.approx(0.15 / floor_ms)
    assert tensor["speedup_over_cupy"] == pytest.approx(5.0 / 0.15)
    old_basis = pd.Series({"dram_GBps": 4168.0, "fp32_peak_GFLOPs": 66908.16})
    old = chapter.per_iteration(stages, old_basis)
    assert old["read_floor_ms"].iloc[0] == pytest.approx((n * d * 4 + n * 4) / 4.168e12 * 1e3)
    assert "earlier recording" in chapter.read_rate(old_basis)[1]
    assert "read-only" in chapter.read_rate(pd.Series({"dram_read_GBps": 1.0}))[1]


def test_the_floors_take_chapter_00s_read_only_ceiling(monkeypatch):
    from cudalab.labs import capabilities, ceilings_now
    from cudalab.labs.kmeans import chapter

    monkeypatch.setattr(capabilities, "present_spec", lambda: None)
    monkeypatch.setattr(capabilities, "fp32_peak_GFLOPs", lambda spec: 66908.16)
    monkeypatch.setattr(ceilings_now, "dram_read_now", lambda: pytest.fail("chapter 00's ceiling is here"))
    basis = chapter.floors_basis({"dram_read_Bps": 4.8e12, "dram_Bps": 4.1e12}).set_index("quantity")["value"]
    assert basis.to_dict() == {"dram_read_GBps": 4800.0, "fp32_peak_GFLOPs": 66908.16}
    # a run without chapter 00 measures the read-only ceiling now, and says so
    now = pd.DataFrame([{"value": 4700.0, "how": "read-only streaming kernel (read_stream.cu), measured now"}])
    monkeypatch.setattr(ceilings_now, "dram_read_now", lambda: now)
    table = chapter.floors_basis({})
    assert table.set_index("quantity").loc["dram_read_GBps", "value"] == 4700.0
    assert "measured now" in table.set_index("quantity").loc["dram_read_GBps", "how"]
