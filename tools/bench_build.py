#!/usr/bin/env python3
"""How long the report takes to build: cold, cached and replayed (``make bench``).

    python tools/bench_build.py [--profile h100] [--record] [--record-results] [--skip-cold]

- **cold** (GPU only): every chapter measured, into a fresh output folder, with a fresh CuPy
  kernel cache (``CUPY_CACHE_DIR``) and compiler-report cache (``CUDALAB_CACHE_DIR``), so every
  kernel is compiled as on a new machine;
- **cached**: the same command again into the same folder: chapters whose kernels, notebook,
  parameters, package and GPU are unchanged are kept (the report says "from cache");
- **replay**: a build from the recording in ``results/`` (``--replay``), into a fresh folder,
  as CI and a laptop without a GPU build it.

Each build is timed from the outside (wall clock of the ``build_report.py`` process). The
goals of issue 13 are printed beside the times; ``--record`` keeps the figures, with the
machine, date and commit derived by the code, in ``results/build_times/<machine>.json``, from
which ``make benchmarks`` renders them into BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cudalab.chapter.recorded import gpu_slug  # noqa: E402
from cudalab.core import gpu  # noqa: E402
from cudalab.core.paths import RESULTS_DIR, ROOT  # noqa: E402
from cudalab.core.provenance import commit_state  # noqa: E402

GOALS_S = {"cold": 300.0, "cached": 30.0, "replay": 90.0}
BUILD_TIMES = "build_times"


def _build(args: list[str], env: dict[str, str]) -> tuple[float, int, str]:
    """Run build_report.py; (wall seconds, exit status, last lines of its log)."""
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, str(ROOT / "build_report.py"), *args], cwd=ROOT, env=env, capture_output=True, text=True
    )
    return time.perf_counter() - t0, proc.returncode, "\n".join(proc.stderr.strip().splitlines()[-4:])


def chapter_seconds(out: Path) -> dict[str, float]:
    """Each chapter's seconds in the build written to ``out`` (its build.json), so that a build
    that misses its goal says which chapter took the time: the chapters it ran, not those it kept
    from an earlier build (their seconds are that build's); {} where the build wrote none."""
    try:
        chapters = json.loads((out / "build.json").read_text())["chapters"]
    except (OSError, ValueError, KeyError):
        return {}
    return {name: round(float(c.get("seconds", 0.0)), 1) for name, c in chapters.items() if not c.get("reused")}


def machine() -> dict[str, object]:
    """The machine the builds ran on, derived: the GPU's name where one is present, else the CPU count."""
    name = gpu.gpu_name() if gpu.gpu_available() else None
    return {
        "gpu_name": name or "none",
        "cpu_count": os.cpu_count(),
        "slug": gpu_slug(name) if name else f"no-gpu-{os.cpu_count()}-cores",
    }


def run(
    profile: str,
    skip_cold: bool,
    formats: str,
    skip_replay: bool = False,
    record_results: bool = False,
    keep: Path | None = None,
) -> dict[str, object]:
    env = {**os.environ}
    times: dict[str, dict[str, object]] = {}
    work = Path(tempfile.mkdtemp(prefix="cudalab-bench-"))
    # the replay compiles the occupancy tables' kernels, as on a fresh clone: an empty cache of
    # compiler reports of its own (an earlier build's reports would make it look faster)
    replay_cache = work / "replay-cudalab-cache"
    cached_reports = 0
    try:
        if gpu.gpu_available() and not skip_cold:
            out = work / "measured"
            env_cold = {
                **env,
                "CUPY_CACHE_DIR": str(work / "cupy-cache"),
                "CUDALAB_CACHE_DIR": str(work / "cudalab-cache"),
            }
            for label in ("cold", "cached"):
                print(f"{label}: building profile {profile} (measuring) ...", file=sys.stderr, flush=True)
                extra = ["--record"] if record_results and label == "cold" else []
                seconds, rc, tail = _build(["--gpu", profile, "--format", formats, "--out", str(out), *extra], env_cold)
                times[label] = {
                    "seconds": round(seconds, 1),
                    "exit_status": rc,
                    "log_tail": tail,
                    "chapter_seconds": chapter_seconds(out),
                }
                print(f"{label}: {seconds:.1f} s (exit status {rc})", file=sys.stderr, flush=True)
        if not skip_replay:
            print(f"replay: building profile {profile} from results/ ...", file=sys.stderr, flush=True)
            seconds, rc, tail = _build(
                ["--gpu", profile, "--replay", "--format", formats, "--out", str(work / "replayed")],
                {**env, "CUDALAB_CACHE_DIR": str(replay_cache)},
            )
            times["replay"] = {
                "seconds": round(seconds, 1),
                "exit_status": rc,
                "log_tail": tail,
                "chapter_seconds": chapter_seconds(work / "replayed"),
            }
    finally:
        if keep is not None and (work / "measured").is_dir():  # the executed notebooks: each cell's duration
            shutil.copytree(work / "measured", keep / "measured", dirs_exist_ok=True)
        shutil.rmtree(work, ignore_errors=True)
    for label, t in times.items():
        t["goal_s"] = GOALS_S[label]
        t["meets_goal"] = t["exit_status"] == 0 and t["seconds"] <= GOALS_S[label]
    return {
        "profile": profile,
        "formats": formats,
        "machine": machine(),
        "compiler_report_cache_files": cached_reports,
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        **commit_state(),
        "builds": times,
    }


def slowest_cells(folder: Path, count: int = 12) -> list[tuple[float, str, int, str]]:
    """(seconds, notebook, cell index, first line) of the ``count`` slowest cells of the executed
    notebooks under ``folder`` (papermill records each cell's duration): where a build's time went."""
    import nbformat

    cells = []
    for path in sorted(folder.rglob("*.ipynb")):
        for i, cell in enumerate(nbformat.read(path, as_version=4).cells):
            seconds = (cell.get("metadata", {}).get("papermill") or {}).get("duration") or 0.0
            first = next((line for line in cell.source.splitlines() if line.strip()), "")
            cells.append((float(seconds), path.stem, i, first[:80]))
    return sorted(cells, reverse=True)[:count]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", default="h100", help="GPU profile to build (default: h100)")
    parser.add_argument(
        "--format",
        dest="formats",
        default="html,pdf",
        help="what each build writes (default: html,pdf, as `make report` does)",
    )
    parser.add_argument("--skip-cold", action="store_true", help="on a GPU, time only the replay build")
    parser.add_argument(
        "--skip-replay",
        action="store_true",
        help="time only the measured builds (the replay goal is for a machine without a GPU)",
    )
    parser.add_argument(
        "--record",
        action="store_true",
        help=f"keep the figures in results/{BUILD_TIMES}/<machine>-<profile>.json for BENCHMARKS.md",
    )
    parser.add_argument(
        "--record-results",
        action="store_true",
        help="the cold build also records its measurements in results/ (build_report.py --record)",
    )
    parser.add_argument(
        "--keep",
        type=Path,
        metavar="DIR",
        help="copy the measured builds' output (executed notebooks with each cell's duration) into DIR/measured",
    )
    args = parser.parse_args(argv)
    result = run(args.profile, args.skip_cold, args.formats, args.skip_replay, args.record_results, args.keep)
    print(
        f"\nbuild times, profile {args.profile}, on {result['machine']['gpu_name']} "
        f"({result['machine']['cpu_count']} CPU cores), {result['date_utc']}"
    )
    print(f"{'build':<8} {'seconds':>8} {'goal':>6}  result")
    for label, t in result["builds"].items():
        verdict = (
            "meets the goal"
            if t["meets_goal"]
            else (f"FAILED (exit {t['exit_status']}): {t['log_tail']}" if t["exit_status"] else "misses the goal")
        )
        print(f"{label:<8} {t['seconds']:>8.1f} {t['goal_s']:>6.0f}  {verdict}")
        if t.get("chapter_seconds"):
            spent = sum(t["chapter_seconds"].values())
            parts = ", ".join(f"{name[:2]} {sec:.0f}" for name, sec in t["chapter_seconds"].items())
            print(f"{'':<8} chapters {spent:.0f} s ({parts}); the rest {t['seconds'] - spent:.0f} s")
    if args.keep is not None and (args.keep / "measured").is_dir():
        print(f"\nslowest cells of the measured builds (kept in {args.keep / 'measured'}):")
        for seconds, notebook, index, first in slowest_cells(args.keep / "measured"):
            print(f"{seconds:7.1f} s  {notebook} [{index}]  {first}")
    if args.record:
        dest = RESULTS_DIR / BUILD_TIMES / f"{result['machine']['slug']}-{args.profile}.json"
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(json.dumps(result, indent=2) + "\n")
        print(f"recorded: {dest.relative_to(ROOT)}")
    return 0 if all(t["exit_status"] == 0 for t in result["builds"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
