"""What differs in the hardware between the recordings compared, and which ceiling each kernel
followed: the opening of every chapter's "what changed in the lesson".

The ceilings are those the chapters declare and measure (chapter 00's copy and read bandwidth,
its int32 add+min rate: ``chapter.declarations``), read from each recording. A kernel's speed
ratio between two recordings is set beside the ceilings' ratios: a kernel bound by memory gains
what the bandwidth gained, one bound by arithmetic what the arithmetic rate gained. Which ceiling
a kernel sits under on its roofline is what its ratio follows; a ratio near neither says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from cudalab.chapter import catalog, declarations
from cudalab.report.compare.sources import Source

# The ceiling that stands for each kind of bound, and how a ceiling is named in a sentence.
MEMORY, COMPUTE = "dram_Bps", "add_min_per_s"
NAMES = {
    "dram_Bps": "DRAM copy bandwidth",
    "dram_read_Bps": "DRAM read bandwidth",
    "add_min_per_s": "int32 add+min rate",
}
FOLLOWS_WITHIN = 0.12  # a speed ratio within 12% of a ceiling's ratio (on a log scale) follows it


def ceilings(source: Source) -> dict[str, float]:
    """The ceilings a recording measured (every chapter that offers some), by name; {} for the lab."""
    if source.path is None:
        return {}
    found: dict[str, float] = {}
    for chapter in catalog.discover():
        found |= declarations.of(chapter).read_ceilings(source.path / chapter.id)
    return found


def _shown(name: str, value: float) -> str:
    if name.endswith("_Bps"):
        return f"{value / 1e9:,.0f} GB/s"
    if name.endswith("_per_s"):
        return f"{value / 1e12:.2f} T/s"
    return f"{value:.3g}"


@dataclass(frozen=True)
class Hardware:
    """Two recordings' ceilings: ``ratios`` (later over first) of those both measured."""

    first: str
    later: str
    values: dict[str, tuple[float, float]]

    @property
    def ratios(self) -> dict[str, float]:
        return {k: b / a for k, (a, b) in self.values.items() if a > 0}

    def sentence(self) -> str:
        """'The hardware: H200's DRAM copy bandwidth is 1.42x H100's (4,211 vs 2,965 GB/s); ... so
        a memory-bound kernel can gain up to 1.42x and a compute-bound one 1.00x.'"""
        parts = [
            f"{NAMES[k]} {r:.2f}x ({_shown(k, self.values[k][1])} against {_shown(k, self.values[k][0])})"
            for k, r in self.ratios.items()
            if k in NAMES
        ]
        if not parts:
            return ""
        out = f"The hardware, as chapter 00 measured it: on {self.later} against {self.first}, " + "; ".join(parts)
        m, c = self.ratios.get(MEMORY), self.ratios.get(COMPUTE)
        if m is not None and c is not None:
            out += (
                f". So a kernel bound by memory bandwidth can gain about {m:.2f}x, "
                f"one bound by integer arithmetic about {c:.2f}x"
            )
        return out + "."

    def follows(self, speed_ratio: float) -> str:
        """Which ceiling a kernel whose speed changed by ``speed_ratio`` followed: "memory",
        "compute", or "" (near neither, or the two ceilings moved alike)."""
        m, c = self.ratios.get(MEMORY), self.ratios.get(COMPUTE)
        if m is None or c is None or speed_ratio <= 0 or abs(math.log(m / c)) < FOLLOWS_WITHIN:
            return ""
        dm, dc = abs(math.log(speed_ratio / m)), abs(math.log(speed_ratio / c))
        if min(dm, dc) > FOLLOWS_WITHIN:
            return ""
        return "memory" if dm < dc else "compute"


def compare(first: Source, later: Source) -> Hardware | None:
    """The two recordings' ceilings side by side, or None where either has none."""
    a, b = ceilings(first), ceilings(later)
    both = {k: (a[k], b[k]) for k in a if k in b}
    return Hardware(first.label, later.label, both) if both else None
