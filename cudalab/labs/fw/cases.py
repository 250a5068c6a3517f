"""Lab 001's NTHU test cases as an instructor's hidden inputs for chapter 04 (``--grade --cases``,
``notebooks/04_blocking_factor.yaml``): each graph solved with the student's ``fw_blocked.cu`` in
the student's process, and answered byte for byte as the course judge checks it, against the lab's
reference solvers run in the grader's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cudalab.labs.checks import CaseKind


def _nthu_solve(case: Path, out: Path, kernel_file: str | None, point: dict[str, Any], params: dict[str, Any]) -> float:
    """Solve an NTHU input file with the chapter's shared-memory blocked plan built from
    ``kernel_file`` (the submission's ``fw_blocked.cu``) at the point's blocking factor."""
    from cudalab.labs.fw import nthu_gpu
    from cudalab.labs.fw.blocked.kernels import shared_plan

    plan = shared_plan(int(point.get("block_factor", 32)), file=kernel_file)
    ms, _ = nthu_gpu.solve_file(case, out, plan)
    return ms["compute"]


def _nthu_expected(case: Path) -> bytes:
    """The answer by the lab's reference solvers (the C code for small V, CuPy's min-plus beyond)."""
    import numpy as np

    from cudalab.labs.fw import nthu, nthu_gpu

    v, edges = nthu.read_case(case)
    dist, _ = nthu_gpu.reference_answer(v, edges)
    return np.ascontiguousarray(dist, dtype="<i4").tobytes()


def _nthu_read(case: Path) -> object:
    from cudalab.labs.fw import nthu

    return nthu.read_case(case)


NTHU = CaseKind(
    "an NTHU-format graph (lab 001), answered byte for byte as the course judge checks it",
    _nthu_solve,
    _nthu_expected,
    read=_nthu_read,
)
