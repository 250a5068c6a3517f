"""``core.check``: a result against its reference, as a status (issue 65, item 6). Every table's
``status`` and every grader's point that a family's check builds on comes from here, so each way it
could accept a wrong result is pinned: one wrong entry in a million is wrong, an entry one ulp past
the tolerance is wrong, NaN is wrong, and the counts and words a student reads are exact."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

from cudalab.core.check import _array_module, compare, compare_close


@pytest.mark.parametrize("size", [1, 1000, 1_000_000])
def test_one_wrong_entry_in_any_number_is_wrong(size):
    """Bug caught: ``compare`` accepting a small share of wrong entries (0.1%: one in a thousand
    passed, and a kernel wrong on an edge tile was called correct)."""
    reference = np.arange(size, dtype=np.int32)
    result = reference.copy()
    result[size // 2] += 1
    out = compare(result, reference, "the CPU reference")
    assert out == {
        "status": "wrong",
        "mismatches": 1,
        "reason": f"1 of {size} entries differ from the CPU reference",
    }


def test_a_result_equal_to_its_reference_is_ok_with_no_reason():
    a = np.arange(12, dtype=np.int32).reshape(3, 4)
    assert compare(a, a.copy()) == {"status": "ok", "mismatches": 0, "reason": ""}


def test_every_wrong_entry_is_counted_over_the_whole_array():
    """The count and the size are the whole array's (a 2-D result: entries, not rows)."""
    reference = np.zeros((40, 50), dtype=np.int32)
    result = reference.copy()
    result[0, :7] = 1
    result[39, 49] = -1
    out = compare(result, reference)
    assert out["status"] == "wrong" and out["mismatches"] == 8
    assert out["reason"] == "8 of 2000 entries differ from the reference"
    assert compare(reference + 1, reference)["mismatches"] == 2000


def test_nan_in_an_exact_result_is_wrong():
    reference = np.ones(5, dtype=np.float32)
    result = reference.copy()
    result[3] = np.nan
    assert compare(result, reference)["mismatches"] == 1


# ------------------------------------------------------------------------------ rounded results


def _close(result, reference, scale=1.0, tolerance=1e-3, **kw):
    return compare_close(
        np.asarray(result, dtype=np.float64),
        np.asarray(reference, dtype=np.float64),
        np.broadcast_to(np.asarray(scale, dtype=np.float64), np.shape(reference)),
        tolerance,
        **kw,
    )


@pytest.mark.parametrize("size", [1000, 1_000_000])
def test_one_entry_past_the_tolerance_in_any_number_is_wrong(size):
    """Bug caught: ``compare_close`` accepting a small share of entries past the tolerance."""
    reference = np.ones(size)
    result = reference.copy()
    result[-1] += 2e-3
    out = _close(result, reference, what="cuBLAS", scale_name="|A||B|")
    assert out["status"] == "wrong" and out["mismatches"] == 1
    assert out["max_rel_error"] == pytest.approx(2e-3)
    assert out["reason"] == f"1 of {size} entries differ from cuBLAS by more than 0.001 x |A||B| (worst 0.002)"


def test_at_the_tolerance_is_ok_and_just_past_it_is_wrong():
    """``|result - reference| <= tolerance * scale``: the bound itself passes (an error of exactly
    0.25 x a scale of 4 against a tolerance of 0.25), the next float past it fails."""
    reference = np.zeros(3)
    scale = np.full(3, 4.0)
    at = compare_close(np.array([1.0, -1.0, 0.5]), reference, scale, 0.25)
    assert at["status"] == "ok" and at["mismatches"] == 0 and at["reason"] == ""
    assert at["max_rel_error"] == 0.25
    past = compare_close(np.array([np.nextafter(1.0, 2.0), -1.0, 0.5]), reference, scale, 0.25)
    assert past["status"] == "wrong" and past["mismatches"] == 1


def test_the_error_is_relative_to_each_entrys_own_scale():
    """An entry's error is weighed against its own scale (``|A||B|`` entry by entry), never a
    global one: 1.0 off is fine against a scale of 1e6 and wrong against a scale of 1."""
    reference = np.zeros(2)
    out = compare_close(np.array([1.0, 1.0]), reference, np.array([1e6, 1.0]), 1e-3)
    assert out["mismatches"] == 1 and out["max_rel_error"] == pytest.approx(1.0)
    out = compare_close(np.array([1.0, 1e-4]), reference, np.array([1e6, 1.0]), 1e-3)
    assert out["status"] == "ok" and out["max_rel_error"] == pytest.approx(1e-4)


def test_a_zero_scale_takes_the_smallest_float_so_only_an_exact_entry_passes():
    """Where the scale is 0 (a row of zeros), the error is divided by float32's tiny: equal is ok,
    anything else is wrong (never a division by zero read as NaN or inf)."""
    zero = np.zeros(2, dtype=np.float32)
    ok = compare_close(zero.copy(), zero, zero, 1e-3)
    assert ok["status"] == "ok" and ok["max_rel_error"] == 0.0
    off = compare_close(np.array([0.0, 1e-30], dtype=np.float32), zero, zero, 1e-3)
    assert off["status"] == "wrong" and off["mismatches"] == 1
    assert off["max_rel_error"] == pytest.approx(1e-30 / np.finfo(np.float32).tiny, rel=1e-5)
    assert np.isfinite(off["max_rel_error"])


def test_a_tiny_scale_keeps_its_own_value():
    """The floor is ``max(scale, tiny)``: a scale above tiny is used as it is (a floor taken as the
    larger of the two, or as tiny everywhere, would change the error)."""
    out = compare_close(np.array([2e-30]), np.array([0.0]), np.array([1e-30]), 3.0)
    assert out["status"] == "ok" and out["max_rel_error"] == pytest.approx(2.0)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nan_or_inf_is_wrong_and_the_worst_error_is_infinite(bad):
    """NaN compares false with everything: an entry of NaN must fail (``not err <= tolerance``), and
    the worst error is past every finite one, never NaN nor the 0.5 of the entry beside it. (An
    infinite entry reads float64's largest value today: ``nan_to_num`` maps inf there too.)"""
    reference = np.ones(4)
    result = reference.copy()
    result[1] = bad
    result[2] = 1.5
    out = _close(result, reference, tolerance=0.1)
    assert out["status"] == "wrong" and out["mismatches"] == 2
    assert out["max_rel_error"] >= np.finfo(np.float64).max
    if np.isnan(bad):
        assert out["max_rel_error"] == np.inf and "(worst inf)" in out["reason"]


def test_an_empty_result_is_ok_with_a_worst_error_of_zero():
    empty = np.zeros(0)
    assert compare_close(empty, empty, empty, 1e-3) == {
        "status": "ok",
        "mismatches": 0,
        "max_rel_error": 0.0,
        "reason": "",
    }


def test_the_defaults_name_the_reference_and_the_scale():
    out = _close([0.0, 5.0], [0.0, 0.0], tolerance=0.5)
    assert out["reason"] == "1 of 2 entries differ from the reference by more than 0.5 x the scale (worst 5)"


def test_the_worst_error_is_the_largest_and_a_float():
    out = _close([0.1, -0.4, 0.2], [0.0, 0.0, 0.0], tolerance=1.0)
    assert out["status"] == "ok" and type(out["max_rel_error"]) is float
    assert out["max_rel_error"] == pytest.approx(0.4)
    assert type(out["mismatches"]) is int and type(compare(np.ones(2), np.ones(2))["mismatches"]) is int


# ------------------------------------------------------------------------------ NumPy or CuPy


def test_a_numpy_array_is_computed_with_numpy():
    assert _array_module(np.zeros(1)) is np


def test_a_device_array_is_computed_with_the_module_it_comes_from(monkeypatch):
    """An array whose type lives in ``cupy...`` is computed with CuPy (imported only then): a
    stand-in module named cupy shows which one is taken, with no GPU here."""
    fake = types.ModuleType("cupy")
    monkeypatch.setitem(sys.modules, "cupy", fake)
    device_array = type("ndarray", (), {"__module__": "cupy._core.core"})()
    assert _array_module(device_array) is fake
    lookalike = type("ndarray", (), {"__module__": "notcupy"})()
    assert _array_module(lookalike) is np


def test_a_device_array_is_compared_with_its_own_modules_functions(monkeypatch):
    """A rounded result on the device is checked with CuPy's functions, never NumPy's (which would
    copy it to the host, or fail): a stand-in cupy that counts its calls shows which is used."""
    used = []

    def counted(name):
        def call(*args, **kw):
            used.append(name)
            return getattr(np, name)(*args, **kw)

        return call

    fake = types.ModuleType("cupy")
    for name in ("abs", "maximum", "nan_to_num"):
        setattr(fake, name, counted(name))
    fake.finfo, fake.float32, fake.inf = np.finfo, np.float32, np.inf
    monkeypatch.setitem(sys.modules, "cupy", fake)
    device = type("ndarray", (np.ndarray,), {"__module__": "cupy._core.core"})
    result = np.array([1.0, 2.0]).view(device)
    out = compare_close(result, np.array([1.0, 2.5]), np.ones(2), 0.1)
    assert out["mismatches"] == 1 and out["max_rel_error"] == pytest.approx(0.5)
    assert used == ["abs", "maximum", "nan_to_num"]
