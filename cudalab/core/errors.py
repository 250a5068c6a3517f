"""Every error cudalab raises on purpose, under one base class.

A face (``build_report.py``, ``python -m cudalab.apsp``, the tools) catches ``CudalabError`` and
turns it into a message and an exit status; anything else escaping is a bug. Each class also
derives from the builtin it refines, so ``except ValueError`` in a user's notebook still works.
"""

from __future__ import annotations

from pathlib import Path


class CudalabError(Exception):
    """Base of every deliberate cudalab error; its message says what went wrong and what to do."""


# ---- bad input: profiles, chapters, files, recordings


class ProfileError(CudalabError, ValueError):
    """A profile that cannot be used; the message says what and where."""


class ParameterError(CudalabError, ValueError):
    """A chapter parameter of the wrong type, out of range or not declared; one line per problem,
    each naming the parameter, what was given, what is expected and how to give it.

    In a notebook it shows as that message alone: IPython renders an exception through its
    ``_render_traceback_`` where it has one, and the traceback would only point into cudalab."""

    def _render_traceback_(self) -> list[str]:
        return [f"\x1b[0;31m{type(self).__name__}\x1b[0m: {self}"]


class ChapterNotFound(CudalabError, ValueError):
    """A chapter named on the command line that no notebook provides."""


class NoRecordedResults(CudalabError, FileNotFoundError):
    """Replay was asked for a recording, or a table of one, that no GPU run recorded."""


class CaseFormatError(CudalabError, ValueError):
    """A test-case file that does not follow its format; the message names the problem and offset."""


class BadPoint(CudalabError, ValueError):
    """A point to measure that does not fit its chapter's recipe: an unknown name, a value of the
    wrong type, a choice that is not offered; the message says which and what is expected."""


class UnsafeOutput(CudalabError, ValueError):
    """An output folder that a build must not write into (the checkout, a stranger's folder, a file)."""


class NoGPU(CudalabError, RuntimeError):
    """A measurement was asked for where no CUDA device (or no CuPy) is present."""


# ---- a sweep point the GPU cannot run: skipped with its reason, the sweep goes on


class SkipPoint(CudalabError):
    """This sweep point cannot run on the present GPU; the message says why."""


class LaunchRefused(SkipPoint):
    """The GPU or the compiled kernel cannot take this launch configuration."""


class NotEnoughMemory(SkipPoint):
    """The point needs more GPU memory than is free."""


class PointTimeLimit(SkipPoint):
    """One call of the point took longer than the per-point time limit."""


# ---- kernels and the CUDA tools


class KernelCompileError(CudalabError, RuntimeError):
    """A ``.cu`` file that does not compile; carries the file, line and full log."""

    def __init__(self, path: Path, line: int | None, message: str, log: str):
        self.path, self.line, self.message, self.log = Path(path), line, message, log
        where = f"{self.path}:{line}" if line else str(self.path)
        super().__init__(f"{where}: {message}\n--- compiler log ---\n{log.strip()}")


class ToolUnavailable(CudalabError, FileNotFoundError):
    """A CUDA tool (nvcc, cuobjdump, ncu, compute-sanitizer) or the C compiler is missing here."""


class CountersUnavailable(ToolUnavailable):
    """Nsight Compute is missing here, or may not read the GPU's counters."""


class MeasurementError(CudalabError, RuntimeError):
    """A measurement that ran but produced nothing usable (no correct result, no samples)."""
