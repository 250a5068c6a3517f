"""An instructor's hidden inputs (``--grade ... --cases DIR``): each file of DIR whose suffix a
chapter declares (``yours.cases`` in ``notebooks/NN_name.yaml``: ``{suffix: .in, kind:
"cudalab.grading.cases:NTHU"}``) is solved by every submission of that chapter with its own kernel,
in its own process, and checked against the expected output that the grader computes in its own
process, held in memory and never written where a submission's process could read it.

A kind of case (``labs.checks.CaseKind``) lives with its kernel family, named by the chapter's
declaration: ``labs.fw.cases.NTHU`` and ``labs.kmeans.cases.KMEANS``. It is three functions: ``solve(case, out, kernel_file, point, params)`` runs in the
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

from pathlib import Path

from cudalab.labs.checks import CaseKind


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
