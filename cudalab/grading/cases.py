"""An instructor's hidden inputs (``--grade ... --cases DIR``): each file of DIR whose suffix a
chapter declares (``yours.cases`` in ``notebooks/NN_name.yaml``: ``{suffix: .in, kind:
"cudalab.grading.cases:NTHU"}``) is solved by every submission of that chapter with its own kernel,
in its own process, and checked against the expected output that the grader computes in its own
process, held in memory and never written where a submission's process could read it.

A kind of case is three functions: ``solve(case, out, kernel_file, point, params)`` runs in the
submission's process (``_worker_target``), writes the answer to ``out`` and returns the compute
time in ms; ``expected(case)`` runs in the grader and returns what the answer is checked against,
as bytes; ``check(answer, expected)`` runs in the grader too and says why the answer is wrong ("" if
it is right) and a note for the scoreboard. Two kinds:

- ``NTHU`` (chapter 04, lab 001): an NTHU-format graph, answered byte for byte as the course judge
  checks it.
- ``KMEANS`` (chapter 06, lab 004): a classic binary input file (``photo.k16.bin``: K from the
  name, else 32), run to convergence from the first K objects, checked against the sequential
  code's memberships: after the second iteration (one assignment from the student's own updated
  centres) every object must be in the sequential code's cluster unless its two nearest centres
  are a near tie (``reference.TIE_RTOL``), as the chapter's own check counts them. The whole run
  may rightly end elsewhere (float rounding of the sums, chapter 06 shows how far); how far it
  agrees is the scoreboard's note, never the verdict.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Verdict = tuple[str, str]  # (why the answer is wrong, "" where it is right; a note for the scoreboard)


@dataclass(frozen=True)
class CaseKind:
    """How one kind of case file is solved by a submission, what it must answer and how the answer
    is checked (byte for byte unless the kind says otherwise)."""

    about: str
    solve: Callable[..., float]
    expected: Callable[[Path], bytes]
    check: Callable[[Path, bytes], Verdict] | None = None
    read: Callable[[Path], object] | None = None  # reads a case as ``solve`` will: a bad file raises, before any work

    def verdict(self, answer: Path, expected: bytes) -> Verdict:
        """Why ``answer`` is wrong ("" where it is right) and a note, by this kind's check."""
        return self.check(answer, expected) if self.check else (differs(answer, expected), "")


def kind_of(spec: str) -> CaseKind:
    """The ``CaseKind`` that ``"module:NAME"`` names."""
    from cudalab.grading.plan import named

    return named(spec, CaseKind, "yours.cases.kind")


def check_folder(folder: Path, takers: dict[str, tuple[str, str]]) -> dict[str, int]:
    """Every file of an instructor's ``folder`` that a chapter takes, read as that chapter reads it,
    before any work: ``takers`` maps each chapter to its (suffix, kind). Returns the case files per
    chapter; raises ``CudalabError`` in one line for a file its chapter cannot read, or for a
    folder with no file any chapter takes (naming what each takes)."""
    from cudalab.core.errors import CudalabError

    found = {}
    for chapter, (suffix, spec) in takers.items():
        kind = kind_of(spec)
        given = cases_in(folder, suffix)
        for case in given:
            try:
                if kind.read is not None:
                    kind.read(case)
            except CudalabError as exc:
                raise CudalabError(f"--cases: {case.name} ({chapter}): {exc}") from None
            except (OSError, ValueError) as exc:
                raise CudalabError(f"--cases: {case.name} ({chapter}): cannot be read: {exc}") from None
        found[chapter] = len(given)
    if takers and not any(found.values()):
        wanted = "; ".join(f"{chapter} takes *{suffix}" for chapter, (suffix, _) in takers.items())
        raise CudalabError(f"--cases {folder}: no case file a graded chapter takes ({wanted})")
    return found


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


def _nthu_read(case: Path) -> object:
    from cudalab.labs.fw import nthu

    return nthu.read_case(case)


NTHU = CaseKind(
    "an NTHU-format graph (lab 001), answered byte for byte as the course judge checks it",
    _nthu_solve,
    _nthu_expected,
    read=_nthu_read,
)


# ------------------------------------------------------------------------------ k-means inputs (lab 004)

KMEANS_K = 32  # K where a case's name does not say (the chapter's points' K)
EARLY = 2  # the iteration whose memberships are the verdict: the first built on the student's own update


def _kmeans_k(case: Path) -> int:
    """K for a k-means case: ``name.k16.bin`` says 16; without it, ``KMEANS_K``."""
    found = re.search(r"\.k(\d+)$", case.stem)
    return int(found.group(1)) if found else KMEANS_K


def _kmeans_input(case: Path) -> tuple[Any, int]:
    """A k-means case's (N, D) float32 objects and its K, as the classic code reads them: a file
    it cannot read, or K above N, raises ``CaseFormatError``."""
    from cudalab.labs.kmeans import files, reference

    points = files.read_binary(case)
    k = _kmeans_k(case)
    reference.check_k(k, len(points), case.name)
    return points, k


def _kmeans_solve(
    case: Path, out: Path, kernel_file: str | None, point: dict[str, Any], params: dict[str, Any]
) -> float:
    """Run the point's variant, built from ``kernel_file``, to convergence as the classic code
    loops; write the memberships after iteration ``EARLY``, the final ones and the iteration count
    (int32); return the run's GPU time (every stage of every iteration, ms)."""
    import numpy as np

    from cudalab.labs.kmeans import gpu, reference

    points, k = _kmeans_input(case)
    runner = gpu.Runner(gpu.Problem(points, k), str(point["variant"]), kernel_file)
    early, gpu_ms, loop = None, 0.0, 0
    # gpu.run_to_convergence's loop, with the memberships kept at iteration EARLY on the way
    while True:
        changed = runner.step()
        gpu_ms += sum(runner.last_times.values())
        if loop + 1 == EARLY:
            early = runner.result()[1]
        if not (
            np.float32(changed) / np.float32(len(points)) > np.float32(reference.THRESHOLD)
            and loop < reference.MAX_LOOP
        ):
            break
        loop += 1
    final = runner.result()[1]
    early = final if early is None else early
    out.write_bytes(b"".join(np.asarray(a, dtype="<i4").tobytes() for a in (early, final, [loop + 1])))
    return gpu_ms


def _kmeans_expected(case: Path) -> bytes:
    """The sequential code's memberships after iteration ``EARLY`` (or its last, if it stopped
    sooner), which of its objects were near a tie in that assignment (uint8), its final
    memberships and its iteration count."""
    import numpy as np

    from cudalab.labs.kmeans import reference

    points, k = _kmeans_input(case)
    early = reference.classic(points, k, max_loop=EARLY - 1)
    ran = min(early.iterations, EARLY)  # the classic count reads one more where max_loop stopped it
    before = points[:k] if ran == 1 else reference.classic(points, k, max_loop=ran - 2).centres
    _, gap = reference.assign64(points, before)
    whole = reference.classic(points, k)
    tie = (gap < reference.TIE_RTOL).astype(np.uint8)
    return b"".join(
        [
            np.asarray(early.membership, dtype="<i4").tobytes(),
            tie.tobytes(),
            np.asarray(whole.membership, dtype="<i4").tobytes(),
            np.asarray([whole.iterations], dtype="<i4").tobytes(),
        ]
    )


def _kmeans_check(answer: Path, expected: bytes) -> Verdict:
    """Wrong where an object is outside the sequential code's cluster after iteration ``EARLY``
    without a near tie; the whole run's agreement is the note."""
    import numpy as np

    n = (len(expected) - 4) // 9
    want_early = np.frombuffer(expected, dtype="<i4", count=n)
    tie = np.frombuffer(expected, dtype=np.uint8, count=n, offset=4 * n).astype(bool)
    want_final = np.frombuffer(expected, dtype="<i4", count=n, offset=5 * n)
    want_its = int(np.frombuffer(expected, dtype="<i4", count=1, offset=9 * n)[0])
    if not answer.is_file():
        return "wrote no output", ""
    got = answer.read_bytes()
    if len(got) != 8 * n + 4:
        return f"the output has {len(got):,} bytes, the expected {8 * n + 4:,}", ""
    early, final = np.frombuffer(got, dtype="<i4", count=n), np.frombuffer(got, dtype="<i4", count=n, offset=4 * n)
    iterations = int(np.frombuffer(got, dtype="<i4", count=1, offset=8 * n)[0])
    off = (early != want_early) & ~tie
    if off.any():
        i = int(np.flatnonzero(off)[0])
        return (
            f"after iteration {EARLY}, {int(off.sum()):,} of {n:,} objects are outside the sequential code's "
            f"cluster and not near a tie (object {i}: cluster {int(early[i])}, expected {int(want_early[i])})",
            "",
        )
    same = float((final == want_final).mean())
    return (
        "",
        f"whole run: {same:.2%} of objects in the sequential code's cluster, {iterations} iterations (its {want_its})",
    )


KMEANS = CaseKind(
    "a classic k-means binary input (lab 004), checked against the sequential code's memberships",
    _kmeans_solve,
    _kmeans_expected,
    _kmeans_check,
    _kmeans_input,
)
