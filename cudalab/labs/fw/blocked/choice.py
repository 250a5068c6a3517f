"""Which blocked kernel to run for a graph of V vertices, from the times chapter 04 recorded.

Chapter 04 names one best kernel: the fastest at the largest N of its sweep. A solve of another
size pads its matrix to a multiple of the kernel's blocking factor, and a deep round pays for it:
at V = 12,000 BF 512 pads to 12,288 (7.4% more relaxations than 12,032, BF 256's padding), and
on an H100 the chapter's time split took 118.7 ms to compute with BF 512 where BF 256 had taken
112.8 ms, though BF 512 is the faster at 16,384. Small graphs go the other way: at N = 3,072 the
shallow BF 64 beats both, its rounds filling more of the GPU.

So the kernels the chapter timed correctly at the recorded N nearest V (on a log scale) are
compared there, each time scaled to V by the cube of the padded sizes, and the fastest expected
is chosen. The expectation only ranks the recorded kernels; it is never reported as a measurement.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from cudalab.labs.fw.blocked.kernels import KernelSpec
from cudalab.labs.fw.blocked.plans import padded_size

# chapter 04's tables that time whole solves of named blocked kernels (the ladder at its one N,
# the blocking-factor sweep at the profile's largest)
TABLES = ("ladder", "blocking_factor_sweep")
KINDS = ("shared", "registers", "min-plus")


@dataclass(frozen=True)
class Choice:
    """A kernel for V vertices: the recorded time it was judged by (``measured_ms`` at
    ``from_n``) and what that time scales to at V (``expected_ms``)."""

    spec: KernelSpec
    v: int
    from_n: int
    measured_ms: float
    expected_ms: float

    def reason(self) -> str:
        return (
            f"of chapter 04's kernels, the fastest expected at V = {self.v:,}: "
            f"{self.measured_ms:.3g} ms recorded at N = {self.from_n:,}, about {self.expected_ms:.3g} ms "
            f"scaled to V padded to {padded_size(self.v, self.spec.bf):,}"
        )


def candidates(rows: pd.DataFrame, v: int) -> pd.DataFrame:
    """The blocked kernels of ``rows`` (chapter 04's tables, concatenated) timed correctly at the
    recorded N nearest ``v`` on a log scale (the next nearest where none was), each with its time
    scaled to ``v``: ``expected_ms``, the fastest first. Kernels are compared at one N only: a
    cube scales a large N's time down to a small graph far too kindly for a deep round, which
    leaves most of the GPU idle there."""
    if v < 1:
        raise ValueError(f"a graph has at least one vertex, not {v}")
    need = {"n", "kernel", "block_factor", "time_ms", "status"}
    if rows.empty or not need <= set(rows.columns):
        return pd.DataFrame(columns=[*rows.columns, "spec", "expected_ms"])
    ok = rows[
        rows["status"].eq("ok")
        & rows["kernel"].astype(str).str.startswith(KINDS)
        & rows["block_factor"].notna()
        & rows["time_ms"].gt(0)
    ]
    if ok.empty:
        return ok.assign(spec=[], expected_ms=[])
    at = min(ok["n"].unique(), key=lambda n: (abs(np.log(n / v)), n))
    here = ok[ok["n"].eq(at)].copy()
    here["spec"] = [KernelSpec.from_row(r) for r in here.itertuples()]
    scale = [(padded_size(v, int(b)) / padded_size(int(at), int(b))) ** 3 for b in here["block_factor"]]
    here = here.assign(expected_ms=here["time_ms"] * scale, key=[s.as_text() for s in here["spec"]])
    here = here.sort_values(["expected_ms", "key"]).drop_duplicates("key")  # a kernel in two tables: its faster
    return here.drop(columns=["key"]).reset_index(drop=True)


def choose(rows: pd.DataFrame, v: int) -> Choice | None:
    """The kernel to run for ``v`` vertices (see the module's docstring), or None where ``rows``
    time no blocked kernel correctly."""
    ranked = candidates(rows, v)
    if ranked.empty:
        return None
    best = ranked.iloc[0]
    return Choice(best["spec"], v, int(best["n"]), float(best["time_ms"]), float(best["expected_ms"]))
