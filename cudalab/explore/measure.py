"""Measure one point now, on the GPU present: the explorer's "measure" button, and its Python call.

``measure_now(lab, recipe, point)`` checks the point against its recipe (``labs.points``: what a
point of the chapter's main table is) before any work, refuses plainly where there is no GPU,
measures it through the chapter's own sweep (the recipe's ``measure``), and appends the rows to
the "your measurements" table (``explore.yours``). What went wrong is a status and one line for
the user, never a traceback: a kernel file that does not compile gives "compile error" and
"scratch/fw_basic_2d.cu:12: expected a ';'", a configuration the GPU refuses "skipped" with the
sweep's reason, a result that fails the reference check "wrong". ``kernel_file`` (a scratch copy,
``explore.scratch``) is measured in place of the original kernel file of the same name.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from cudalab.core.errors import BadPoint, CudalabError, KernelCompileError, NoGPU, SkipPoint
from cudalab.core.gpu import gpu_available
from cudalab.core.paths import KERNELS_DIR
from cudalab.explore import yours
from cudalab.explore.scratch import shown

# A point's status, most telling first: the one a point with several rows reports.
STATUS_ORDER = ("compile error", "error", "wrong", "failed", "skipped", "ok")


@dataclass
class MeasuredPoint:
    """What ``measure_now`` measured: the rows (with provenance), the point's status, one line
    for the user, and the CSV the rows were appended to (None where nothing was written)."""

    rows: pd.DataFrame
    status: str  # "ok" | "wrong" | "skipped" | "compile error" | "error"
    message: str
    saved_to: Path | None


def why_no_gpu() -> str | None:
    """None where a point can be measured here; else the sentence a disabled control shows."""
    if gpu_available():
        return None
    try:
        import cupy  # noqa: F401
    except Exception:
        return "CuPy is not installed here: this replays recorded results; measure a point on a GPU host"
    return "no CUDA device here (CuPy found none): this replays recorded results; measure a point on a GPU host"


def _coerce(name: str, value: Any, kind: type) -> Any:
    """``value`` as ``kind`` (a string that parses as one is accepted, as a text box gives it)."""
    if kind is bool:
        if isinstance(value, bool):
            return value
        if str(value).strip().lower() in ("true", "false"):
            return str(value).strip().lower() == "true"
    elif kind is int:
        if isinstance(value, bool):
            pass
        elif isinstance(value, int):
            return value
        elif isinstance(value, float) and value.is_integer():
            return int(value)
        else:
            try:
                return int(str(value).strip().replace("_", ""))
            except ValueError:
                pass
    else:
        try:
            return kind(value)
        except (TypeError, ValueError):
            pass
    raise BadPoint(f"{name} = {value!r}: expected {kind.__name__}")


def check_point(recipe: Any, point: dict[str, Any] | None) -> dict[str, Any]:
    """The point completed from the recipe's defaults and typed as its axes declare; ``BadPoint``
    for a name the recipe does not know, a value that is not its type (or not positive, for a
    size), or a choice that is not offered."""
    point = dict(point or {})
    known = {**recipe.axes, **{name: None for name in recipe.kernel_choices}}
    unknown = [name for name in point if name not in known]
    if unknown:
        raise BadPoint(
            f"{recipe.chapter}: unknown {', '.join(map(repr, unknown))}; a point of {recipe.table} sets "
            f"{', '.join(known)}"
        )
    out = {**recipe.defaults, **point}
    for name, kind in recipe.axes.items():
        if name not in out:
            raise BadPoint(f"{recipe.chapter}: {name} is not set ({kind.__name__} expected)")
        out[name] = _coerce(name, out[name], kind)
        if kind is int and out[name] < 1:
            raise BadPoint(f"{name} = {out[name]}: expected a positive integer")
    for name, choices in recipe.kernel_choices.items():
        choices = tuple(choices)
        value = out.get(name, choices[0])
        match = [c for c in choices if c == value or str(c).lower() == str(value).strip().lower()]
        if not match:
            raise BadPoint(f"{name} = {value!r}: expected one of {', '.join(map(str, choices))}")
        out[name] = match[0]
    return out


def compile_message(exc: KernelCompileError) -> str:
    """A compile error as one line: "scratch/fw_basic_2d.cu:12: expected a ';'"."""
    where = f"{shown(exc.path)}:{exc.line}" if exc.line else shown(exc.path)
    message = getattr(exc, "message", "") or str(exc).splitlines()[0].split(": ", 1)[-1]
    return f"{where}: {message}"


def _status(rows: pd.DataFrame) -> str:
    found = set(rows["status"].astype(str)) if "status" in rows and len(rows) else {"error"}
    status = next((s for s in STATUS_ORDER if s in found), "error")
    return "error" if status == "failed" else status


def _describe(point: dict[str, Any]) -> str:
    return ", ".join(
        f"{k} = {v:,}" if isinstance(v, int) and not isinstance(v, bool) else f"{k} = {v}" for k, v in point.items()
    )


def _time_text(rows: pd.DataFrame) -> str:
    """The point's time: the median of one row, or (k-means) the median iteration's stages summed."""
    ok = rows[rows["status"].eq("ok")] if "status" in rows else rows
    if "time_ms" not in ok or ok["time_ms"].isna().all():
        return ""
    if "iteration" in ok and ok["iteration"].nunique() > 1:
        per_iteration = ok.groupby("iteration")["time_ms"].sum()
        return f"{per_iteration.median():.4g} ms per iteration (median of {len(per_iteration)})"
    row = ok.iloc[0]
    repeats = f" (median of {int(row['repeats'])} runs)" if "repeats" in ok and pd.notna(row.get("repeats")) else ""
    return f"{row['time_ms']:.4g} ms{repeats}"


def _message(status: str, rows: pd.DataFrame, point: dict[str, Any], source: str) -> str:
    what = f"{_describe(point)}{source}"
    reason = ""
    if "reason" in rows:
        reasons = rows.loc[~rows["status"].eq("ok"), "reason"].dropna().astype(str)
        reason = next((r for r in reasons if r), "")
    if status == "ok":
        return f"{what}: {_time_text(rows)}, matches the reference"
    if status == "wrong":
        timed = _time_text(rows.assign(status="ok"))
        return f"{what}: WRONG result, not a time{f' (it ran in {timed})' if timed else ''}: {reason}"
    if status == "skipped":
        return f"{what}: skipped: {reason}"
    return f"{what}: {reason}"


def measure_now(
    lab: Any, recipe: Any, point: dict[str, Any], *, kernel_file: str | Path | None = None
) -> MeasuredPoint:
    """Measure ``point`` of ``recipe``'s table now (see the module docstring) and append its rows to
    the "your measurements" table in ``lab``'s data folder.

    Raises ``BadPoint`` for a point that does not fit the recipe and ``NoGPU`` (with
    ``why_no_gpu``'s sentence) where there is no GPU, both before any work; every outcome of
    the measurement itself is a ``MeasuredPoint``."""
    point = check_point(recipe, point)
    reason = why_no_gpu()
    if reason:
        raise NoGPU(reason)
    copy = Path(kernel_file).resolve() if kernel_file else None
    if copy is not None and not copy.is_file():
        raise CudalabError(f"no kernel file {kernel_file} (make one with explore.scratch.scratch_kernel)")
    source = f" from {shown(copy)}" if copy is not None else ""
    from cudalab.core.launch import refusal_types

    try:
        params = {**lab.params, "point_time_limit_s": lab.point_time_limit_s}  # the chapter's seed and time limit
        rows = recipe.measure(point, kernel_file=str(copy) if copy else None, params=params)
        rows = rows.assign(**{k: v for k, v in point.items() if k not in rows})
        status = _status(rows)
        message = _message(status, rows, point, source)
    except KernelCompileError as exc:
        status, message = "compile error", compile_message(exc)
        rows = pd.DataFrame([{**point, "status": status, "reason": message}])
    except (SkipPoint, *refusal_types()) as exc:
        status, why = "skipped", f"{type(exc).__name__}: {exc}"
        rows = pd.DataFrame([{**point, "status": status, "reason": why}])
        message = f"{_describe(point)}{source}: skipped: {why}"
    except CudalabError as exc:
        status, why = "error", str(exc).splitlines()[0]
        rows = pd.DataFrame([{**point, "status": status, "reason": why}])
        message = f"{_describe(point)}{source}: {why}"
    original = recipe.kernel_file_for(point) if hasattr(recipe, "kernel_file_for") else recipe.kernel_file
    built_from = copy or (KERNELS_DIR / original if original else None)
    rows = rows.assign(**yours.provenance(built_from))
    return MeasuredPoint(rows, status, message, yours.append(lab, recipe.table, rows, kernel_file=built_from))
