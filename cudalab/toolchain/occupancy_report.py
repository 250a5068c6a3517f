"""Theoretical occupancy of a chapter's launch configurations on a given GPU.

The kernel's registers and static shared memory come from the compiler's resource report
(``ptxas -v``) for that GPU's architecture, or the oldest one this nvcc compiles for; the limits
per SM from ``core.occupancy``. Computed, not measured: the same in a measured and a replayed
build wherever nvcc is installed (a GPU is not needed).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from cudalab.core.errors import NoRecordedResults, ProfileError, ToolUnavailable
from cudalab.core.occupancy import SM_LIMITS, cc_key, occupancy, sm_limits
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
            raise ToolUnavailable(
                f"{launch['file']}: no kernel {launch['kernel']!r} in the compiler's report (found {', '.join(usages)})"
            )
        u = usages[launch["kernel"]]
        occ = occupancy(
            key, int(launch["threads"]), u.registers, u.shared_bytes, int(launch.get("dynamic_shared_bytes", 0))
        )
        carried = {
            k: v for k, v in launch.items() if k not in ("file", "kernel", "options", "threads", "dynamic_shared_bytes")
        }
        rows.append(
            {
                **carried,
                "kernel": launch["kernel"],
                "threads_per_block": occ["threads_per_block"],
                "registers_per_thread": u.registers,
                "shared_bytes_per_block": occ["shared_bytes_per_block"],
                "blocks_per_sm": occ["blocks_per_sm"],
                "warps_per_sm": occ["warps_per_sm"],
                "occupancy_fraction": occ["occupancy"],
                "limited_by": occ["reason"] or occ["limited_by"],
                "compute_capability": key,
            }
        )
    return pd.DataFrame(rows), notes


# ---- a chapter's occupancy section: its launches on the lab's GPU and on this run's

LAUNCH_KEYS = ("file", "kernel", "options", "threads", "dynamic_shared_bytes")
Launches = Iterable[Mapping[str, Any]] | Callable[[str], Iterable[Mapping[str, Any]]]


def chapter_gpus(device: Any, provenance: Mapping[str, Any]) -> dict[str, str]:
    """{name: compute capability} of the GPUs a chapter's occupancy table covers: the profile's lab
    GPU (``device``, with ``name`` and ``compute_capability``; None where the profile has none) and
    the GPU this run measured on, or whose recording it replays (``provenance``)."""
    gpus: dict[str, str] = {}
    if device is not None and getattr(device, "compute_capability", None):
        gpus[f"{device.name} (lab GPU)"] = str(device.compute_capability)
    if provenance.get("compute_capability"):
        gpus[f"{provenance.get('gpu_name')} (this run)"] = str(provenance["compute_capability"])
    return gpus


def distinct_launches(launches: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The launches, each configuration once: two with the same file, kernel, options, threads and
    dynamic shared memory (one build timed by two sweeps) become one, in the order first listed,
    whose descriptive values are the distinct values of both joined with "; "."""
    merged: dict[tuple, dict[str, Any]] = {}
    for launch in launches:
        key = (
            launch["file"],
            launch["kernel"],
            tuple(launch.get("options", ())),
            int(launch["threads"]),
            int(launch.get("dynamic_shared_bytes", 0)),
        )
        if key not in merged:
            merged[key] = dict(launch)
            continue
        into = merged[key]
        for name, value in launch.items():
            if name in LAUNCH_KEYS:
                continue
            if name not in into:
                into[name] = value
                continue
            seen = str(into[name]).split("; ")
            if str(value) not in seen:
                into[name] = "; ".join(seen + [str(value)])
    return list(merged.values())


def _prefetch(per_cc: Mapping[str, Iterable[Mapping[str, Any]]], workers: int = max(2, os.cpu_count() or 2)) -> None:
    """Compile each distinct (file, options, compute capability) once, all GPUs' builds side by
    side (``kernel_resources_for_cc`` caches the reports): nvcc runs are most of the table's time."""
    from concurrent.futures import ThreadPoolExecutor

    builds = list(
        dict.fromkeys(
            (launch["file"], tuple(launch.get("options", ())), cc)
            for cc, launches in per_cc.items()
            for launch in launches
        )
    )
    if len(builds) < 2:
        return
    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(lambda build: kernel_resources_for_cc(build[0], build[2], build[1]), builds))


def occupancy_by_gpu(launches: Launches, gpus: Mapping[str, str]) -> tuple[pd.DataFrame, list[str]]:
    """``launch_occupancy`` of a chapter's launches on each GPU of ``gpus`` ({name: compute
    capability}, as ``chapter_gpus`` gives them), in one frame with a ``gpu`` column, each
    configuration once (``distinct_launches``), and the notes on where the resources come from.

    ``launches`` is a list of launch dicts, or a function of the compute capability (as the
    occupancy rules key it, e.g. ``"9.0"``) that returns them, for a chapter whose launches depend
    on the GPU (the shared memory a block may opt in to). An empty frame where ``gpus`` is empty;
    ``ToolUnavailable`` where nvcc is not installed."""
    frames, notes = [], []
    listed = {
        name: distinct_launches(launches(resolve_cc(cc)[0]) if callable(launches) else launches)
        for name, cc in gpus.items()
    }
    _prefetch({resolve_cc(cc)[0]: listed[name] for name, cc in gpus.items()})
    for name, cc in gpus.items():
        frame, why = launch_occupancy(listed[name], cc)
        frames.append(frame.assign(gpu=name))
        for part in (part for n in why for part in n.split("; ")):
            if part not in notes:
                notes.append(part)
    return (pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()), notes


OCCUPANCY_COLUMNS = (
    "threads_per_block",
    "registers_per_thread",
    "shared_bytes_per_block",
    "blocks_per_sm",
    "warps_per_sm",
    "occupancy_fraction",
    "limited_by",
)


def occupancy_styled(occ: pd.DataFrame, notes: Sequence[str], keys: Sequence[str]):
    """The occupancy table as the report shows it: per GPU, the launch (``keys``, the chapter's
    columns that name it), its threads, registers and (where any launch has some) shared memory
    per block, the blocks per SM, the occupancy and the binding limit, under short headers that
    wrap at spaces (the table must print on a page)."""
    from cudalab.core import plots

    shared = bool(occ["shared_bytes_per_block"].gt(0).any())
    occ = occ.assign(gpu=occ["gpu"] + ", cc " + occ["compute_capability"].astype(str))
    columns = [
        "gpu",
        *keys,
        *(
            c
            for c in OCCUPANCY_COLUMNS
            if c not in ("shared_bytes_per_block", "warps_per_sm") or (c == "shared_bytes_per_block" and shared)
        ),
    ]
    labels = {
        "gpu": "GPU",
        "threads_per_block": "threads / block",
        "registers_per_thread": "registers / thread",
        "shared_bytes_per_block": "shared bytes / block",
        "blocks_per_sm": "blocks / SM",
        "occupancy_fraction": "occupancy",
        "limited_by": "limited by",
    }
    caption = (
        "theoretical occupancy per SM"
        + ("; " + "; ".join(notes) if notes else "")
        + ("; shared memory per block: static (the compiler's report) + dynamic (the launch's)" if shared else "")
    )
    return plots.styled(occ[columns].rename(columns=labels), {"occupancy": "{:.0%}"}, caption=caption)


def binding_summary(occ: pd.DataFrame, key: str, per_launch: bool = True) -> str:
    """Markdown, a bullet per GPU: its compute capability's resident blocks and threads per SM, then
    each launch's blocks, occupancy and binding limit (``per_launch``), or, for a long table, each
    binding limit with how many launches it binds and their range of occupancy."""
    lines = []
    for name, grp in occ.groupby("gpu", sort=False):
        cc = grp["compute_capability"].iloc[0]
        lim = sm_limits(cc)
        head = f"- **{name}**, compute capability {cc}: at most {lim.max_blocks_per_sm} blocks and {lim.max_threads_per_sm} threads per SM. "
        if per_launch:
            body = "; ".join(
                f"{getattr(r, key)}: {r.blocks_per_sm} blocks ({r.occupancy_fraction:.0%} of the warps), "
                f"limited by {r.limited_by}"
                for r in grp.itertuples()
            )
        else:
            parts = []
            binding = grp["limited_by"].where(~grp["limited_by"].str.startswith("cannot launch"), "cannot launch")
            for limit, rows in grp.groupby(binding, sort=False):
                if limit == "cannot launch":
                    parts.append(f"{len(rows)} of {len(grp)} cannot launch (the table says why)")
                    continue
                low, high = rows["occupancy_fraction"].min(), rows["occupancy_fraction"].max()
                span = f"{low:.0%}" if low == high else f"{low:.0%} to {high:.0%}"
                parts.append(f"{len(rows)} of {len(grp)} limited by {limit} ({span} of the warps)")
            body = "; ".join(parts)
        lines.append(head + body + ".")
    return "\n".join(lines)


def occupancy_section(
    launches: Launches,
    gpus: Mapping[str, str],
    keys: Sequence[str],
    *,
    per_launch: bool = False,
    after: str = "",
    table: Callable[..., pd.DataFrame] | None = None,
) -> pd.DataFrame | None:
    """A chapter's occupancy section as the notebook shows it: the table (``keys`` name each
    launch), then which limit binds (each launch's, ``per_launch``, or grouped by limit), then
    ``after`` (the chapter's reading of it). Without nvcc it says what is missing and returns None.

    ``table`` (the chapter's ``lab.table``) records the table with the chapter's measurements
    (``occupancy``, where the numbers come from in its ``notes`` column), so that a replay shows
    the recording without compiling; a recording made before it was recorded computes it."""
    from IPython.display import Markdown, display

    def compute() -> pd.DataFrame:
        occ, notes = occupancy_by_gpu(launches, gpus)
        return occ.assign(notes="; ".join(notes))

    try:
        if table is None:
            occ = compute()
        else:
            try:
                occ = table("occupancy", compute, axes=("gpu", *keys), dtype={"compute_capability": str, "notes": str})
            except NoRecordedResults:
                occ = compute()
    except ToolUnavailable as exc:
        display(Markdown(f"*Occupancy not computed: {exc}. It needs nvcc (the CUDA toolkit), not a GPU.*"))
        return None
    notes = [n for n in str(occ["notes"].iloc[0]).split("; ") if n and n != "nan"] if len(occ) else []
    return show_occupancy(occ.drop(columns="notes"), notes, keys, per_launch=per_launch, after=after)


def show_occupancy(
    occ: pd.DataFrame, notes: Sequence[str], keys: Sequence[str], *, per_launch: bool = False, after: str = ""
) -> pd.DataFrame | None:
    """Display an occupancy table (``occupancy_by_gpu``'s, computed now or recorded) as
    ``occupancy_section`` does; None where it is empty."""
    from IPython.display import Markdown, display

    if not len(occ):
        return None
    display(
        occupancy_styled(occ, notes, list(keys)),
        Markdown(binding_summary(occ, keys[0], per_launch=per_launch) + (f"\n\n{after}" if after else "")),
    )
    return occ
