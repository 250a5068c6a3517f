"""Chapter 04's DPX pair (cudalab.labs.fw.blocked.dpx): which timings pair up, which count, and what
the chapter says of them, from frames shaped as the sweep, the ceiling and the SASS tables are."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from cudalab.labs.fw.blocked import dpx, kernels, variants


def _sweep(rows):
    return pd.DataFrame(
        [
            {
                "n": n,
                "variant": kernels.minplus_label(bf, d),
                "kernel": "min-plus 8x8" + (" + DPX" if d else ""),
                "block_factor": bf,
                "dpx": d,
                "time_ms": t,
                "status": s,
            }
            for n, bf, d, t, s in rows
        ]
        + [
            {
                "n": 4096,
                "variant": "shared BF 32",
                "kernel": "shared",
                "block_factor": 32,
                "dpx": float("nan"),
                "time_ms": 9.0,
                "status": "ok",
            }
        ]
    )


def _ceiling(plain_ms=2.0, dpx_ms=1.0, plain_status="ok"):
    relaxations = 1e12
    return pd.DataFrame(
        [
            {
                "kernel": "add_min_plain",
                "time_ms": plain_ms,
                "status": plain_status,
                "relaxations_per_s": relaxations / (plain_ms * 1e-3),
            },
            {
                "kernel": "add_min_dpx",
                "time_ms": dpx_ms,
                "status": "ok",
                "relaxations_per_s": relaxations / (dpx_ms * 1e-3),
            },
        ]
    )


def test_pairs_are_the_same_kernel_and_n_without_and_with_dpx():
    sweep = _sweep([(4096, 64, True, 10.0, "ok"), (4096, 64, False, 15.0, "ok"), (8192, 64, True, 80.0, "ok")])
    pairs = dpx.dpx_speedups(sweep, _ceiling())
    assert list(pairs["pair"]) == ["add+min ceiling", "min-plus BF 64"]  # 8192 has no build without DPX
    assert pairs["dpx_speedup"].tolist() == pytest.approx([2.0, 1.5])
    kernel = pairs.iloc[1]
    # each build against the ceiling of its own instructions: 4096^3 relaxations in 15 ms against 5e14/s
    assert kernel["without_dpx_fraction_of_its_ceiling"] == pytest.approx(4096**3 / 15e-3 / 5e14)
    assert kernel["with_dpx_fraction_of_its_ceiling"] == pytest.approx(4096**3 / 10e-3 / 1e15)


def test_a_wrong_side_keeps_its_pair_with_no_speedup():
    sweep = _sweep([(4096, 64, True, 1.0, "wrong"), (4096, 64, False, 15.0, "ok")])
    pairs = dpx.dpx_speedups(sweep, _ceiling(plain_status="wrong"))
    assert pairs["dpx_speedup"].isna().all()
    assert pairs["status"].str.startswith("not compared").all()
    seen = dpx.what_dpx_is_worth(pairs, pd.DataFrame(columns=["build", "fused_add_min"]), "GPU X")
    assert seen.headlines == [] and "nothing is compared" in seen.text


def test_the_findings_quote_the_ceiling_and_the_fastest_kernel_at_the_largest_n():
    sweep = _sweep(
        [
            (4096, 64, True, 10.0, "ok"),
            (4096, 64, False, 19.0, "ok"),
            (8192, 64, True, 80.0, "ok"),
            (8192, 64, False, 120.0, "ok"),
            (8192, 256, True, 70.0, "ok"),
            (8192, 256, False, 91.0, "ok"),
        ]
    )
    sass = pd.DataFrame(
        {"build": ["min-plus BF 64, 8x8 + DPX", "min-plus BF 64, 8x8 (-DNO_DPX)"], "fused_add_min": [1.0, 0.0]}
    )
    seen = dpx.what_dpx_is_worth(dpx.dpx_speedups(sweep, _ceiling(plain_ms=1.1)), sass, "GPU X")
    by_key = {h["key"]: h for h in seen.headlines}
    assert by_key["dpx_speedup_ceiling"]["value"] == pytest.approx(1.1)
    minplus = by_key["dpx_speedup_minplus"]
    assert minplus["value"] == pytest.approx(91 / 70) and minplus["rows"] == {
        "n": 8192,
        "variant": "min-plus BF 256, 8x8 + DPX",
    }
    assert (
        "1.10x at the add+min ceiling" in seen.text
        and "1.30x in the min-plus kernel at N = 8,192 (BF 256)" in seen.text
    )
    assert "GPU X" in seen.answer and not any(math.isnan(h["value"]) for h in seen.headlines)


def test_a_gpu_without_dpx_says_that_the_pair_compares_one_code():
    sweep = _sweep([(4096, 64, True, 10.0, "ok"), (4096, 64, False, 10.1, "ok")])
    sass = pd.DataFrame({"build": ["min-plus BF 64, 8x8 + DPX"], "fused_add_min": [0.0]})
    seen = dpx.what_dpx_is_worth(dpx.dpx_speedups(sweep, _ceiling()), sass, "GeForce RTX 2080")
    assert "has no DPX instructions" in seen.text and seen.headlines == []


def test_instructions_per_relaxation_of_each_build():
    n = dpx.RELAXATIONS_PER_CHUNK
    rows = [("with", "sm_90", "VIADDMNMX", n), ("with", "sm_90", "IMAD", n // 4), ("with", "sm_90", "LDS", 86)]
    rows += [("without", "sm_90", "IMAD", n + n // 4), ("without", "sm_90", "VIMNMX", n)]
    rows += [("ampere", "sm_80", "IMAD", n), ("ampere", "sm_80", "IADD3", n // 4), ("ampere", "sm_80", "IMNMX", n)]
    sass = pd.DataFrame([{"build": b, "arch": a, "kernel": dpx.PHASE3, "opcode": o, "count": c} for b, a, o, c in rows])
    table = dpx.instructions_per_relaxation(sass).set_index("build")
    assert table.loc["with", ["fused_add_min", "adds", "mins"]].tolist() == [1.0, 0.25, 0.0]
    assert table.loc["without", ["fused_add_min", "adds", "mins"]].tolist() == [0.0, 1.25, 1.0]
    assert table.loc["ampere", ["adds", "mins"]].tolist() == [1.25, 1.0]
    assert table.loc["with", "instructions"] == n + n // 4 + 86
    assert dpx.instructions_per_relaxation(sass.iloc[0:0]).empty


def test_the_dpx_builds_are_builds_of_the_chapters_sass_table():
    """Chapter 04's SASS table compiles its builds and the sm_80 one: the DPX section reads its rows."""
    for bf in (64, 256):
        builds = variants.sass_builds([8], [64], [64, 256]) + [dpx.ampere_build(bf)]
        assert set(dpx.dpx_builds(bf)) <= {b[0] for b in builds}
        assert dpx.ampere_build(bf)[3] == dpx.AMPERE_ARCH


def test_a_recording_whose_plain_build_was_fused_says_the_pair_compares_one_instruction():
    """Before add_min.cuh kept the add and the min apart, ptxas fused both builds into VIADDMNMX:
    such a recording's pair is no test of DPX, and the chapter says so instead of a speedup."""
    sweep = _sweep([(4096, 64, True, 10.0, "ok"), (4096, 64, False, 10.1, "ok")])
    sass = pd.DataFrame(
        {"build": ["min-plus BF 64, 8x8 + DPX", "min-plus BF 64, 8x8 (-DNO_DPX)"], "fused_add_min": [1.0, 1.0]}
    )
    seen = dpx.what_dpx_is_worth(dpx.dpx_speedups(sweep, _ceiling(plain_ms=1.01)), sass, "GPU X")
    assert seen.headlines == [] and "issues VIADDMNMX too" in seen.text
