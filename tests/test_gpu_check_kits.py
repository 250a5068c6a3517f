"""The check kits on the GPU (``labs.vecmax_checks``, ``labs.matmul_checks``, ``labs.kmeans.checks``,
and ``labs.fw.checks`` as a sanity check): at each chapter's graded points, with the declared check
inputs, the reference kernels are right on every kind (also a trial reused for input after input),
a deliberately wrong copy of each kernel file is caught, the worker's and grader's path
(``grading.trials.measure_point`` then ``judge``) says ok and wrong where it must, and the ceilings a
graded run measures again (``labs.ceilings_now``) are measured. Each verdict is printed (``-s``)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cudalab.chapter.declarations import ceiling_declared, of
from cudalab.grading import trials
from tests import mutants as M

pytestmark = pytest.mark.gpu

PARAMS = {"seed": 1, "point_time_limit_s": 60}
SEED = 20260101

GROUPS = {  # kit name -> (chapter, the recipe of its yours group)
    "vecmax": ("02_coalescing", "cudalab.labs.vecmax_point:VECMAX_POINT"),
    "matmul": ("05_matmul_footprint", "cudalab.labs.matmul:FOOTPRINT_POINT"),
    "fw": ("04_blocking_factor", "cudalab.labs.fw.blocked.point:POINT"),
    "kmeans": ("06_kmeans_device_update", "cudalab.labs.kmeans.point:POINT"),
}


def _group(name: str):
    chapter, recipe = GROUPS[name]
    return next(y for y in of(chapter).yours if y.recipe == recipe and y.checks is not None)


def _points(name: str) -> list[dict[str, Any]]:
    points = [dict(p) for p in _group(name).points]
    return points[:1] if name == "fw" else points  # FW: the shared kernel at n = 3000 only


CASES = [(name, p) for name in GROUPS for p in _points(name)]
_WANT: dict[tuple, tuple[Any, dict[str, Any]]] = {}


def _want(kit, kind: str, at: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """The input of ``kind`` at ``at`` and its answer, computed once for every variant that shares it."""
    key = (id(kit), kind, tuple(sorted((k, str(v)) for k, v in at.items() if k != "variant")))
    if key not in _WANT:
        host = kit.draw(kind, at, SEED)
        _WANT[key] = (host, kit.expected(at, host))
    return _WANT[key]


def _kinds_at(name: str, point: dict[str, Any]) -> list[tuple[str, int]]:
    group = _group(name)
    kit = trials.kit_of(group.checks.kit)
    n = int(point["n"])
    return [(kit.timed, n)] + [(c.input, int(c.n) if c.n is not None else n) for c in group.checks.inputs]


def _solve(name: str, point: dict[str, Any], kernel_file: str | None) -> dict[tuple[str, int], str]:
    """Every kind at its n, one run each, through one trial per n (so a trial solves input after
    input, as the worker's does), then the first input of each trial solved again; the verdicts."""
    kit = trials.kit_of(_group(name).checks.kit)
    made: dict[int, Any] = {}
    first: dict[int, tuple[Any, str]] = {}
    out: dict[tuple[str, int], str] = {}

    def once(trial, staged, kind, at) -> str:
        trial.load(staged)
        trial.run()
        trial.stream.synchronize()
        host, want = _want(kit, kind, at)
        return kit.verdict(at, trial.output(), want, host)

    for kind, n in _kinds_at(name, point):
        at = {**point, "n": n}
        if n not in made:
            made[n] = kit.trial(at, kernel_file, PARAMS)
        trial = made[n]
        staged = trial.upload(_want(kit, kind, at)[0])
        first.setdefault(n, (staged, kind))
        t0 = time.perf_counter()
        out[(kind, n)] = once(trial, staged, kind, at)
        print(f"KIT {name} {point} {'reference' if kernel_file is None else Path(kernel_file).parent.name}: "
              f"{kind} at n = {n:,}: {out[(kind, n)] or 'ok'} ({time.perf_counter() - t0:.2f} s)")  # fmt: skip
    for n, (staged, kind) in first.items():
        again = once(made[n], staged, kind, {**point, "n": n})
        out[(kind + " (again)", n)] = again
        if again:
            print(f"KIT {name} {point}: {kind} at n = {n:,} solved again: {again}")
    return out


# ------------------------------------------------------------------------------ ceilings measured now


def test_the_ceilings_a_graded_run_measures_again():
    from cudalab.grading._worker_target import _ceiling
    from cudalab.labs import capabilities, ceilings_now

    spec = capabilities.present_spec()
    t0 = time.perf_counter()
    rows = ceilings_now.dram_read_now(timing={"time_limit_s": 60})
    t1 = time.perf_counter()
    read = ceiling_declared("dram_read_Bps").pick(rows, None)
    fp32, fp32_spread = _ceiling("fp32_FLOPps", PARAMS)  # the worker's own path
    peak = spec["peak_dram_bandwidth_GBps"] * 1e9
    row = rows.iloc[0]
    print(
        f"KIT ceilings: dram_read_Bps now {read / 1e9:.1f} GB/s ({t1 - t0:.1f} s; {read / peak:.1%} of the theoretical "
        f"{peak / 1e9:.0f} GB/s; quartiles {row['time_ms_q1']:.4g}-{row['time_ms_q3']:.4g} ms of {row['time_ms']:.4g}; "
        f"{row['how']}); fp32_FLOPps now {fp32 / 1e12:.2f} TFLOP/s"
    )
    assert 0.5 * peak < read <= 1.02 * peak
    assert fp32 == pytest.approx(spec["fp32_peak_GFLOPs"] * 1e9) and fp32_spread == 0.0
    assert np.isfinite(row[["time_ms", "time_ms_q1", "time_ms_q3"]].astype(float)).all()


@pytest.mark.parametrize("name, point", CASES, ids=[f"{n}-{p.get('kernel', p.get('variant', ''))}" for n, p in CASES])
def test_the_reference_kernels_are_right_on_every_declared_input(name, point):
    verdicts = _solve(name, point, None)
    wrong = {k: v for k, v in verdicts.items() if v}
    assert not wrong


# ------------------------------------------------------------------------------ deliberately wrong copies

# Beside tests/data/mutants' (every one of these three files'), two of this test's own.
OWN = [
    M.Mutant(
        "vm02_skips_its_last_block",
        "vecmax_coalescing.cu",
        "vecmax02's last block reports -infinity without reading",
        (
            (
                "    long long i = t;\n",
                "    long long i = t;\n    if (blockIdx.x == gridDim.x - 1) { reductions[t] = NEG_INF; return; }\n",
            ),
        ),
    ),
    M.Mutant(
        "km06_first_object_of_a_block_in_the_wrong_cluster",
        "km_01_device_update.cu",
        "a block's first object is added to the cluster before its own",
        (
            (
                "    int c = membership[obj];\n",
                "    int c = membership[obj];\n    if (threadIdx.x == 0 && c > 0) c -= 1;\n",
            ),
        ),
    ),
]
FILES = {"vecmax_coalescing.cu": "vecmax", "mm_02_footprint.cu": "matmul", "km_01_device_update.cu": "kmeans"}
MUTANTS = {m.name: m for m in [*(m for m in M.load() if m.file in FILES), *OWN]}


def _mutant_point(m: M.Mutant) -> tuple[str, dict[str, Any]]:
    name = FILES[m.file]
    if name == "vecmax":
        kernel = "vecmax02" if m.name.startswith("vm02") else "vecmax00"
        return name, next(p for p in _points(name) if p["kernel"] == kernel)
    if name == "kmeans":
        return name, next(p for p in _points(name) if p["variant"] == "device_update")
    return name, _points(name)[0]


def _mutant(tmp_path: Path, label: str) -> str:
    m = MUTANTS[label]
    (tmp_path / m.name).mkdir()
    path = tmp_path / m.name / m.file
    path.write_text(m.source())
    return str(path)


@pytest.mark.parametrize("label", list(MUTANTS))
def test_a_wrong_copy_is_caught(tmp_path, label):
    name, point = _mutant_point(MUTANTS[label])
    verdicts = _solve(name, point, _mutant(tmp_path, label))
    caught = sorted(f"{kind} at n = {n:,}" for (kind, n), v in verdicts.items() if v)
    print(f"KIT mutant {label}: caught on {caught or 'nothing'}")
    assert caught, f"{label} ({MUTANTS[label].mistake}) passed every input"


# ------------------------------------------------------------------------------ the worker's and grader's path


@pytest.mark.parametrize(
    "name, axes, mutant",
    [
        ("vecmax", {"kernel": "vecmax02"}, None),
        ("vecmax", {"kernel": "vecmax02"}, "vm02_skips_the_tail"),
        ("matmul", {}, None),
        ("kmeans", {"variant": "device_update"}, None),
        ("kmeans", {"variant": "device_update"}, "km06_empty_cluster_divided_by_zero"),
    ],
)
def test_measured_in_the_workers_way_and_judged_in_the_graders(tmp_path, name, axes, mutant):
    group = _group(name)
    kit = trials.kit_of(group.checks.kit)
    point = next(p for p in _points(name) if all(p.get(k) == v for k, v in axes.items()))
    kernel_file = _mutant(tmp_path, mutant) if mutant else None
    key = trials.point_key(GROUPS[name][0], point)
    folder = tmp_path / "answers"
    t0 = time.perf_counter()
    got = trials.measure_point(kit, dict(point), kernel_file, PARAMS, 7, key, group.checks.inputs, folder, 0)
    t1 = time.perf_counter()
    judged = trials.judge(kit, dict(point), got, 7, key, group.checks.inputs, folder, 0, trials.Expected())
    t2 = time.perf_counter()
    ms = judged.get("time_ms", float("nan"))
    rate = eval(group.rate, {}, {**point, "time_ms": ms}) if group.rate else float("nan")  # noqa: S307
    print(
        f"KIT pipeline {name} {point} {mutant or 'reference'}: {judged['status']} {judged['reason']!r}; "
        f"{ms:.4g} ms ({judged.get('time_ms_q1', 0):.4g}-{judged.get('time_ms_q3', 0):.4g}, {judged.get('repeats')} "
        f"calls), {rate:.4g} {group.rate_unit}; worker {t1 - t0:.1f} s, grader {t2 - t1:.1f} s"
    )
    assert judged["status"] == ("wrong" if mutant else "ok"), judged["reason"]
    assert not list(folder.glob("*.npz")), "every answer judged"
