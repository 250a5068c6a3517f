"""BENCHMARKS.md, rendered from the recordings: never typed, never recomputed.

Every chapter notebook records its headline numbers in ``summary.json`` (``Chapter.headline``);
this module lays them out, recording by recording, with the provenance of each chapter. It has
no per-chapter code: a new chapter's headlines appear here by being recorded.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from cudalab.chapter import catalog
from cudalab.chapter.recorded import PROVENANCE, SUMMARY, all_recordings
from cudalab.core.paths import RESULTS_DIR


def _title(chapter_id: str) -> str:
    try:
        return catalog.chapter(chapter_id).title
    except Exception:  # a recording of a chapter whose notebook is gone still renders
        return chapter_id


BASELINE_CHECK = "baseline_check.csv"


def baseline_lines(path: Path) -> list[str]:
    """The recorded verdict of a chapter's baseline check (``core.baseline``), one line per row;
    none where the recording has no check."""
    if not path.is_file():
        return []
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    lines = []
    for r in rows:
        where = ", ".join(f"{c} = {r[c]}" for c in ("n", "d", "k") if r.get(c))
        verdict = "**FLAGGED**" if r.get("status") == "flagged" else r.get("status", "")
        lines.append(
            f"- Baseline check: {r.get('baseline')} at {where}: {verdict} (sweep median "
            f"{float(r['sweep_time_ms']):.4g} ms, {r.get('back_to_back_calls')} back-to-back calls "
            f"{float(r['back_to_back_time_ms']):.4g} ms per call) (table `baseline_check`)"
        )
    return lines


def render(results: Path = RESULTS_DIR) -> str:
    """The whole BENCHMARKS.md for every recording under ``results``."""
    out = [
        "# Benchmarks",
        "",
        "Written by `python tools/write_benchmarks.py` (`make benchmarks`) from the recordings under `results/`, "
        "which `build_report.py --record` wrote on a real GPU. Every number below is a chapter's own recorded "
        "headline (`summary.json`); nothing here is typed or recomputed.",
        "",
        "A chapter that sets its kernels beside a library baseline (cuBLAS, `cupy.max`, the CuPy k-means "
        "iteration) times both the same way and checks the baseline at one size against 50 back-to-back calls "
        "in the same run; its verdict follows the chapter's headlines as *Baseline check*. A chapter with a "
        "baseline but no such line was recorded before the check existed, with one synchronized call per "
        "sample, which can time a library call's host dispatch.",
        "",
    ]
    for rec in all_recordings(results):
        log = json.loads((rec.path / "recordings.json").read_text())
        chapters = log.get("chapters", {})
        if not chapters:
            continue
        first = json.loads((rec.path / next(iter(chapters)) / PROVENANCE).read_text())
        out += [
            f"## Profile `{rec.profile}` on {rec.gpu_name}",
            "",
            f"`results/{rec.gpu}/{rec.profile}/`. Driver {first.get('driver_version')}, CUDA runtime "
            f"{first.get('cuda_runtime')}, CuPy {first.get('cupy')}.",
            "",
            "| chapter | recorded (UTC) | commit | source fingerprint | chapter run time (s) | recorded by | "
            "its wall time (s) |",
            "|---|---|---|---|---:|---|---:|",
        ]
        for cid, c in chapters.items():
            p = json.loads((rec.path / cid / PROVENANCE).read_text())
            fp = (p.get("source_fingerprint") or {}).get("sha256", "")
            commit = f"`{str(c['git_commit'])[:10]}`" + (" (uncommitted changes)" if p.get("git_dirty") else "")
            out.append(
                f"| {cid} | {p['date_utc']} | {commit} | `{fp[:12] or 'not recorded'}` | {c['seconds']:.0f} | "
                f"`{c['build']['command']}` | {c['build']['wall_s']:.0f} |"
            )
        out.append("")
        for cid in chapters:
            path = rec.path / cid / SUMMARY
            entries = json.loads(path.read_text()) if path.is_file() else []
            out += [f"**{_title(cid)}**", ""]
            out += [f"- {e['text']}" + (f" (table `{e['table']}`)" if e.get("table") else "") for e in entries] or [
                "- no headline summary recorded"
            ]
            out += baseline_lines(rec.path / cid / BASELINE_CHECK)
            out.append("")
    out += build_times(results)
    return "\n".join(out).rstrip() + "\n"


def build_times(results: Path = RESULTS_DIR) -> list[str]:
    """The section of the build times that ``tools/bench_build.py --record`` (``make bench``)
    measured: cold, cached and replayed builds, each beside its goal."""
    files = sorted((results / "build_times").glob("*.json")) if (results / "build_times").is_dir() else []
    if not files:
        return []
    out = [
        "## Build times",
        "",
        "Measured by `make bench` (`tools/bench_build.py --record`): the wall time of `build_report.py`, cold "
        "(every chapter measured, fresh CuPy kernel cache), cached (the same build again: unchanged chapters "
        "kept) and replayed (from `results/`, no GPU used).",
        "",
        "| profile | machine | date (UTC) | commit | build | seconds | goal (s) | meets it |",
        "|---|---|---|---|---|---:|---:|---|",
    ]
    for path in files:
        r = json.loads(path.read_text())
        m = r["machine"]
        where = (f"{m['gpu_name']}" if m["gpu_name"] != "none" else "no GPU") + f", {m['cpu_count']} CPU cores"
        if "compiler_report_cache_files" in r and "replay" in r["builds"]:
            where += f" ({r['compiler_report_cache_files']} compiler reports cached before the replay)"
        for label, t in r["builds"].items():
            out.append(
                f"| `{r['profile']}` | {where} | {r['date_utc']} | `{str(r['git_commit'])[:10]}` | {label} | "
                f"{t['seconds']:.0f} | {t['goal_s']:.0f} | {'yes' if t['meets_goal'] else 'no'} |"
            )
    return out + [""]
