"""Lab 001's optimization ladder: its seven steps, each a build of one of our kernel files.

The lab optimised its blocked Floyd-Warshall in seven steps (a GPU baseline, coalesced access,
unrolling, shared memory, ``min()`` for an arithmetic select, a larger blocking factor, capped
registers). Chapter 04 rebuilds each step as a build option of ``fw_blocked_global.cu`` or
``fw_blocked.cu`` so that each step's gain can be measured beside the lab's.
"""

from __future__ import annotations

from dataclasses import dataclass

from cudalab.labs.fw.blocked.kernels import GLOBAL_FILE, SHARED_FILE, global_options, plan_for_build, shared_options
from cudalab.labs.fw.blocked.plans import BlockedPlan


@dataclass(frozen=True)
class LadderStep:
    """One step of lab 001's optimization ladder: a build of one of our kernel files."""

    step: int
    name: str  # the lab's name for the step
    change: str  # what it changes, in our words
    bf: int
    file: str
    options: tuple[str, ...]

    @property
    def label(self) -> str:
        """The step as the chapter's tables name it (``1. GPU baseline``)."""
        return f"{self.step}. {self.name}"

    def make(self) -> BlockedPlan:
        return plan_for_build(self.file, self.options, self.bf)


OPTIMIZATION_STEPS: tuple[LadderStep, ...] = (
    LadderStep(
        1,
        "GPU baseline",
        "blocked, all in global memory, threads walk down columns",
        32,
        GLOBAL_FILE,
        global_options(coalesced=False, unroll=False),
    ),
    LadderStep(2, "Coalesced memory access", "threads walk along rows", 32, GLOBAL_FILE, global_options(True, False)),
    LadderStep(3, "Unroll", "#pragma unroll on the k loop", 32, GLOBAL_FILE, global_options(True, True)),
    LadderStep(
        4,
        "Shared memory",
        "each phase stages its tiles in shared memory",
        32,
        SHARED_FILE,
        shared_options(32, select_by_arithmetic=True),
    ),
    LadderStep(
        5, "Modify if-branch to min", "min() instead of an arithmetic select", 32, SHARED_FILE, shared_options(32)
    ),
    LadderStep(
        6, "Large blocking factor", "BF 64 on 32 x 32 threads, 4 cells each", 64, SHARED_FILE, shared_options(64)
    ),
    LadderStep(7, "Occupancy optimization", "-maxrregcount=22", 64, SHARED_FILE, shared_options(64, maxrregcount=22)),
)
