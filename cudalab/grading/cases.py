"""An instructor's hidden inputs (``--grade ... --cases DIR``): each file of DIR whose suffix a
chapter declares (``yours.cases`` in ``notebooks/NN_name.yaml``: ``{suffix: .in, kind:
"cudalab.grading.cases:NTHU"}``) is solved by every submission of that chapter with its own kernel,
in its own process, and checked against the expected output that the grader computes in its own
process, held in memory and never written where a submission's process could read it.

A kind of case is two functions: ``solve(case, out, kernel_file, point, params)`` runs in the
submission's process (``_worker_target``), writes the answer to ``out`` and returns the compute
time in ms; ``expected(case)`` runs in the grader and returns the answer's bytes. The check is the
answer's bytes against those, byte for byte.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class CaseKind:
    """How one kind of case file is solved by a submission and what it must answer."""

    about: str
    solve: Callable[..., float]
    expected: Callable[[Path], bytes]


def kind_of(spec: str) -> CaseKind:
    """The ``CaseKind`` that ``"module:NAME"`` names."""
    from cudalab.grading.plan import named

    return named(spec, CaseKind, "yours.cases.kind")


def cases_in(folder: Path | None, suffix: str) -> list[Path]:
    """The case files of ``folder`` with ``suffix``, by name (plain files only, no links)."""
    if folder is None:
        return []
    return sorted(p for p in Path(folder).iterdir() if p.suffix == suffix and p.is_file() and not p.is_symlink())


def differs(answer: Path, expected: bytes) -> str:
    """Why an answer file is not the expected bytes ("" where it is), in words a student can act on."""
    if not answer.is_file():
        return "wrote no output"
    got = answer.read_bytes()
    if got == expected:
        return ""
    if len(got) != len(expected):
        return f"the output has {len(got):,} bytes, the expected {len(expected):,}"
    import numpy as np

    a, b = (
        np.frombuffer(got, dtype="<i4", count=len(got) // 4),
        np.frombuffer(expected, dtype="<i4", count=len(got) // 4),
    )
    wrong = int((a != b).sum())
    return f"{wrong:,} of {a.size:,} int32 entries differ from the reference solver's answer"


# ------------------------------------------------------------------------------ NTHU graphs (lab 001)


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


NTHU = CaseKind(
    "an NTHU-format graph (lab 001), answered byte for byte as the course judge checks it", _nthu_solve, _nthu_expected
)
