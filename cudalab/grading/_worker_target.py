"""The child process that measures one chapter's points of one submission (or of the reference):
``python -m cudalab.grading._worker_target`` with a JSON request on stdin, one JSON line per event on
a pipe of its own (the file descriptor in ``CUDALAB_EVENTS_FD``), never on stdout, where a kernel's
``printf`` lands: a student's kernel cannot forge a result. It is the only place a student's kernel runs, so that one that never returns, faults or
corrupts its CUDA context costs this process alone (``grading.isolate`` starts it, watches it and
kills it).

The request: ``chapter`` and ``group`` (which of its ``yours`` declarations), ``folder`` (the staged submission, or null for the reference),
``points`` (``[[point, kernel file], ...]``), ``params`` (the chapter's parameters a recipe reads:
seed, time limit, ...), ``ceiling`` (a ceiling to measure first, or null), ``seed`` (the grading
run's seed) and ``answers`` (the folder this process writes its answers to, for the grader to judge:
``grading.trials``; where the chapter declares ``yours.checks``, a point is timed on fresh inputs and
answered there, and no answer is computed here) and ``checks`` (the inputs to answer: the chapter's
``yours.checks``, fewer for a sweep's points). A request may also hold ``parts`` (``plan.Batch``:
several of the chapter's groups in one process): per group, in order, ``group``, how many of
``points`` are its (``points``) and its ``checks``; each point is then measured by its own group's
recipe and kit, on its own group's checks. Events, in order: one
``ceiling``; then per point a ``start`` (the watchdog's clock restarts) and a ``point`` with its
result. After a fault the process stops: its context is no longer to be trusted.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from pathlib import Path
from typing import Any

from cudalab.grading import results as R

EVENTS_ENV = "CUDALAB_EVENTS_FD"
_events = sys.stdout  # replaced by the grader's pipe in main()


def _emit(event: str, **fields: Any) -> None:
    _events.write(json.dumps({"event": event, **fields}, default=str) + "\n")
    _events.flush()


def _faulted(exc: BaseException) -> bool:
    """A CUDA error that leaves the context unusable (an illegal address, a trap, a launch failure)."""
    return type(exc).__name__ in ("CUDADriverError", "CUDARuntimeError") or "CUDA_ERROR" in str(exc)


def _ceiling(name: str, params: dict[str, Any]) -> tuple[float | None, float]:
    """The ceiling ``name`` measured now, as its declaration's ``now`` says, and its spread (the
    largest interquartile range over median among its correct rows: a rate is called above the
    ceiling only past both spreads)."""
    from cudalab.chapter.declarations import ceiling_declared

    declared = ceiling_declared(name)
    if declared is None or declared.now is None:
        return None, 0.0
    module, _, attr = declared.now.measure.partition(":")
    rows = getattr(importlib.import_module(module), attr)(timing={"time_limit_s": params.get("point_time_limit_s")})
    spread = 0.0
    if {"time_ms", "time_ms_q1", "time_ms_q3"} <= set(rows.columns):
        ok = rows[rows["status"].eq("ok")] if "status" in rows else rows
        spread = max((R.spread(r) for r in ok.to_dict("records")), default=0.0)
    return declared.pick(rows, declared.now.value), spread


def measure(request: dict[str, Any]) -> int:
    """Measure the request's points, emitting each result; 0, or 3 after a fault."""
    from cudalab.chapter.declarations import of
    from cudalab.core.errors import CudalabError, KernelCompileError
    from cudalab.grading.plan import recipe_of, request_parts

    chapter, params = request["chapter"], request["params"]
    declared = of(chapter).yours
    yours = declared[int(request.get("group", 0))]
    parts = request_parts(request)
    folder = Path(request["folder"]) if request.get("folder") else None
    if request.get("ceiling"):
        try:
            value, spread = _ceiling(request["ceiling"], params)
            _emit("ceiling", name=request["ceiling"], value=value, spread=spread)
        except Exception as exc:  # the ceiling is context, never the submission's fault
            _emit("ceiling", name=request["ceiling"], value=None, reason=R.scrubbed(exc))
    for index, (point, file) in enumerate(request["points"]):
        _emit("start", index=index)
        kernel_file = str(folder / file) if folder is not None else None
        group, checks = parts[index]
        mine = declared[group]
        try:
            if mine.checks is not None:
                asked = {**request, "checks": checks}
                result = _checked_point(asked, mine, dict(point), kernel_file, params, index)
            else:  # a chapter without a kit: its recipe checks in this process (no grader's verdict)
                rows = recipe_of(mine.recipe).measure(dict(point), kernel_file=kernel_file, params=params)
                result = R.one_time(rows, mine.time)
        except KernelCompileError as exc:
            result = {"status": R.DOES_NOT_COMPILE, "reason": R.compile_failure(exc)}
        except CudalabError as exc:
            result = {"status": "failed", "reason": R.scrubbed(exc)}
        except Exception as exc:
            if _faulted(exc):
                _emit("point", index=index, status=R.CRASHED, reason=R.scrubbed(f"the kernel faulted: {exc}"))
                return 3
            result = {"status": "failed", "reason": R.scrubbed(f"{type(exc).__name__}: {exc}")}
        _emit("point", index=index, **result)
    return _solve_cases(request, yours, folder, params, len(request["points"]))


def _checked_point(
    request: dict[str, Any],
    yours: Any,
    point: dict[str, Any],
    kernel_file: str | None,
    params: dict[str, Any],
    index: int,
) -> dict[str, Any]:
    """One point timed on fresh inputs and its answers written for the grader (``grading.trials``)."""
    from cudalab.chapter.declarations import CheckKit
    from cudalab.grading import trials

    checks = CheckKit.model_validate(request["checks"]) if request.get("checks") else yours.checks
    kit = trials.kit_of(yours.checks.kit)  # the chapter's kit, whatever the request says
    key = trials.point_key(request["chapter"], point, kit)
    return trials.measure_point(
        kit, point, kernel_file, params, int(request["seed"]), key, checks.inputs, Path(request["answers"]), index,
        checks.fresh,
    )  # fmt: skip


def _solve_cases(request: dict[str, Any], yours: Any, folder: Path | None, params: dict[str, Any], first: int) -> int:
    """Each of the request's ``cases`` (``[[case file, answer file], ...]``) solved with the kernel
    file of the chapter's first point; its answer is checked by the grader, never here."""
    from cudalab.core.errors import CudalabError, KernelCompileError
    from cudalab.grading.cases import kind_of

    if not request.get("cases"):
        return 0
    kind = kind_of(yours.cases.kind)
    point, file = request["points"][0]
    kernel_file = str(folder / file) if folder is not None else None
    for j, (case, answer) in enumerate(request["cases"]):
        index = first + j
        _emit("start", index=index)
        try:
            ms = kind.solve(Path(case), Path(answer), kernel_file, dict(point), params)
            _emit("point", index=index, status="solved", reason="", time_ms=ms)
        except KernelCompileError as exc:
            _emit("point", index=index, status=R.DOES_NOT_COMPILE, reason=R.compile_failure(exc))
        except CudalabError as exc:
            _emit("point", index=index, status="failed", reason=R.scrubbed(exc))
        except Exception as exc:
            if _faulted(exc):
                _emit("point", index=index, status=R.CRASHED, reason=R.scrubbed(f"the kernel faulted: {exc}"))
                return 3
            _emit("point", index=index, status="failed", reason=R.scrubbed(f"{type(exc).__name__}: {exc}"))
    return 0


def main() -> int:
    global _events
    _events = os.fdopen(int(os.environ.pop(EVENTS_ENV)), "w", buffering=1)
    request = json.loads(sys.stdin.read())
    try:
        return measure(request)
    except Exception as exc:  # the worker's own failure, said in one scrubbed line
        _emit("error", reason=R.scrubbed(f"{type(exc).__name__}: {exc}"))
        return 4


if __name__ == "__main__":
    sys.exit(main())
