"""A chapter's section "Your kernels beside the reference", in a student's build
(``build_report.py --kernels DIR``): each chapter notebook's cell tagged ``yours`` calls
``yours(lab)``.

The build stages the student's files and writes ``submission.json`` beside the chapters' data;
this reads it, and for the chapter's declared points (``yours:`` in its declarations) that build
from a submitted file:

- on a GPU, measures the reference files and the student's, each in a process of its own
  (``isolate``: a kernel that hangs or faults costs its process only), with the recipe's own
  check; a row per point and source, marked ``yours`` or ``reference``, its speed beside the
  reference's and its fraction of the chapter's ceiling from this build's chapter 00;
- without one, compiles both for the profile's GPU (``toolchain.compile_only``): registers,
  spills, SASS instructions, or the compiler's file:line, and says that timings need a GPU.

A wrong result is marked and never called faster. In a plain build the cell shows nothing; in
JupyterLab it says how to measure one's own kernel.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pandas as pd

from cudalab.chapter.catalog import BATCH_ENV
from cudalab.core.paths import KERNELS_DIR
from cudalab.core.submission import SUBMISSION_JSON, Submission
from cudalab.grading import isolate, plan
from cudalab.grading import results as R

TABLE = "yours"  # <chapter data>/yours.csv


def submission_of(lab: Any) -> dict[str, Any] | None:
    """The build's ``submission.json`` (a student's build), or None."""
    path = Path(lab.data_dir).parent / SUBMISSION_JSON
    return json.loads(path.read_text()) if path.is_file() else None


def _request(lab: Any, task: plan.ChapterTask, folder: Path | None) -> dict[str, Any]:
    return task.request(folder, {**lab.params, "point_time_limit_s": lab.point_time_limit_s})


def measured(lab: Any, task: plan.ChapterTask, staged: Path, limits: isolate.Limits) -> pd.DataFrame:
    """The task's points with the reference files and with the student's, each source in a process
    of its own: a row per point and source (``source``: reference, yours)."""
    ceiling = lab.ceilings().get(task.yours.ceiling) if task.yours.ceiling else None
    rows = []
    misfits = _misfits(task, staged)
    fitting = task.keeping(tuple(p for p in task.points if p[1] not in misfits))
    mine = isolate.run(_request(lab, fitting, staged), limits) if fitting.points else {"points": []}
    remaining = iter(mine["points"])
    results = {
        R.REFERENCE: isolate.run(_request(lab, task, None), limits),
        R.YOURS: {"points": [misfits[f] if f in misfits else next(remaining) for _, f in task.points]},
    }
    for i, (point, file) in enumerate(task.points):
        ref = results[R.REFERENCE]["points"][i]
        for source, result in results.items():
            got = result["points"][i]
            time_ms = got.get("time_ms") if got["status"] == R.OK else None
            ref_ms = ref.get("time_ms") if ref["status"] == R.OK else None
            rate = R.rate_of(point, time_ms, task.yours.rate)
            rows.append(
                {
                    "point": plan.point_label(point),
                    "file": file,
                    "source": source,
                    "status": got["status"],
                    "time_ms": got.get("time_ms"),
                    "time_ms_q1": got.get("time_ms_q1"),
                    "time_ms_q3": got.get("time_ms_q3"),
                    "speed_vs_reference": ref_ms / time_ms if time_ms and ref_ms else None,
                    "rate_per_s": rate,
                    "fraction_of_ceiling": rate / ceiling if rate is not None and ceiling else None,
                    "reason": got.get("reason", ""),
                }
            )
    return pd.DataFrame(rows)


def _misfits(task: plan.ChapterTask, staged: Path) -> dict[str, dict[str, str]]:
    """Each of the task's files whose kernels do not fit the chapter's launch (or do not compile), by
    nvcc before anything runs: the result its points get. Empty where nvcc is not installed (then
    NVRTC's own error says it at the first launch)."""
    from cudalab.core.errors import KernelCompileError, ToolUnavailable
    from cudalab.core.gpu import compute_capability
    from cudalab.toolchain import compile_only
    from cudalab.toolchain.nvcc import compile_arch

    found = {}
    for file in task.files:
        try:
            arch = compile_arch(compute_capability() or "9.0")[0]
            problems = compile_only.signature_problems(KERNELS_DIR / file, staged / file, arch, (f"-I{staged}",))
        except ToolUnavailable:
            return {}
        except KernelCompileError as exc:
            found[file] = {"status": R.DOES_NOT_COMPILE, "reason": R.compile_failure(exc)}
            continue
        if problems:
            found[file] = {"status": R.MISFIT, "reason": R.scrubbed("; ".join(problems))}
    return found


def compiled(files: list[str], staged: Path, arch: str) -> pd.DataFrame:
    """The student's ``files`` beside the reference's, compiled for ``arch`` without a GPU."""
    from cudalab.toolchain import compile_only

    kernels = {f: KERNELS_DIR / f for f in dict.fromkeys(files)}
    sub = Submission(staged, kernels, [], {}, [])
    return compile_only.beside_reference(sub, arch)


def occupancy_beside(compiled_rows: pd.DataFrame, launches: pd.DataFrame, cc: str) -> pd.DataFrame:
    """Theoretical occupancy of each compiled kernel, the student's beside the reference's, at the
    launches the chapter recorded for it (``launches``: its occupancy table's kernel, threads per
    block and shared bytes per block, on the GPU of compute capability ``cc``): the launch's
    dynamic shared memory is what the recorded total holds beyond the reference's static shared
    memory. Empty where the chapter recorded no launch of these kernels."""
    from cudalab.core.occupancy import occupancy

    ok = compiled_rows[compiled_rows["status"].eq("ok")]
    if not len(ok) or not len(launches) or not {"kernel", "threads_per_block"} <= set(launches.columns):
        return pd.DataFrame()
    same_gpu = (
        launches[launches["compute_capability"].astype(str).eq(str(cc))]
        if "compute_capability" in launches
        else launches
    )
    shapes = (same_gpu if len(same_gpu) else launches)[["kernel", "threads_per_block", "shared_bytes_per_block"]]
    reference = ok[ok["source"].eq(R.REFERENCE)].drop_duplicates("kernel").set_index("kernel")
    rows = []
    for kernel, threads, total in shapes.drop_duplicates().itertuples(index=False):
        if kernel not in reference.index:
            continue
        dynamic = max(0, int(total) - int(reference.loc[kernel, "shared_bytes"]))
        for source in (R.REFERENCE, R.YOURS):
            mine = ok[ok["source"].eq(source) & ok["kernel"].eq(kernel)]
            if not len(mine):
                continue
            r = mine.iloc[0]
            occ = occupancy(cc, int(threads), int(r["registers_per_thread"]), int(r["shared_bytes"]), dynamic)
            rows.append(
                {
                    "kernel": kernel,
                    "threads_per_block": int(threads),
                    "dynamic_shared_bytes": dynamic,
                    "source": source,
                    "registers_per_thread": int(r["registers_per_thread"]),
                    "occupancy_fraction": occ["occupancy"],
                    "limited_by": occ["limited_by"] or occ["reason"],
                }
            )
    return pd.DataFrame(rows)


def _occupancy_wide(long: pd.DataFrame) -> pd.DataFrame:
    """``occupancy_beside``'s rows as the report prints them: one row per launch, the reference's
    and the student's registers and occupancy side by side, and what limits the student's."""
    keys = ["kernel", "threads_per_block", "dynamic_shared_bytes"]
    out = long[long["source"].eq(R.REFERENCE)][keys].drop_duplicates().reset_index(drop=True)
    for source in (R.REFERENCE, R.YOURS):
        part = long[long["source"].eq(source)].set_index(keys)
        for column, label in (("registers_per_thread", "registers"), ("occupancy_fraction", "occupancy")):
            out[f"{label} ({source})"] = [part[column].get(tuple(k), None) for k in out[keys].itertuples(index=False)]
    limits = long[long["source"].eq(R.YOURS)].set_index(keys)["limited_by"]
    out["limited by (yours)"] = [limits.get(tuple(k), "") for k in out[keys].itertuples(index=False)]
    return out


def _recorded_launches(lab: Any) -> pd.DataFrame:
    """The chapter's recorded occupancy table (its launches), from this build or the recording."""
    for folder in (Path(lab.out_dir), Path(lab.recorded_dir) / lab.id):
        path = folder / "occupancy.csv"
        if path.is_file():
            return pd.read_csv(path, dtype={"compute_capability": str})
    return pd.DataFrame()


def _cc(lab: Any) -> str:
    device = getattr(lab.profile, "device", None)
    return str(getattr(device, "compute_capability", None) or "9.0")


def _arch(lab: Any) -> str:
    from cudalab.toolchain.nvcc import compile_arch

    return compile_arch(_cc(lab))[0]


_HINT = (
    "**Your own kernel here.** Copy {which} ({files}) into a folder of your own, keeping its name, edit "
    "it, and run `python build_report.py --kernels YOUR_FOLDER --only {number}`: it is measured beside "
    "the reference at {points}, checked as the reference is, in a report of its own."
)
SHOWN_POINTS = 3  # more, and the hint names where they are declared instead


def yours(lab: Any) -> None:
    """Show this chapter's section for a student's kernels (see the module docstring); its rows
    are written to ``yours.csv`` in the chapter's data."""
    from IPython.display import Markdown, display

    record = submission_of(lab)
    if record is None:
        tasks = plan.chapter_tasks(lab.id)
        if tasks and not os.environ.get(BATCH_ENV):
            names = list(dict.fromkeys(f for t in tasks for f in t.files))
            listed = [plan.point_label(p) for t in tasks for p, _ in t.points]
            points = (
                "; ".join(listed)
                if len(listed) <= SHOWN_POINTS
                else (f"the {len(listed)} points `notebooks/{lab.id}.yaml` declares under `yours`")
            )
            which = "the chapter's kernel file" if len(names) == 1 else "a kernel file this chapter measures"
            files = ", ".join(f"`kernels_cu/{n}`" for n in names)
            display(Markdown(_HINT.format(which=which, files=files, number=lab.id[:2], points=points)))
        return
    tasks = plan.chapter_tasks(lab.id, record["kernels"])
    if not tasks:
        display(
            Markdown(f"**Your kernels.** This chapter measures none of your files ({', '.join(record['kernels'])}).")
        )
        return
    staged = Path(lab.data_dir).parent / record["staged"]
    occupancy = None
    if lab.mode == "measure":
        limits = isolate.Limits(record["limits"]["point_s"] or 1e9, record["limits"]["submission_s"] or 1e9)
        frame = pd.concat([measured(lab, t, staged, limits) for t in tasks], ignore_index=True)
    else:
        frame = compiled([f for t in tasks for f in t.files], staged, _arch(lab))
        occupancy = occupancy_beside(frame, _recorded_launches(lab), _cc(lab))
        if len(occupancy):
            occupancy.to_csv(Path(lab.out_dir) / f"{TABLE}_occupancy.csv", index=False)
    frame.to_csv(Path(lab.out_dir) / f"{TABLE}.csv", index=False)
    files = list(dict.fromkeys(f for t in tasks for f in t.files))
    show(frame, files, lab.mode == "measure", occupancy, getattr(lab.profile.device, "name", ""))


SAME_WITHIN = 0.02  # a ratio closer to 1 than this is "as fast as", whatever the spreads say


def _beside(mine: pd.Series, ref: pd.Series) -> str:
    """Faster or slower than the reference only where the two times differ by more than
    ``SAME_WITHIN`` and their spreads (quartiles) do not overlap; otherwise as fast as it."""
    x = float(ref["time_ms"]) / float(mine["time_ms"])
    lo, hi = mine.get("time_ms_q1", mine["time_ms"]), mine.get("time_ms_q3", mine["time_ms"])
    ref_lo, ref_hi = ref.get("time_ms_q1", ref["time_ms"]), ref.get("time_ms_q3", ref["time_ms"])
    if x > 1 + SAME_WITHIN and pd.notna(hi) and pd.notna(ref_lo) and hi < ref_lo:
        return "faster than"
    if x < 1 - SAME_WITHIN and pd.notna(lo) and pd.notna(ref_hi) and lo > ref_hi:
        return "slower than"
    return "as fast as"


def _verdict(frame: pd.DataFrame) -> list[str]:
    """One sentence per point: how the student's kernel did beside the reference (never "faster"
    for a result that is not correct)."""
    out = []
    for point, rows in frame.groupby("point", sort=False):
        mine = rows[rows["source"].eq(R.YOURS)].iloc[0]
        ref = rows[rows["source"].eq(R.REFERENCE)].iloc[0]
        if mine["status"] != R.OK:
            out.append(f"- At {point}: your kernel is **{mine['status']}**: {mine['reason'] or 'no reason given'}.")
        elif pd.notna(mine["speed_vs_reference"]):
            x = float(mine["speed_vs_reference"])
            word = _beside(mine, ref)
            ceiling = (
                f", {mine['fraction_of_ceiling']:.1%} of the chapter's ceiling"
                if pd.notna(mine["fraction_of_ceiling"])
                else ""
            )
            out.append(
                f"- At {point}: correct, {mine['time_ms']:.3f} ms, {x:.2f}x the reference's speed ({word} it){ceiling}."
            )
        else:
            out.append(f"- At {point}: correct, {mine['time_ms']:.3f} ms (the reference has no time to set beside it).")
    return out


def _has_values(column: pd.Series) -> bool:
    """A column with a value somewhere (not all missing, not all empty text)."""
    return bool(column.notna().any() and column.dropna().astype(str).str.strip().ne("").any())


READABLE = {
    "time_ms": "time (ms)",
    "speed_vs_reference": "speed vs reference",
    "fraction_of_ceiling": "fraction of the ceiling",
}


def show(
    frame: pd.DataFrame,
    kernel_files: list[str],
    timed: bool,
    occupancy: pd.DataFrame | None = None,
    gpu: str = "",
) -> None:
    """The section as the report shows it: a sentence per point, the table with the student's rows
    marked, and (timed) a figure of both sources' times; compiled only, the resources and the
    theoretical occupancy (on ``gpu``) beside the reference's."""
    from IPython.display import Markdown, display

    from cudalab.core import plots

    files = ", ".join(f"`{f}`" for f in kernel_files)
    if not timed:
        display(
            Markdown(
                f"### Your kernels beside the reference\n\nYour {files}, compiled for this profile's GPU "
                "beside the reference, each as the file builds without options (its own defaults): "
                f"{R.COMPILED_ONLY}; **its timings need a GPU** (run the same command on a GPU host)."
            )
        )
        shown = [c for c in frame.columns if _has_values(frame[c]) or c in ("file", "source", "status")]
        display(plots.styled(frame[shown], {"registers_per_thread": "{:.0f}"}, small_print=True))
        if occupancy is not None and len(occupancy):
            display(
                Markdown(
                    f"Theoretical occupancy on the profile's GPU ({gpu}), at the launches the chapter "
                    "recorded for these kernels:"
                )
            )
            display(
                plots.styled(
                    _occupancy_wide(occupancy), {"occupancy (reference)": "{:.0%}", "occupancy (yours)": "{:.0%}"}
                )
            )
        return
    display(
        Markdown(
            "### Your kernels beside the reference\n\nYour " + files + ", each point measured with the "
            "reference file and with yours, in processes of their own, and checked as the chapter checks it:\n\n"
            + "\n".join(_verdict(frame))
        )
    )
    marked = frame.assign(source=frame["source"].map({R.YOURS: "yours", R.REFERENCE: "reference"}))
    shown = [
        c
        for c in ("point", "source", "status", "time_ms", "speed_vs_reference", "fraction_of_ceiling", "reason")
        if marked[c].notna().any() or c in ("point", "source", "status")
    ]
    st = plots.styled(
        marked[shown].rename(columns=READABLE),
        {"time (ms)": "{:.3f}", "speed vs reference": "{:.2f}x", "fraction of the ceiling": "{:.1%}"},
        small_print=True,
    )
    st = st.apply(
        lambda r: ["font-weight: bold; background: #fff4d6" if r["source"] == "yours" else "" for _ in r], axis=1
    )
    display(st)
    timed_rows = marked[marked["time_ms"].notna()]
    if len(timed_rows):
        import matplotlib.pyplot as plt

        labels = timed_rows.assign(
            source=[
                f"{s} ({st})" if st != R.OK else s
                for s, st in zip(timed_rows["source"], timed_rows["status"], strict=True)
            ]
        )
        plots.bars_per_panel(
            labels,
            "point",
            "time_ms",
            "source",
            xlabel="time (ms), each point on its own scale",
            title="Your kernel beside the reference",
            unit="ms",
        )
        plt.show()
