"""A chapter's occupancy section: its launches' theoretical occupancy on the lab's GPU and on
this run's, as a table the report prints and a few lines on which limit binds.

The numbers are computed (``toolchain.occupancy_report``: the compiler's resource report and
``core.occupancy``'s limits per compute capability); this module chooses the GPUs, records the
table with the chapter's measurements (so that a replay shows the recording without compiling)
and displays it. A notebook asks for it as ``lab.occupancy(launches, keys)``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd

from cudalab.core.errors import NoRecordedResults, ToolUnavailable
from cudalab.core.occupancy import sm_limits
from cudalab.toolchain.occupancy_report import Launches, occupancy_by_gpu

if TYPE_CHECKING:
    from cudalab.core.launch import Launch


def chapter_gpus(device: Any, provenance: Mapping[str, Any]) -> dict[str, str]:
    """{name: compute capability} of the GPUs a chapter's occupancy table covers: the profile's lab
    GPU (``device``, with ``name`` and ``compute_capability``; None where the profile has none) and
    the GPU this run measured on, or whose recording it replays (``provenance``).

    A profile whose GPU no lab ran on (``device.lab`` empty: the h200 profile's H200, from its
    specification) has no lab GPU to set beside this run's: it is listed, as "the profile's GPU",
    only where its compute capability differs from this run's, since the same compute capability
    gives the same table twice."""
    gpus: dict[str, str] = {}
    run_cc = str(provenance.get("compute_capability") or "")
    if device is not None and getattr(device, "compute_capability", None):
        cc = str(device.compute_capability)
        if getattr(device, "lab", "given"):
            gpus[f"{device.name} (lab GPU)"] = cc
        elif cc != run_cc:
            gpus[f"{device.name} (the profile's GPU, no lab ran on it)"] = cc
    if run_cc:
        gpus[f"{provenance.get('gpu_name')} (this run)"] = run_cc
    return gpus


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
    """The occupancy table as the report shows it: the launch (``keys``, the chapter's columns that
    name it), its threads, registers and (where any launch has some) shared memory per block, the
    blocks per SM, the occupancy and the binding limit, under short headers that wrap at spaces
    (the table must print on a page). A table of one GPU names it in its caption, not in a column
    that would repeat it, wrapped over several lines, in every row; of several, a column says."""
    from cudalab.core import plots

    shared = bool(occ["shared_bytes_per_block"].gt(0).any())
    named = occ["gpu"] + ", cc " + occ["compute_capability"].astype(str)
    one_gpu = named.nunique() == 1
    occ = occ.assign(gpu=named)
    columns = [
        *(() if one_gpu else ("gpu",)),
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
        + (f" on {named.iloc[0]}" if one_gpu and len(named) else "")
        + ("; " + "; ".join(notes) if notes else "")
        + ("; shared memory per block: static (the compiler's report) + dynamic (the launch's)" if shared else "")
    )
    # The launch's key columns and up to seven of numbers: past ten columns print small, or the
    # last ones fall off the page (chapter 06: variant, stage, shape and kernel name each launch).
    small = len(columns) > 10
    return plots.styled(
        occ[columns].rename(columns=labels), {"occupancy": "{:.0%}"}, caption=caption, small_print=small
    )


def notes_of(notes: Sequence[str], compute_capability: str, every: Sequence[str]) -> list[str]:
    """The notes that concern the GPU of ``compute_capability``: those that name it, and those that
    name none of the table's compute capabilities (``every``)."""

    def names(note: str, cc: str) -> bool:
        return f"compute capability {cc}" in note

    return [n for n in notes if names(n, compute_capability) or not any(names(n, cc) for cc in every)]


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


def compile_ahead(launches: Iterable[Launch], gpus: Mapping[str, str]) -> int:
    """Compile a chapter's kernel builds before the first is timed, every compile it will need in one
    go: each build with NVRTC for this GPU (``core.kernels.precompile``) and, side by side, with nvcc
    for each other architecture of its occupancy table (``gpus``, as ``chapter_gpus`` names them: the
    compiler's resource reports, ``kernel_resources_for_cc``, which the occupancy section then reads
    from its cache). This GPU's own architecture needs no report: the section reads the loaded
    kernels (``occupancy_report.loaded_usage``), so each build compiles once for it, not twice.
    Returns how many builds.

    Why together: a chapter's compiles are paced by its slowest builds (chapter 06's 21 NVRTC
    builds: 27 s on one thread, 14 s on sixteen, on an H100 host), and made after the measurements
    the reports paid them again in a cell of their own. Side by side they add a few seconds to the
    precompile instead (chapter 04 on an H100 host: its occupancy cell from 6.8 s to 0.1 s, its
    precompile from 11.4 to 13.9 s), and nothing compiles while a point is timed. A build or
    report that fails is left for its first use to report, where the chapter says which; a launch
    whose options differ on the lab's GPU (``launches`` given as a function of the compute
    capability) compiles there, as before. The one kernel of the checks that CuPy takes
    seconds to compile compiles here too, in the same pool (``warm_checks``)."""
    import os
    from concurrent.futures import ThreadPoolExecutor, wait

    from cudalab.core.errors import CudalabError
    from cudalab.core.kernels import precompile
    from cudalab.toolchain.nvcc import kernel_resources_for_cc
    from cudalab.toolchain.occupancy_report import present_key, resolve_cc

    builds = list(dict.fromkeys(launch.build for launch in launches))
    keys, present = [], present_key()
    for cc in dict.fromkeys(gpus.values()):
        try:
            key = resolve_cc(cc)[0]
        except CudalabError:  # a compute capability the rules do not know: the section says so
            continue
        if key != present and key not in keys:  # the GPU present: its loaded kernels, compiled below
            keys.append(key)
    reports = [(file, options, key) for file, options in builds for key in keys]

    def report(job: tuple[str, tuple[str, ...], str]) -> None:
        try:
            kernel_resources_for_cc(job[0], job[2], job[1])
        except CudalabError:
            pass

    device = _current_device()
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        pending = [pool.submit(warm_checks, device)] if device is not None else []
        pending += [pool.submit(report, job) for job in reports]
        precompile(builds)
        for done in wait(pending).done:
            done.result()  # a compiler's error is left for the build's first use; anything else is a bug
    return len(builds)


# A warm-up array's shape: as many entries as CuPy needs to choose the block size it chooses for a
# chapter's results (a reduction is compiled per block size, which grows with the entries up to
# 512 threads at 2,048 of them), so that the kernels compiled here are those the checks then use.
WARM_SHAPE = (64, 64)


def warm_checks(device: int) -> None:
    """Compile on ``device`` now, beside the chapter's other compiles, the one CuPy kernel of the
    checks that costs seconds: the sum of a boolean array by which ``core.check`` counts a
    result's mismatches (``compare``, ``compare_close``), compiled through CUB on first use.

    Why: with an empty kernel cache that first sum took 4.5 s on an H100 host, and a cold build's
    chapters share one cache, so only the first chapter to check paid it. Chapter 04's ladder took
    11.8 s alone with an empty cache and 4.9 s with a warm one (docs/tuning-log.md),
    and under ``--workers`` a chapter paid or not by the order the chapters ran in. CuPy's other
    kernels in the checks are elementwise and compile in about 0.1 s each
    (docs/tuning-log.md). Run in ``compile_ahead``'s pool, the compile hides
    behind the chapter's slowest builds. The sum is written here as the checks write it, not
    called through them: importing ``core.check`` from here would make it a deciding file of every
    chapter (``staleness``), those that never check included; ``tests/test_gpu_warm_checks.py``
    holds the two together. A failure is left for the check itself to report."""
    try:
        import cupy as cp

        with cp.cuda.Device(device):
            exact = cp.zeros(WARM_SHAPE, dtype=cp.int32)  # the distance matrices' type
            int((exact != exact).sum())
    except Exception:  # noqa: BLE001 - a warm-up; the chapter's own check says what is wrong
        pass


def _current_device() -> int | None:
    """The CUDA device this thread uses (pool threads start on device 0), or None without a GPU."""
    try:
        import cupy as cp

        return int(cp.cuda.Device().id)
    except Exception:  # noqa: BLE001 - no CuPy, no driver, no device: nothing to warm
        return None


def occupancy_section(
    launches: Launches,
    gpus: Mapping[str, str],
    keys: Sequence[str],
    *,
    per_launch: bool = False,
    after: str = "",
    table: Callable[..., pd.DataFrame] | None = None,
) -> pd.DataFrame | None:
    """A chapter's occupancy section as the notebook shows it (``Chapter.occupancy``): the table (``keys`` name each
    launch), then which limit binds (each launch's, ``per_launch``, or grouped by limit), then
    ``after`` (the chapter's reading of it). Without nvcc it says what is missing and returns None.

    ``launches``: ``Launch`` objects, or a function of the compute capability that returns them
    (``occupancy_by_gpu``). ``table`` (the chapter's ``lab.table``) records the table with the chapter's measurements
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
    every = list(occ["compute_capability"].astype(str).unique())
    display(
        *(  # a table per GPU, in the order the chapter lists them (the lab's first)
            occupancy_styled(rows, notes_of(notes, str(rows["compute_capability"].iloc[0]), every), list(keys))
            for _, rows in occ.groupby("gpu", sort=False)
        ),
        Markdown(binding_summary(occ, keys[0], per_launch=per_launch) + (f"\n\n{after}" if after else "")),
    )
    return occ
