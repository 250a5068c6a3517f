"""Speedups over the CPU, with CPU times extrapolated where the CPU is too slow.

Floyd-Warshall does n^3 relaxations, so the sequential time is modelled as
t(n) = a n^3 + b n^2 (the n^2 term absorbs per-row overheads), fitted to the
sizes that were measured. Extrapolated times are labelled as such everywhere.
"""

from __future__ import annotations

from math import fsum

import numpy as np
import pandas as pd


def fit_cubic(n: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Coefficients (a, b) of t = a n^3 + b n^2 by least squares on relative error."""
    n = np.asarray(n, dtype=float)
    t = np.asarray(t, dtype=float)
    if n.size == 0:
        raise ValueError("no measured sizes to fit")
    if n.size == 1:
        return np.array([t[0] / n[0] ** 3, 0.0])
    # The 2 x 2 normal equations, summed with math.fsum (correctly rounded) and solved by hand:
    # the same bits on every IEEE machine, so that a replay here reproduces the GPU host's
    # recorded extrapolation to the last digit (LAPACK's lstsq differs by an ulp between builds).
    # The n^3 column is scaled by the largest n first, which keeps the system well conditioned.
    scale = float(n.max())
    x = [float(v) for v in n**3 / scale / t]
    y = [float(v) for v in n**2 / t]
    sxx, sxy, syy = fsum(a * a for a in x), fsum(a * b for a, b in zip(x, y)), fsum(b * b for b in y)
    sx, sy = fsum(x), fsum(y)
    det = sxx * syy - sxy * sxy
    if det == 0:
        raise ValueError("the measured sizes do not determine a cubic fit (all the same n?)")
    return np.array([(sx * syy - sy * sxy) / det / scale, (sy * sxx - sx * sxy) / det])


def predict_cubic(coef: np.ndarray, n) -> np.ndarray:
    n = np.asarray(n, dtype=float)
    return coef[0] * n**3 + coef[1] * n**2


def cpu_times(cpu: pd.DataFrame, sizes) -> pd.DataFrame:
    """CPU time for every size: measured where it was, else extrapolated from the fit."""
    sizes = sorted(set(int(s) for s in sizes))
    measured = cpu.set_index("n")["cpu_time_ms"] if len(cpu) else pd.Series(dtype=float)
    coef = fit_cubic(measured.index.to_numpy(), measured.to_numpy()) if len(measured) else None
    rows = []
    for n in sizes:
        if n in measured.index:
            rows.append({"n": n, "cpu_time_ms": float(measured[n]), "cpu_time_source": "measured"})
        elif coef is not None:
            rows.append({"n": n, "cpu_time_ms": float(predict_cubic(coef, n)), "cpu_time_source": "extrapolated"})
    return pd.DataFrame(rows, columns=["n", "cpu_time_ms", "cpu_time_source"])


def fit_quality(cpu: pd.DataFrame) -> float:
    """Largest relative error of the cubic fit on the measured sizes (0.05 = 5%)."""
    if len(cpu) < 2:
        return float("nan")
    coef = fit_cubic(cpu["n"].to_numpy(), cpu["cpu_time_ms"].to_numpy())
    pred = predict_cubic(coef, cpu["n"].to_numpy())
    return float(np.max(np.abs(pred / cpu["cpu_time_ms"].to_numpy() - 1)))


def with_speedups(gpu: pd.DataFrame, cpu: pd.DataFrame) -> pd.DataFrame:
    """Add cpu_time_ms, its source and speedup_vs_cpu; a result that is not 'ok' gets no speedup."""
    ref = cpu_times(cpu, gpu["n"].unique())
    out = gpu.merge(ref, on="n", how="left")
    ok = out["status"].eq("ok")
    out["speedup_vs_cpu"] = np.where(ok, out["cpu_time_ms"] / out.get("time_ms", np.nan), np.nan)
    return out


def speedup_over(results: pd.DataFrame, baseline: pd.DataFrame, key: str = "n") -> pd.Series:
    """time of the baseline (one row per ``key``) over each row's time; NaN unless both are 'ok'."""
    base = baseline[baseline["status"].eq("ok")].set_index(key)["time_ms"]
    ratio = results[key].map(base) / results["time_ms"]
    return ratio.where(results["status"].eq("ok"))
