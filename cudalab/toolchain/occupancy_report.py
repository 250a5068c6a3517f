"""Theoretical occupancy of kernel launches (``core.launch.Launch``) on a given GPU, computed.

The kernel's registers and static shared memory come, on the architecture of the GPU present, from
the kernel as this process loaded it (NVRTC's build, the code it timed: ``loaded_usage``), and
otherwise from the compiler's resource report (``ptxas -v``) for that GPU's architecture, or the
oldest one this nvcc compiles for; the limits per SM from ``core.occupancy``. Why the loaded kernel
first: a measured chapter has compiled every build it times, and asking nvcc for the same
architecture compiled each one twice (a third of an h100 chapter's compiles beside the lab GPU's
sm_75 reports, half of an h200 one's), which chapters running side by side pay on one host's CPUs
(issue 45). A chapter records the table, so a replay shows the same numbers
without a GPU. Frames only: how a chapter shows and records them is the chapter layer's
(``chapter/occupancy.py``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping

import pandas as pd

from cudalab.core.errors import ProfileError, ToolUnavailable
from cudalab.core.gpu import compute_capability
from cudalab.core.kernels import loaded_module
from cudalab.core.launch import Launch
from cudalab.core.occupancy import SM_LIMITS, cc_key, occupancy
from cudalab.toolchain.nvcc import kernel_resources_for_cc

LOADED_NOTE = (
    "compute capability {cc}: registers and static shared memory of the kernels as this run loaded "
    "them (NVRTC's build, the code timed)"
)


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


def present_key() -> str | None:
    """The compute capability of the GPU present, as the occupancy rules key it; None without one."""
    cc = compute_capability()
    try:
        return resolve_cc(cc)[0] if cc else None
    except ProfileError:  # a GPU newer than the rules: its reports come from nvcc, which says so
        return None


def loaded_usage(launch: Launch) -> tuple[int, int] | None:
    """(registers per thread, static shared bytes) of ``launch``'s kernel as this process loaded it
    (``core.kernels.loaded_module``: compiled by NVRTC for the GPU present, never compiled here), or
    None where this process has not loaded that build or it has no such kernel."""
    module = loaded_module(launch.file, launch.options)
    if module is None:
        return None
    try:
        kernel = module.get_function(launch.kernel)
        return int(kernel.num_regs), int(kernel.shared_size_bytes)
    except Exception:  # CuPy's error for a name the module lacks (a mangled one): nvcc's report names it
        return None


def _resources(launch: Launch, key: str, loaded: bool, notes: list[str], unloaded: list[Launch]) -> tuple[int, int]:
    """(registers per thread, static shared bytes) of ``launch``'s kernel on compute capability
    ``key``: as loaded where ``loaded`` (the GPU present has that compute capability) and this
    process loaded it, else from the compiler's report (and, where ``loaded``, ``launch`` goes to
    ``unloaded``); the note that says which goes to ``notes``."""
    usage = loaded_usage(launch) if loaded else None
    if usage is not None:
        note = LOADED_NOTE.format(cc=key)
    else:
        if loaded:
            unloaded.append(launch)
        usages, note = kernel_resources_for_cc(launch.file, key, launch.options)
        if launch.kernel not in usages:
            raise ToolUnavailable(
                f"{launch.file}: no kernel {launch.kernel!r} in the compiler's report (found {', '.join(usages)})"
            )
        usage = usages[launch.kernel].registers, usages[launch.kernel].shared_bytes
    if note and note not in notes:
        notes.append(note)
    return usage


def launch_occupancy(launches: Iterable[Launch], cc: str) -> tuple[pd.DataFrame, list[str]]:
    """One row per launch: its ``labels`` (the chapter's name for the configuration), its kernel,
    then the kernel's registers and shared memory on ``cc`` and the occupancy with its binding limit.

    Returns the frame and the notes on where the resources come from. Raises ``ToolUnavailable``
    where nvcc is not installed and a kernel was not loaded by this process on a GPU of ``cc``."""
    key, cc_note = resolve_cc(cc)
    rows, notes = [], [cc_note] if cc_note else []
    loaded, unloaded = present_key() == key, []
    launches = list(launches)
    for launch in launches:
        registers, shared_bytes = _resources(launch, key, loaded, notes, unloaded)
        occ = occupancy(key, launch.threads, registers, shared_bytes, launch.dynamic_shared_bytes)
        rows.append(
            {
                **launch.labels,
                "kernel": launch.kernel,
                "threads_per_block": occ["threads_per_block"],
                "registers_per_thread": registers,
                "shared_bytes_per_block": occ["shared_bytes_per_block"],
                "blocks_per_sm": occ["blocks_per_sm"],
                "warps_per_sm": occ["warps_per_sm"],
                "occupancy_fraction": occ["occupancy"],
                "limited_by": occ["reason"] or occ["limited_by"],
                "compute_capability": key,
            }
        )
    if unloaded:  # on the GPU present, yet not the code timed: said, with the first few named
        named = ", ".join(dict.fromkeys(f"{u.kernel} {' '.join(u.options)}".strip() for u in unloaded[:3]))
        notes.append(
            f"compute capability {key}: {len(unloaded)} of {len(launches)} launches from the compiler's report "
            f"(ptxas -v), since this run did not load their builds ({named}{', ...' if len(unloaded) > 3 else ''})"
        )
    return pd.DataFrame(rows), notes


# ---- a chapter's launches on several GPUs

Launches = Iterable[Launch] | Callable[[str], Iterable[Launch]]


def distinct_launches(launches: Iterable[Launch]) -> list[Launch]:
    """The launches, each configuration once: two with the same ``Launch.key`` (file, kernel,
    options, threads and dynamic shared memory: one build timed by two sweeps) become one, in the
    order first listed, whose labels are the distinct values of both joined with "; "."""
    merged: dict[tuple, Launch] = {}
    for launch in launches:
        into = merged.get(launch.key)
        if into is None:
            merged[launch.key] = launch
            continue
        labels = dict(into.labels)
        for name, value in launch.labels.items():
            if name not in labels:
                labels[name] = value
                continue
            seen = str(labels[name]).split("; ")
            if str(value) not in seen:
                labels[name] = "; ".join(seen + [str(value)])
        merged[launch.key] = into.relabel(**labels)
    return list(merged.values())


def _prefetch(per_cc: Mapping[str, Iterable[Launch]], workers: int = max(2, os.cpu_count() or 2)) -> None:
    """Compile each distinct (file, options, compute capability) once, all GPUs' builds side by
    side (``kernel_resources_for_cc`` caches the reports): nvcc runs are most of the table's time.
    None for a build this process loaded on the GPU present (``loaded_usage`` reads it)."""
    from concurrent.futures import ThreadPoolExecutor

    present = present_key()
    builds = list(
        dict.fromkeys(
            (launch.file, launch.options, cc)
            for cc, launches in per_cc.items()
            for launch in launches
            if not (cc == present and loaded_usage(launch) is not None)
        )
    )
    if len(builds) < 2:
        return
    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(lambda build: kernel_resources_for_cc(build[0], build[2], build[1]), builds))


def occupancy_by_gpu(launches: Launches, gpus: Mapping[str, str]) -> tuple[pd.DataFrame, list[str]]:
    """``launch_occupancy`` of a chapter's launches on each GPU of ``gpus`` ({name: compute
    capability}, e.g. a chapter's lab GPU and the GPU of its run), in one frame with a ``gpu`` column, each
    configuration once (``distinct_launches``), and the notes on where the resources come from.

    ``launches`` is a list of ``Launch``, or a function of the compute capability (as the
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
