"""The async min-plus kernel (fw_blocked_minplus_async.cu): its launches, names and builds without a GPU,
and its solves against the reference on one (marked gpu)."""

from __future__ import annotations

import shutil

import pytest

from cudalab.core.errors import LaunchRefused
from cudalab.labs.fw.blocked import kernels, variants


def test_async_launches_describe_three_phases():
    p1, p2, p3 = kernels.async_phase_launches(64, 3)
    assert (p1.file, p1.kernel) == (kernels.MINPLUS_FILE, "fw_minplus_phase1")
    assert (p2.file, p3.kernel) == (kernels.ASYNC_FILE, "fw_async_phase3")
    assert p3.dynamic_shared_bytes == 3 * 4 * 2 * 64 * 16
    assert "-DSTAGES=3" in p3.options and p3.arguments[-1] == "part"
    with pytest.raises(LaunchRefused):
        kernels.async_phase_launches(32, 3)


def test_async_spec_round_trips():
    spec = kernels.KernelSpec.parse("async:128:s2")
    assert (spec.kind, spec.bf, spec.stages) == ("async", 128, 2)
    assert kernels.KernelSpec.parse(spec.as_text()) == spec
    row = type("Row", (), {"kernel": "min-plus async", "block_factor": 64, "dpx": True, "stages": 4})()
    assert kernels.KernelSpec.from_row(row) == kernels.KernelSpec("async", 64, True, 8, 4)
    with pytest.raises(LaunchRefused):
        kernels.KernelSpec.parse("async:64:s5")


def test_async_variants_are_labelled_apart():
    labels = [v.label for v in variants.async_variants([64, 128], [2, 3])]
    assert len(set(labels)) == 4 and all(label.startswith("min-plus async") for label in labels)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
@pytest.mark.parametrize("arch", ["sm_90", "sm_75"])
@pytest.mark.parametrize("bf", [64, 128])
def test_async_compiles(arch, bf, tmp_path):
    """Both architectures build (sm_75 emulates the DPX add-min); on sm_90, the H100's, no spills.
    (sm_75 at BF 64 spills 8-16 bytes in one of the two kernels: noted, not yet fixed.)"""
    from cudalab.core.kernels import kernel_path
    from cudalab.toolchain.nvcc import nvcc_cubin, parse_ptxas

    for stages in (2, 3):
        log = nvcc_cubin(
            kernel_path(kernels.ASYNC_FILE),
            arch,
            kernels.async_options(bf, stages),
            str(tmp_path / "k.cubin"),
            ("-Xptxas", "-v"),
        )
        usage = parse_ptxas(log)
        assert {u.kernel for u in usage} == {"fw_async_phase2", "fw_async_phase3"}
        if arch == "sm_90":
            assert all(u.spill_store_bytes == 0 and u.spill_load_bytes == 0 for u in usage), usage


@pytest.mark.gpu
def test_async_solves_match_reference():
    from cudalab.labs.fw import harness as fw

    check = fw.correctness(variants.async_variants([64, 128], [2, 3]), [1, 33, 130, 257], seed=7)
    assert check["status"].eq("ok").all(), check[~check["status"].eq("ok")]
