"""The child process that compute-sanitizer watches while it looks for races (``grading.races``):
each of one chapter's graded points run once at a small size, its kernels built with line
information.

    compute-sanitizer --tool racecheck python -m cudalab.grading._sanitize_target < request.json

The request, a JSON object on stdin: ``chapter`` and ``group`` (which of its ``yours``
declarations), ``folder`` (the staged submission, or null for the reference files), ``points``
(``[[point, kernel file], ...]``), ``params`` (the chapter's parameters), ``seed`` and
``results`` (a file this process appends one JSON line to per point: ``{"index", "status":
"ran" | "failed", "reason", "point"}``; a file, not stdout, where a kernel's printf lands), and
where several groups' points are checked in one run (``plan.Batch``), ``parts``: each point is
built by its own group's kit.

Each point is built as its family's ``Checks`` kit builds it for the grader (``kit.trial``), at
``kit.small(point)`` (two or three of its tiles: a sanitizer slows a kernel 10-100 times), on one
input of the chapter's timed kind drawn from ``seed``: uploaded, loaded, run once and its answer
read back (``output``), so that every kernel of the point runs as the timed calls run it. No
answer is judged here: the point's answers are the grader's business (``grading.trials``). After a
fault the process stops: its context is no longer to be trusted.

Every kernel this process compiles gets NVRTC's ``-lineinfo`` (``core.kernels``' one place where
a build's options are formed is wrapped), so that the sanitizer names a file and line.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from cudalab.grading import results as R

LINEINFO = "-lineinfo"


def with_line_info() -> None:
    """Every kernel compiled in this process from now on is built with ``-lineinfo`` (its cache key
    too, so a build without line information is never reused)."""
    from cudalab.core import kernels

    if getattr(kernels._module_key, "_with_line_info", False):
        return
    original = kernels._module_key

    def keyed(path, options):
        options = tuple(options)
        return original(path, options if LINEINFO in options else (*options, LINEINFO))

    keyed._with_line_info = True  # type: ignore[attr-defined]
    kernels._module_key = keyed


def _faulted(exc: BaseException) -> bool:
    return type(exc).__name__ in ("CUDADriverError", "CUDARuntimeError") or "CUDA_ERROR" in str(exc)


def run_point(kit: Any, point: dict[str, Any], kernel_file: str | None, params: dict[str, Any], seed: int) -> None:
    """One point at its small size, once: built, one input of the timed kind loaded, run, read back."""
    from cudalab.labs.checks import input_seed

    small = kit.small(dict(point))
    trial = kit.trial(small, kernel_file, params)
    host_input = kit.draw(kit.timed, small, input_seed(seed, "sanitize", sorted(small.items())))
    trial.load(trial.upload(host_input))
    trial.run()
    trial.stream.synchronize()
    trial.output()
    from cudalab.core.gpu import require_cupy

    require_cupy().cuda.Device().synchronize()


def main() -> int:
    request = json.loads(sys.stdin.read())
    out = open(request["results"], "a", buffering=1)

    def report(index: int, status: str, reason: str = "", point: Any = None) -> None:
        out.write(json.dumps({"index": index, "status": status, "reason": reason, "point": point}, default=str) + "\n")
        out.flush()

    with_line_info()
    from cudalab.chapter.declarations import of
    from cudalab.core.errors import KernelCompileError
    from cudalab.grading import trials
    from cudalab.grading.plan import request_parts

    declared = of(request["chapter"]).yours
    groups = [group for group, _ in request_parts(request)]
    folder = Path(request["folder"]) if request.get("folder") else None
    params, seed = dict(request.get("params") or {}), int(request.get("seed", 0))
    for index, (point, file) in enumerate(request["points"]):
        yours = declared[groups[index]]
        if yours.checks is None:
            report(index, "failed", "the chapter declares no checks kit (yours.checks) to build its points with")
            continue
        kit = trials.kit_of(yours.checks.kit)
        kernel_file = str(folder / file) if folder is not None else None
        try:
            run_point(kit, point, kernel_file, params, seed)
            report(index, "ran", point=kit.small(dict(point)))
        except KernelCompileError as exc:
            report(index, "failed", R.compile_failure(exc))
        except Exception as exc:
            report(index, "failed", R.scrubbed(f"{type(exc).__name__}: {exc}"))
            if _faulted(exc):
                return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
