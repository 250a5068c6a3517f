"""Theoretical occupancy of a chapter's launch configurations on a given GPU.

The kernel's registers and static shared memory come from the compiler's resource report
(``ptxas -v``) for that GPU's architecture, or the oldest one this nvcc compiles for; the limits
per SM from ``core.occupancy``. Computed, not measured: the same in a measured and a replayed
build wherever nvcc is installed (a GPU is not needed).
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

import pandas as pd

from cudalab.core.errors import ProfileError, ToolUnavailable
from cudalab.core.occupancy import SM_LIMITS, cc_key, occupancy
from cudalab.toolchain.nvcc import kernel_resources_for_cc


def resolve_cc(cc: str) -> tuple[str, str]:
    """(a compute capability the occupancy rules know, a note) for a profile's ``cc``; a lab that
    gives only the major version ("5.x") gets that major's first minor, and the note says so."""
    text = str(cc).strip()
    try:
        return cc_key(text), ""
    except ProfileError:
        major = text.split(".")[0]
        known = sorted(k for k in SM_LIMITS if k.split(".")[0] == major)
        if not known:
            raise
        return known[0], f"compute capability {text} taken as {known[0]} (the source gives no minor version)"


def launch_occupancy(launches: Iterable[Mapping[str, Any]], cc: str) -> tuple[pd.DataFrame, list[str]]:
    """One row per launch: its keys other than ``file``, ``kernel``, ``options``, ``threads`` and
    ``dynamic_shared_bytes`` are carried through (the chapter's name for the configuration), then
    the kernel's registers and shared memory on ``cc`` and the occupancy with its binding limit.

    Returns the frame and the notes on where the resources come from. Raises ``ToolUnavailable``
    where nvcc is not installed."""
    key, cc_note = resolve_cc(cc)
    rows, notes = [], [cc_note] if cc_note else []
    for launch in launches:
        usages, note = kernel_resources_for_cc(launch["file"], key, tuple(launch.get("options", ())))
        if note and note not in notes:
            notes.append(note)
        if launch["kernel"] not in usages:
            raise ToolUnavailable(f"{launch['file']}: no kernel {launch['kernel']!r} in the compiler's report "
                                  f"(found {', '.join(usages)})")
        u = usages[launch["kernel"]]
        occ = occupancy(key, int(launch["threads"]), u.registers, u.shared_bytes, int(launch.get("dynamic_shared_bytes", 0)))
        carried = {k: v for k, v in launch.items()
                   if k not in ("file", "kernel", "options", "threads", "dynamic_shared_bytes")}
        rows.append({**carried, "kernel": launch["kernel"], "threads_per_block": occ["threads_per_block"],
                     "registers_per_thread": u.registers, "shared_bytes_per_block": occ["shared_bytes_per_block"],
                     "blocks_per_sm": occ["blocks_per_sm"], "warps_per_sm": occ["warps_per_sm"],
                     "occupancy_fraction": occ["occupancy"], "limited_by": occ["reason"] or occ["limited_by"],
                     "compute_capability": key})
    return pd.DataFrame(rows), notes
