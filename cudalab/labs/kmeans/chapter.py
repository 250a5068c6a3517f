"""Chapter 06's measurements and their analysis: the sweeps it records, and the tables and figure
it derives from them (the derivations run in replay too, without a GPU)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from cudalab.core.sweep import progress
from cudalab.labs.kmeans import reference
from cudalab.labs.kmeans.gpu import LADDER, PEERS, VARIANTS

STEPS = {
    "host_update": "a",
    "device_update": "b",
    "shared_buffers": "c",
    "fused": "ours 1",
    "tiled": "ours 2",
    "fixed": "ours 3",
    "dot": "ours 4",
    "tensor": "ours 5",
    "exact": "exact",
    "cupy": "peer",
    "torch": "peer",
}
# The variants the stage sweep times: the ladder and the library peers (CuPy; PyTorch where it is
# installed). The exact variant (the sequential code's arithmetic, one chain of adds per sum) is run
# whole and checked, not swept: at millions of points per cluster its update takes tens of
# milliseconds an iteration.
SWEPT = (*LADDER, *PEERS)
SHORT_NAMES = {
    "time_ms": "ms / iteration",
    "points_per_s": "points/s",
    "x_read_floor": "x read floor",
    "x_flop_floor": "x flop floor",
    "speedup_over_cupy": "x CuPy",
    "speedup_over_torch": "x PyTorch",
    "total_s": "total s",
    "ms_per_iteration": "ms / iteration",
    "speedup_over_previous": "x previous",
    "speedup_over_baseline": "x baseline",
    "membership_mismatches": "mismatches",
    "near_ties": "near ties",
    "worst_centre_error": "worst centre error",
    "runner_up_ms": "runner-up ms",
    "margin": "x runner-up",
    "membership_agreement": "same cluster",
    "max_centre_difference": "max centre difference",
    "same_bits_twice": "same bits twice",
    "same_bits": "same bits",
    "classic_iterations": "sequential iterations",
    "loop": "loop on",
    "wall_over_gpu": "wall / GPU",
}
FLOAT32 = 4
INT32 = 4  # a membership


def _skipped(exc: BaseException) -> dict[str, Any]:
    return {"status": "skipped", "reason": f"{type(exc).__name__}: {exc}"}


def correctness(
    n: int,
    d: int,
    k: int,
    seed: int,
    iterations: int,
    variants: Iterable[str] = tuple(VARIANTS),
    file: str | Path | None = None,
    *,
    show_progress: bool = True,
) -> pd.DataFrame:
    """Every variant (of ``variants``) in lockstep with the float64 reference
    (``gpu.check_against_float64``); ``file``: a copy of a kernel file to build instead."""
    from cudalab.core.launch import refusal_types
    from cudalab.labs.kmeans import gpu

    problem = gpu.Problem(reference.blobs(n, d, k, seed), k)
    frames = []
    for variant in progress(list(variants), desc="correctness", enabled=show_progress):
        try:
            frames.append(gpu.check_against_float64(problem, variant, iterations, file=file))
        except refusal_types() as exc:
            frames.append(pd.DataFrame([{"variant": variant, "iteration": 0, "n": n, "d": d, "k": k, **_skipped(exc)}]))
    return pd.concat(frames, ignore_index=True)


def correctness_summary(check: pd.DataFrame) -> pd.DataFrame:
    """``correctness`` summed per variant (in run order): iterations checked, membership
    mismatches, near ties, the worst centre error, and "ok" only where every iteration was."""
    return check.groupby("variant", sort=False).agg(
        iterations=("iteration", "count"),
        membership_mismatches=("membership_mismatches", "sum"),
        near_ties=("near_ties", "sum"),
        worst_centre_error=("centre_rel_error", "max"),
        status=("status", lambda s: "ok" if s.eq("ok").all() else "wrong"),
    )


def configurations(
    sizes: Iterable[int], dims: Iterable[int], clusters: Iterable[int], base_d: int, base_k: int
) -> list[tuple[int, int, int]]:
    """(n, d, k) of the three one-at-a-time sweeps, each configuration once: N at (base_d,
    base_k), then D and K at the largest N."""
    sizes = list(sizes)
    top = max(sizes)
    configs = (
        [(n, base_d, base_k) for n in sizes] + [(top, d, base_k) for d in dims] + [(top, base_d, k) for k in clusters]
    )
    return list(dict.fromkeys(configs))


def sweep(
    sizes: Iterable[int],
    dims: Iterable[int],
    clusters: Iterable[int],
    base_d: int,
    base_k: int,
    iterations: int,
    seed: int,
    variants: Iterable[str] = SWEPT,
    file: str | Path | None = None,
    *,
    show_progress: bool = True,
) -> pd.DataFrame:
    """Stage times of every swept variant (of ``variants``) at every configuration: one row per (n, d,
    k, variant, iteration, stage); a variant a configuration refuses is one row with its reason.
    ``file``: a copy of a kernel file to build instead (``gpu.stage_launches``)."""
    from cudalab.core.launch import refusal_types
    from cudalab.labs.kmeans import gpu

    rows: list[pd.DataFrame] = []
    variants = list(variants)
    points = [(cfg, v) for cfg in configurations(sizes, dims, clusters, base_d, base_k) for v in variants]
    problem, current = None, None
    for (n, d, k), variant in progress(points, desc="k-means sweep", enabled=show_progress):
        base = {"n": n, "d": d, "k": k, "variant": variant}
        try:
            if current != (n, d, k):
                problem, current = None, (n, d, k)
                gpu.release_cached_memory()
                problem = gpu.Problem(gpu.blobs_on_device(n, d, k, seed), k)
            times = gpu.time_iterations(problem, variant, iterations, file=file)
            rows.append(times.assign(**base, status="ok", reason=""))
        except refusal_types() as exc:
            rows.append(pd.DataFrame([{**base, "iteration": 0, "stage": "", "time_ms": np.nan, **_skipped(exc)}]))
    cols = ["n", "d", "k", "variant", "iteration", "stage", "time_ms", "status", "reason"]
    return pd.concat(rows, ignore_index=True)[cols]


CUPY_BASELINE = "CuPy k-means iteration (assign, delta, update)"


def device_iteration_ms(stages: pd.DataFrame, n: int, d: int, k: int, variant: str = "cupy") -> float:
    """The median over iterations of ``variant``'s on-device stages (assign, delta, update: what
    runs between CUDA events, not the host's read of the count) at (n, d, k)."""
    at = stages[
        stages["n"].eq(n)
        & stages["d"].eq(d)
        & stages["k"].eq(k)
        & stages["variant"].eq(variant)
        & stages["status"].eq("ok")
        & stages["stage"].isin(["assign", "delta", "update"])
    ]
    return float(at.groupby("iteration")["time_ms"].sum().median()) if len(at) else float("nan")


def check_cupy(
    stages: pd.DataFrame, n: int, d: int, k: int, iterations: int, seed: int
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Check the sweep's CuPy iteration at (n, d, k) against 50 back-to-back iterations of its
    on-device stages between one event pair, in this run (``core.baseline.check``: re-measured once
    with the sweep's own timing if more than 3% off, else flagged). The calls run unheld: 50
    iterations of about twenty kernels each overfill the launch queue, so a hold would always time
    out before the host had enqueued them (the GPU waits on the host wherever an iteration's
    enqueueing takes longer than its GPU time, which the check would report). Every call runs
    the sweep's first timed iteration again, from the centres it started from (restored by a
    K x D copy inside the timed region): an iteration's time depends on the memberships (the
    scatter-add's collisions), and 50 iterations run on would time later, better-converged ones. Returns the stage times
    (CuPy's rows at (n, d, k) replaced by an agreeing re-measurement) and the check's one-row table
    (empty where CuPy did not run there)."""
    from cudalab.core import baseline
    from cudalab.core.timing import back_to_back
    from cudalab.labs.kmeans import gpu

    swept = device_iteration_ms(stages, n, d, k)
    if np.isnan(swept):
        return stages, pd.DataFrame()
    problem = gpu.Problem(gpu.blobs_on_device(n, d, k, seed), k)
    again: dict[str, pd.DataFrame] = {}

    def measure_again() -> float:
        times = gpu.time_iterations(problem, "cupy", iterations)
        again["times"] = times.assign(n=n, d=d, k=k, variant="cupy", status="ok", reason="")
        return device_iteration_ms(again["times"], n, d, k)

    runner = gpu.Runner(problem, "cupy")
    for _ in range(gpu.WARMUP):
        runner.step()
    start = runner.centres.copy()
    device = [stage.run for stage in runner.stages if stage.on_device]

    def iteration() -> None:
        with runner.stream:
            runner.centres[...] = start
        for run in device:
            run()

    def back_to_back_ms() -> float:
        return back_to_back(iteration, calls=baseline.CALLS, hold=False, stream=runner.stream)

    row = baseline.check(
        CUPY_BASELINE,
        {"n": n, "d": d, "k": k},
        swept,
        measure_again,
        back_to_back_ms,
    )
    if row["status"] == baseline.REMEASURED:
        at = stages["n"].eq(n) & stages["d"].eq(d) & stages["k"].eq(k) & stages["variant"].eq("cupy")
        stages = pd.concat([stages[~at], again["times"][stages.columns]], ignore_index=True)
    return stages, pd.DataFrame([row])


def floors_basis(ceilings: Mapping[str, float]) -> pd.DataFrame:
    """The two rates the floors use: chapter 00's read-only streaming ceiling (``dram_read_Bps`` of
    ``ceilings``, ``LabHandle.ceilings``: an iteration reads its points and writes only its
    memberships, so its bound is a read, not a copy's read and write), measured now where this run
    has no chapter 00 (``ceilings_now.dram_read_now``, the same kernel on 2 GiB), and the FP32 peak."""
    from cudalab.labs import capabilities, ceilings_now

    read_Bps = ceilings.get("dram_read_Bps")
    how = "chapter 00's read-only streaming ceiling (read_stream.cu), bytes read per second"
    if not read_Bps:
        now = ceilings_now.dram_read_now()
        if not len(now):
            raise RuntimeError("no read-only streaming ceiling: chapter 00's is not in this run, and none measured now")
        read_Bps, how = float(now["value"].iloc[0]) * 1e9, str(now["how"].iloc[0])
    return pd.DataFrame(
        [
            {"quantity": "dram_read_GBps", "value": float(read_Bps) / 1e9, "how": how},
            {
                "quantity": "fp32_peak_GFLOPs",
                "value": capabilities.fp32_peak_GFLOPs(capabilities.present_spec()),
                "how": "2 x FP32 lanes x SMs x max clock",
            },
        ]
    )


def read_rate(basis: pd.Series) -> tuple[float, str]:
    """The read floor's rate in GB/s and its name: the read-only streaming ceiling, or in a recording
    made before it (``dram_GBps``) the device-to-device copy's rate, said so."""
    if "dram_read_GBps" in basis:
        return float(basis["dram_read_GBps"]), "chapter 00's read-only streaming rate"
    return float(basis["dram_GBps"]), "a device copy's rate (an earlier recording's basis)"


def read_floor_bytes(n: Any, d: Any) -> Any:
    """What an iteration must move at least: its points read once (N x D float32) and its
    memberships written (N int32); the centres and the sums are K x D, nothing beside them."""
    return n * d * FLOAT32 + n * INT32


def per_iteration(stages: pd.DataFrame, basis: pd.Series, wrong: Iterable[str] = ()) -> pd.DataFrame:
    """One row per (n, d, k, variant): the median time per iteration (sum of its stages), points
    per second, its two floors and its multiple of each, and its speedup over each peer (CuPy,
    PyTorch) at the same configuration, where the peer ran. A variant in ``wrong`` (failed the correctness check) or skipped gets no
    multiple and no speedup."""
    keys = ["n", "d", "k", "variant"]
    ran = stages[stages["status"].eq("ok")]
    totals = ran.groupby(keys + ["iteration"])["time_ms"].sum().groupby(keys).median().rename("time_ms").reset_index()
    skipped = stages[~stages["status"].eq("ok")][keys + ["status", "reason"]].drop_duplicates(keys)
    out = pd.concat([totals.assign(status="ok", reason=""), skipped], ignore_index=True)
    out.loc[out["variant"].isin(list(wrong)) & out["status"].eq("ok"), ["status", "reason"]] = [
        "wrong",
        "failed the float64 check",
    ]
    good = out["status"].eq("ok")
    out["points_per_s"] = (out["n"] / (out["time_ms"] * 1e-3)).where(good)
    out["read_floor_ms"] = read_floor_bytes(out["n"], out["d"]) / (read_rate(basis)[0] * 1e9) * 1e3
    out["flop_floor_ms"] = 2.0 * out["n"] * out["k"] * out["d"] / (basis["fp32_peak_GFLOPs"] * 1e9) * 1e3
    out["floor_ms"] = out[["read_floor_ms", "flop_floor_ms"]].max(axis=1)
    out["x_read_floor"] = (out["time_ms"] / out["read_floor_ms"]).where(good)
    out["x_flop_floor"] = (out["time_ms"] / out["flop_floor_ms"]).where(good)
    at = pd.MultiIndex.from_frame(out[["n", "d", "k"]])
    for peer in PEERS:
        peer_ms = out[out["variant"].eq(peer) & good].set_index(["n", "d", "k"])["time_ms"]
        out[f"speedup_over_{peer}"] = (peer_ms.reindex(at).to_numpy() / out["time_ms"]).where(good)
    order = {v: i for i, v in enumerate(VARIANTS)}
    return (
        out.sort_values(["n", "d", "k"], kind="stable")
        .sort_values(["n", "d", "k", "variant"], key=lambda s: s.map(order) if s.name == "variant" else s)
        .reset_index(drop=True)
    )


def plot_stage_split(stages: pd.DataFrame, floors: pd.Series, ax=None, title: str = ""):
    """Stacked bars, one per variant: the median time of each stage of one configuration, with
    the read and flop floors as lines."""
    ax = ax or plt.subplots(figsize=(8.5, 3.8))[1]
    ran = stages[stages["status"].eq("ok")]
    med = ran.groupby(["variant", "stage"])["time_ms"].median().unstack(fill_value=0.0)
    med = med.reindex([v for v in VARIANTS if v in med.index])
    left = np.zeros(len(med))
    labels = [VARIANTS[v] for v in med.index]
    for i, stage in enumerate(sorted(med.columns, key=lambda s: ("assign" not in s, "delta" not in s, s))):
        ax.barh(labels, med[stage], left=left, label=stage, color=f"C{i}")
        left += med[stage].to_numpy()
    ax.axvline(
        floors["read_floor_ms"],
        color="black",
        linestyle="--",
        label=f"read the points, write the memberships ({floors['read_floor_ms']:.3f} ms)",
    )
    ax.axvline(
        floors["flop_floor_ms"],
        color="0.4",
        linestyle=":",
        label=f"2NKD flops at FP32 peak ({floors['flop_floor_ms']:.3f} ms)",
    )
    ax.set_xscale("log")
    ax.invert_yaxis()
    ax.set(xlabel="ms per iteration (log scale; stages stacked)", title=title)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, frameon=False)
    return ax


def full_runs(n: int, d: int, k: int, seed: int, *, show_progress: bool = True) -> pd.DataFrame:
    """Every variant run to convergence from the same initial centres: iterations, wall time,
    the summed time of each stage and the GPU's share of it, and where the loop ran (the host,
    or the device where the variant allows: ``gpu.DEVICE_LOOP``)."""
    from cudalab.core.launch import refusal_types
    from cudalab.labs.kmeans import gpu

    problem = gpu.Problem(gpu.blobs_on_device(n, d, k, seed), k)
    rows = []
    for variant in progress(VARIANTS, desc="whole runs", enabled=show_progress):
        base = {"variant": variant, "n": n, "d": d, "k": k}
        try:
            run = gpu.run_to_convergence(problem, variant)
        except refusal_types() as exc:
            rows.append({**base, **_skipped(exc)})
            continue
        rows.append(
            {
                **base,
                "iterations": run["iterations"],
                "total_ms": run["total_ms"],
                "gpu_ms": run["gpu_ms"],
                "loop": run["loop"],
                **{f"{stage}_ms": ms for stage, ms in run["stages_ms"].items()},
                "status": "ok",
                "reason": "",
            }
        )
    return pd.DataFrame(rows)


def chain(runs: pd.DataFrame, wrong: Iterable[str] = ()) -> pd.DataFrame:
    """The ladder's whole runs as lab 004 reports them: total seconds, each step's gain over the
    step before and over the baseline (the CuPy peer beside them, outside the chain); and, where
    the recording has them, where each loop ran and its wall time over its GPU time (what the
    host's syncs and tests between iterations cost)."""
    out = runs.copy()
    out.loc[out["variant"].isin(list(wrong)) & out["status"].eq("ok"), "status"] = "wrong"
    out["step"] = out["variant"].map(STEPS)
    out["label"] = out["variant"].map(VARIANTS)
    out["total_s"] = out["total_ms"] / 1e3
    out["ms_per_iteration"] = out["total_ms"] / out["iterations"]
    timed_gpu = "gpu_ms" in out and "loop" in out
    if timed_gpu:
        out["wall_over_gpu"] = out["total_ms"] / out["gpu_ms"]
    ladder = out["variant"].isin(LADDER) & out["status"].eq("ok")
    times = out["total_s"].where(ladder)
    out["speedup_over_previous"] = (times.shift(1) / times).where(ladder & ladder.shift(1, fill_value=False))
    baseline = out.loc[out["variant"].eq("host_update") & out["status"].eq("ok"), "total_s"]
    out["speedup_over_baseline"] = (
        (baseline.iloc[0] / out["total_s"]).where(out["status"].eq("ok")) if len(baseline) else np.nan
    )
    columns = ["step", "variant", "label", "iterations", "total_s", "ms_per_iteration"]
    columns += ["loop", "wall_over_gpu"] if timed_gpu else []
    return out[[*columns, "speedup_over_previous", "speedup_over_baseline", "status"]]


def chosen(per_it: pd.DataFrame) -> pd.DataFrame:
    """The chapter's kernel at each (n, d, k): the fastest of our ladder's variants that ran and
    passed the float64 check in this run (``per_iteration``'s status ok), beside the runner-up
    and the margin between them, so that no recorded shape has a variant of ours that beats the
    chosen one. One row per configuration; ``variant`` is empty where none ran correctly."""
    ours = per_it[per_it["variant"].isin(LADDER) & per_it["status"].eq("ok")]
    rows = []
    for n, d, k in per_it[["n", "d", "k"]].drop_duplicates().sort_values(["n", "d", "k"]).itertuples(index=False):
        ranked = ours[(ours["n"] == n) & (ours["d"] == d) & (ours["k"] == k)].sort_values("time_ms", kind="stable")
        first = ranked.iloc[0] if len(ranked) else None
        second = ranked.iloc[1] if len(ranked) > 1 else None
        rows.append(
            {
                "n": n,
                "d": d,
                "k": k,
                "variant": first["variant"] if first is not None else "",
                "label": VARIANTS.get(first["variant"], "") if first is not None else "",
                "time_ms": first["time_ms"] if first is not None else np.nan,
                "runner_up": second["variant"] if second is not None else "",
                "runner_up_ms": second["time_ms"] if second is not None else np.nan,
                "margin": second["time_ms"] / first["time_ms"] if second is not None else np.nan,
                "candidates": len(ranked),
            }
        )
    return pd.DataFrame(rows)


def _against_classic(run: dict[str, Any], classic: Any) -> dict[str, Any]:
    """How one GPU run to convergence compares with the classic sequential code's run from the
    same initial centres: the share of points in the same cluster, the largest centre difference
    (absolute, in the data's units), both iteration counts, and whether the centres are the
    sequential code's bits."""
    return {
        "membership_agreement": float((run["membership"] == classic.membership).mean()),
        "max_centre_difference": float(np.abs(run["centres"] - classic.centres).max()),
        "iterations": run["iterations"],
        "classic_iterations": classic.iterations,
        "same_bits": bool(np.array_equal(run["centres"].view(np.int32), classic.centres.view(np.int32))),
    }


def agreement(
    n: int, d: int, k: int, seed: int, variants: Iterable[str], *, show_progress: bool = True
) -> pd.DataFrame:
    """Each of ``variants`` run to convergence on seeded blobs, twice, against the classic
    sequential code from the same initial centres (``_against_classic``: the share of points in
    the same cluster, the largest centre difference, both iteration counts, whether the centres
    are the sequential code's bits), and whether the two GPU runs gave the same memberships and
    centres bit for bit."""
    from cudalab.core.launch import refusal_types
    from cudalab.labs.kmeans import gpu

    points = reference.blobs(n, d, k, seed)
    classic = reference.classic(points, k)
    problem = gpu.Problem(points, k)
    rows = []
    for variant in progress(list(dict.fromkeys(variants)), desc="agreement", enabled=show_progress):
        base = {"variant": variant, "n": n, "d": d, "k": k}
        try:
            first, second = (gpu.run_to_convergence(problem, variant) for _ in range(2))
        except refusal_types() as exc:
            rows.append({**base, **_skipped(exc)})
            continue
        rows.append(
            {
                **base,
                **_against_classic(first, classic),
                "same_bits_twice": bool(
                    np.array_equal(first["membership"], second["membership"])
                    and np.array_equal(first["centres"].view(np.int32), second["centres"].view(np.int32))
                ),
                "status": "ok",
                "reason": "",
            }
        )
    return pd.DataFrame(rows)


def real_data_summary(ok: pd.DataFrame) -> pd.DataFrame:
    """``real_data_agreement``'s correct rows summed per variant (named as ``VARIANTS`` names it):
    the K run, the least share of points in the sequential code's cluster, how many K fall below
    99.9%, how many K gave the sequential code's bits, and the largest centre difference."""
    summary = ok.groupby("variant").agg(
        ks=("k", "size"),
        least_same=("membership_agreement", "min"),
        below_999=("membership_agreement", lambda s: int((s < 0.999).sum())),
        same_bits=("same_bits", "sum"),
        largest_difference=("max_centre_difference", "max"),
    )
    return summary.rename(index=VARIANTS).rename_axis(index="variant").reset_index()


def real_data_agreement(
    ks: Iterable[int], variants: Iterable[str], data: str = "colour", *, show_progress: bool = True
) -> pd.DataFrame:
    """Each of ``variants`` run to convergence on real clustered data (``sample_data``'s image
    features: ``data`` is colour or texture) at every K of ``ks``, against the classic sequential
    code from the same initial centres (the first K points), as ``_against_classic`` compares
    them. The sequential runs go on a thread each (the C code releases the GIL)."""
    import os
    from concurrent.futures import ThreadPoolExecutor

    from cudalab.core.launch import refusal_types
    from cudalab.labs.kmeans import gpu, sample_data

    points = sample_data.image_features()[data]
    n, d = points.shape
    ks = [k for k in dict.fromkeys(ks) if 1 <= k <= n]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        classic = dict(zip(ks, pool.map(lambda k: reference.classic(points, k), ks)))
    rows = []
    for k, variant in progress(
        [(k, v) for k in ks for v in dict.fromkeys(variants)], desc="real data", enabled=show_progress
    ):
        base = {"data": data, "n": n, "d": d, "k": k, "variant": variant}
        try:
            run = gpu.run_to_convergence(gpu.Problem(points, k), variant)
        except refusal_types() as exc:
            rows.append({**base, **_skipped(exc)})
            continue
        rows.append({**base, **_against_classic(run, classic[k]), "status": "ok", "reason": ""})
    return pd.DataFrame(rows)
