"""How a kernel family's graded point is checked, so that a grader's verdict survives a kernel that
is wrong on inputs the timing never tries, keeps answers across calls, or reads an answer lying
elsewhere in device memory.

A chapter's sweep checks each timed configuration in its own process, against a reference it
computes there; that is right for our own kernels, not for a student's. A student's kernel
(``--kernels``, ``--grade``) runs in a process of its own (``grading._worker_target``) where no
answer is ever computed. There it is handed:

- **fresh timed inputs**: every timed call solves an input no call before it solved (a pool of
  distinct inputs of the chapter's own kind, drawn from the run's seed), so a cache across calls
  gains nothing, and the last timed call's answer is kept;
- **check inputs**: the harsh kinds of input its chapter declares beside ``yours:`` (sparse graphs
  with heavy weights, n not a multiple of any tile, n = 1, a cluster that empties, ...), each
  solved once after the timing, in the same process, and a fresh input of the timed kind never
  timed, solved last.

Each answer goes back to the grader as a file; the grader draws the same input from the same seed
in its own process, computes what it must be there (``expected``) and judges it (``verdict``). A
family says how, in a ``Checks`` of its own module (``labs.fw.checks``, ``labs.vecmax_checks``,
``labs.matmul_checks``, ``labs.kmeans.checks``), named by its chapter's ``yours.checks.kit``.

This module is not imported by any chapter's measurement: it decides no recorded number.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

Point = dict[str, Any]


class Trial(Protocol):
    """One kernel configuration of a graded point, built once in the submission's process for one
    shape of input: ``upload`` puts an input on the device as the kernel's plan takes it (untimed,
    before any timing), ``load`` enqueues a copy of an uploaded input into the buffers the kernel
    works on (each timed call's untimed setup), ``run`` enqueues the kernel's launches (what is
    timed), and ``output`` returns the last run's answer on the host (arrays by name). All work is
    on ``stream``."""

    stream: Any

    def upload(self, host_input: Any) -> Any: ...

    def load(self, staged: Any) -> None: ...

    def run(self) -> None: ...

    def output(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class InputKind:
    """A kind of input a point is checked on: what it catches (``about``, said in a verdict) and how
    it is drawn: ``make(point, seed)`` returns the input on the host, the same in every process for
    the same point and seed."""

    about: str
    make: Callable[[Point, int], Any]


@dataclass(frozen=True)
class Checks:
    """A kernel family's checks of a graded point (see the module docstring).

    ``timed``: the kind of input the chapter times (its own), ``kinds``: every kind by name (the
    timed one included), ``trial(point, kernel_file, params)``: the point's ``Trial`` in the
    submission's process, ``expected(point, host_input)``: the answer, computed in the grader's
    process, ``verdict(point, answer, expected, host_input)``: why ``answer`` is wrong, "" where it
    is right. ``small(point)``: the point at a size of two or three of its tiles, where
    compute-sanitizer runs its kernels (slow: 10-100x). ``input_axes``: the point's axes that decide
    its inputs (empty: all of them), so that kernels measured at the same sizes share their inputs
    and the grader computes each answer once. ``launches(point, cc)``: the ``core.launch.Launch``es
    the point makes on the GPU of compute capability ``cc``, built by the family's own launch recipes
    without compiling or a GPU: the builds (``-DBF=32``), blocks and dynamic shared memory a grade
    without a GPU compiles and reports (none: the file compiles with its defaults).
    ``inputs_only``: every kind's draw and ``expected`` read no axis of the point but its
    ``input_axes`` (a Floyd-Warshall graph and its distances are the same at every blocking
    factor), so an input is drawn, and its answer computed, once for all the points that share
    them; False (the default) keys both by the whole point (vecmax's "last block" reads the launch).

    ``Trial.run`` must only enqueue work, never wait for it: the timing may hold the stream behind a
    spin so that the host's dispatch never lands inside a timed region."""

    timed: str
    kinds: Mapping[str, InputKind]
    trial: Callable[[Point, str | None, dict[str, Any]], Trial]
    expected: Callable[[Point, Any], dict[str, Any]]
    verdict: Callable[[Point, dict[str, Any], dict[str, Any], Any], str]
    small: Callable[[Point], Point]
    input_axes: tuple[str, ...] = ()
    launches: Callable[[Point, str], list] | None = None
    inputs_only: bool = False

    def draw(self, kind: str, point: Point, seed: int) -> Any:
        """The input of ``kind`` at ``point`` for ``seed``, as both processes draw it."""
        return self.kinds[kind].make(dict(point), int(seed))


def input_seed(run_seed: int, *parts: Any) -> int:
    """A seed for one input, derived from the grading run's seed and what the input is for (the
    point, the kind, its number): the same in every process, different for every input."""
    text = repr((int(run_seed), *parts)).encode()
    return int.from_bytes(hashlib.sha256(text).digest()[:8], "little") >> 1


# ------------------------------------------------------------------------------ an instructor's cases

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
