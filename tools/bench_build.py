#!/usr/bin/env python3
"""How long the report takes to build: cold, cached and replayed (``make bench``).

    python tools/bench_build.py [--profile h100] [--record] [--record-results] [--skip-cold]

- **cold** (GPU only): every chapter measured, into a fresh output folder, with a fresh CuPy
  kernel cache (``CUPY_CACHE_DIR``) and compiler-report cache (``CUDALAB_CACHE_DIR``), so every
  kernel is compiled as on a new machine;
- **cached**: the same command again into the same folder: chapters whose kernels, notebook,
  parameters, package and GPU are unchanged are kept (the report says "from cache");
- **replay**: a build from the recording in ``results/`` (``--replay``), into a fresh folder,
  as CI and a laptop without a GPU build it;
- **workers-N** (``--workers 4,2``, on a host of at least N GPUs): the cold build again through
  Dask, one chapter per GPU, with fresh caches of its own, beside the serial cold build of the
  same run: its wall
  time against issue 45's goal (4 GPUs: 1.15x chapter 00 plus the slowest chapter, serial; 2
  GPUs: 0.60x the serial build), each chapter's seconds both ways, and the cells that grew most
  under Dask (papermill's duration of each cell, serial against workers): where a chapter's time
  went when it ran beside others.
- **plain / yours** (``--yours DIR``, GPU only): the chapters that measure DIR's files (``--only``
  narrows them), measured into a fresh folder with fresh caches, then the same command with
  ``--kernels DIR``, fresh again: what a student's series over each chapter's sweep costs (issue
  67: at most ``YOURS_GOAL`` times the plain build). Recorded apart, in
  ``results/build_times/<machine>-<profile>-yours-<chapters>.json``.

Each build is timed from the outside (wall clock of the ``build_report.py`` process). Before the
first, the notebook stack is imported once (``WARM_IMPORTS``): cold means empty kernel caches, and
the serial build, which runs first, should not pay alone for the page cache. The
goals of issue 13 are printed beside the times; ``--record`` keeps the figures, with the
machine, date and commit derived by the code, in ``results/build_times/<machine>-<profile>.json``
(written again after each build, so a run stopped midway keeps what it measured), from which
``make benchmarks`` renders them into BENCHMARKS.md.
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
PER_CHAPTER_GOAL = 1.10  # a chapter's seconds under --workers N, at most this times its serial seconds
CRITICAL_PATH_GOAL = 1.15  # 3+ GPUs: the build, at most this times chapter 00 plus the slowest chapter (serial)
TWO_GPU_GOAL = 0.60  # 2 GPUs: the build, at most this times the serial build
YOURS_GOAL = 2.0  # --yours: the build with a student's files, at most this times the same build without
FIRST = "00_gpu_capabilities"
BUILD_TIMES = "build_times"


def _build(args: list[str], env: dict[str, str]) -> tuple[float, int, str]:
    """Run build_report.py; (wall seconds, exit status, last lines of its log)."""
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, str(ROOT / "build_report.py"), *args], cwd=ROOT, env=env, capture_output=True, text=True
    )
    return time.perf_counter() - t0, proc.returncode, "\n".join(proc.stderr.strip().splitlines()[-4:])


# What every chapter's kernel imports: read once from disk before the first timed build, so that the
# serial build, which runs first, does not pay alone for a page cache that a fresh install left
# cold (1-3 s more per import cell than the several-GPU build after it, on 2 x H100 at 08e5f80).
# "Cold" in this tool means empty kernel caches, not an empty page cache.
WARM_IMPORTS = ("numpy", "pandas", "matplotlib.pyplot", "seaborn", "cupy", "papermill", "nbconvert", "cudalab.chapter")


def warm_imports(env: dict[str, str], modules: tuple[str, ...] = WARM_IMPORTS) -> list[str]:
    """Import ``modules`` once in a child process, as a chapter's kernel will; the names that
    imported (one that fails is left out: the builds will say why)."""
    script = (
        "import importlib, sys\n"
        "for name in sys.argv[1:]:\n"
        "    try:\n"
        "        importlib.import_module(name)\n"
        "        print(name)\n"
        "    except Exception:\n"
        "        pass\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script, *modules], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    return proc.stdout.split()


def chapter_seconds(out: Path) -> dict[str, float]:
    """Each chapter's seconds in the build written to ``out`` (its build.json), so that a build
    that misses its goal says which chapter took the time: the chapters it ran, not those it kept
    from an earlier build (their seconds are that build's); {} where the build wrote none."""
    try:
        chapters = json.loads((out / "build.json").read_text())["chapters"]
    except (OSError, ValueError, KeyError):
        return {}
    return {name: round(float(c.get("seconds", 0.0)), 1) for name, c in chapters.items() if not c.get("reused")}


def chapter_cpus(out: Path) -> dict[str, int]:
    """The cores each chapter's kernel could run on in the build written to ``out`` (its
    provenance's ``cpus_usable``): fewer than the host's where a Dask worker pinned it, which
    would slow what the chapter does on the CPU (compiling its kernels) beside a serial build."""
    cpus = {}
    for path in sorted((out / "data").glob("*/provenance.json")):
        try:
            usable = json.loads(path.read_text()).get("cpus_usable")
        except (OSError, ValueError):
            continue
        if usable:
            cpus[path.parent.name] = int(usable)
    return cpus


def _gpu_count() -> int:
    cp = gpu.cupy_or_none()
    return cp.cuda.runtime.getDeviceCount() if cp is not None and gpu.gpu_available() else 0


def machine() -> dict[str, object]:
    """The machine the builds ran on, derived: the GPU's name and count where one is present, else
    the CPU count. A host of several GPUs has a slug of its own (``...-x4``)."""
    name = gpu.gpu_name() if gpu.gpu_available() else None
    count = _gpu_count()
    slug = gpu_slug(name) + (f"-x{count}" if count > 1 else "") if name else f"no-gpu-{os.cpu_count()}-cores"
    return {"gpu_name": name or "none", "gpu_count": count, "cpu_count": os.cpu_count(), "slug": slug}


def workers_goal_s(serial: dict[str, float], serial_wall_s: float, gpus: int) -> float:
    """Issue 45's goal for a build on ``gpus`` GPUs, from the serial build of the same run: on 2,
    ``TWO_GPU_GOAL`` of its wall time; on more, ``CRITICAL_PATH_GOAL`` times chapter 00 plus the
    slowest other chapter (the critical path: the others read chapter 00's ceilings)."""
    if gpus <= 2:
        return TWO_GPU_GOAL * serial_wall_s
    others = [sec for name, sec in serial.items() if name != FIRST]
    return CRITICAL_PATH_GOAL * (serial.get(FIRST, 0.0) + max(others, default=0.0))


def cell_seconds(folder: Path) -> dict[tuple[str, int], tuple[float, str]]:
    """(notebook, cell index) -> (seconds, first line) of every executed cell under ``folder``
    (papermill records each cell's duration)."""
    import nbformat

    cells = {}
    for path in sorted(folder.rglob("*.ipynb")):
        for i, cell in enumerate(nbformat.read(path, as_version=4).cells):
            seconds = (cell.get("metadata", {}).get("papermill") or {}).get("duration")
            if seconds is not None:
                first = next((line for line in cell.source.splitlines() if line.strip()), "")
                cells[(path.stem, i)] = (float(seconds), first[:80])
    return cells


def cells_grown(serial: Path, spread: Path, count: int = 15) -> list[dict[str, object]]:
    """The ``count`` cells whose seconds grew most from the serial build to the several-GPU one."""
    a, b = cell_seconds(serial), cell_seconds(spread)
    rows = [
        {
            "notebook": nb,
            "cell": i,
            "first_line": b[(nb, i)][1],
            "serial_s": round(a[(nb, i)][0], 2),
            "workers_s": round(b[(nb, i)][0], 2),
        }
        for nb, i in a.keys() & b.keys()
    ]
    return sorted(rows, key=lambda r: r["workers_s"] - r["serial_s"], reverse=True)[:count]


def run(
    profile: str,
    skip_cold: bool,
    formats: str,
    skip_replay: bool = False,
    record_results: bool = False,
    keep: Path | None = None,
    workers: tuple[int, ...] = (),
    skip_cached: bool = False,
    record_to: Path | None = None,
    earlier: dict[str, dict[str, object]] | None = None,
) -> dict[str, object]:
    env = {**os.environ}
    times: dict[str, dict[str, object]] = dict(earlier or {})
    result = {
        "profile": profile,
        "formats": formats,
        "machine": machine(),
        "compiler_report_cache_files": 0,
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        **commit_state(),
        "builds": times,
    }

    def done(label: str, build: dict[str, object]) -> None:
        # each build says when it ended: with --add, builds of two calls share one record
        build.setdefault("date_utc", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        build.setdefault("goal_s", GOALS_S.get(label, 0.0))
        build["meets_goal"] = (
            build["exit_status"] == 0 and build["seconds"] <= build["goal_s"] and not build.get("not_measured")
        )
        times[label] = build
        if record_to is not None:
            record_to.parent.mkdir(parents=True, exist_ok=True)
            record_to.write_text(json.dumps(result, indent=2) + "\n")

    work = Path(tempfile.mkdtemp(prefix="cudalab-bench-"))
    # the replay compiles the occupancy tables' kernels, as on a fresh clone: an empty cache of
    # compiler reports of its own (an earlier build's reports would make it look faster)
    replay_cache = work / "replay-cudalab-cache"
    try:
        if gpu.gpu_available() and not skip_cold:
            imported = warm_imports(env)
            print(f"imports read once before timing: {', '.join(imported)}", file=sys.stderr, flush=True)
        if gpu.gpu_available() and not skip_cold and "cold" not in times:
            out = work / "measured"
            env_cold = {
                **env,
                "CUPY_CACHE_DIR": str(work / "cupy-cache"),
                "CUDALAB_CACHE_DIR": str(work / "cudalab-cache"),
            }
            for label in ("cold",) if skip_cached else ("cold", "cached"):
                print(f"{label}: building profile {profile} (measuring) ...", file=sys.stderr, flush=True)
                extra = ["--record"] if record_results and label == "cold" else []
                seconds, rc, tail = _build(["--gpu", profile, "--format", formats, "--out", str(out), *extra], env_cold)
                build = {
                    "seconds": round(seconds, 1),
                    "exit_status": rc,
                    "log_tail": tail,
                    "chapter_seconds": chapter_seconds(out),
                    "chapter_cpus": chapter_cpus(out),
                }
                print(f"{label}: {seconds:.1f} s (exit status {rc})", file=sys.stderr, flush=True)
                done(label, build)
        # the serial build's executed notebooks, for the cells that grew: this run's, or with --add
        # the earlier run's, kept in the same --keep DIR
        serial_cells = work / "measured"
        if not serial_cells.is_dir() and keep is not None:
            serial_cells = keep / "measured"
        for n in workers if "cold" in times else ():
            done(f"workers-{n}", _workers_build(profile, formats, work, env, n, times["cold"], serial_cells))
        if not skip_replay:
            print(f"replay: building profile {profile} from results/ ...", file=sys.stderr, flush=True)
            seconds, rc, tail = _build(
                ["--gpu", profile, "--replay", "--format", formats, "--out", str(work / "replayed")],
                {**env, "CUDALAB_CACHE_DIR": str(replay_cache)},
            )
            done(
                "replay",
                {
                    "seconds": round(seconds, 1),
                    "exit_status": rc,
                    "log_tail": tail,
                    "chapter_seconds": chapter_seconds(work / "replayed"),
                },
            )
    finally:
        for name in ("measured", *(f"spread-{n}" for n in workers)):  # the executed notebooks: each cell's duration
            if keep is not None and (work / name).is_dir():
                shutil.copytree(work / name, keep / name, dirs_exist_ok=True)
        shutil.rmtree(work, ignore_errors=True)
    return result


def _workers_build(
    profile: str,
    formats: str,
    work: Path,
    env: dict[str, str],
    workers: int,
    serial: dict[str, object],
    serial_cells: Path | None = None,
) -> dict[str, object]:
    """The cold build through Dask on ``workers`` GPUs, with fresh caches of its own, beside the
    serial cold build ``serial`` of this run: wall time against its goal, each chapter's seconds
    and its ratio to the serial chapter, and the cells that grew most (against the serial build's
    executed notebooks in ``serial_cells``, where there are some)."""
    out = work / f"spread-{workers}"  # each N cold: a folder and caches of its own, none kept from another N
    env_cold = {
        **env,
        "CUPY_CACHE_DIR": str(work / f"cupy-cache-spread-{workers}"),
        "CUDALAB_CACHE_DIR": str(work / f"cache-spread-{workers}"),
    }
    print(
        f"workers-{workers}: building profile {profile} on {workers} GPUs (measuring) ...", file=sys.stderr, flush=True
    )
    seconds, rc, tail = _build(
        ["--gpu", profile, "--format", formats, "--out", str(out), "--workers", str(workers)], env_cold
    )
    chapters = chapter_seconds(out)
    before = serial["chapter_seconds"]
    missing = sorted(set(before) - set(chapters))
    if missing:  # kept from an earlier build, or never run: this is no cold build of every chapter
        print(f"workers-{workers}: not measured cold: {', '.join(missing)}", file=sys.stderr, flush=True)
    print(f"workers-{workers}: {seconds:.1f} s (exit status {rc})", file=sys.stderr, flush=True)
    return {
        "seconds": round(seconds, 1),
        "exit_status": rc,
        "log_tail": tail,
        "gpus": workers,
        "chapter_seconds": chapters,
        "chapter_cpus": chapter_cpus(out),
        "chapter_ratio": {k: round(v / before[k], 2) for k, v in chapters.items() if before.get(k)},
        "per_chapter_goal": PER_CHAPTER_GOAL,
        "goal_s": round(workers_goal_s(before, float(serial["seconds"]), workers), 1),
        "serial_seconds": serial["seconds"],
        "cells_grown": cells_grown(serial_cells, out)
        if serial_cells and serial_cells.is_dir() and out.is_dir()
        else [],
        "not_measured": missing,
    }


def yours_builds(
    profile: str,
    folder: Path,
    chapters: list[str],
    formats: str,
    record_to: Path | None = None,
    keep: Path | None = None,
) -> dict[str, object]:
    """The ``chapters`` (and chapter 00, whose ceilings judge a student's rates) measured twice on
    this GPU, cold each time (fresh output folder, CuPy and compiler-report caches): plain, then
    with ``--kernels folder``; the second's goal is
    ``YOURS_GOAL`` times the first's seconds. Written to ``record_to`` after each build. ``keep``:
    each build's executed notebooks (every cell's duration) and chapter data (the student's
    ``yours_sweep.csv`` with each source's seconds) copied to ``keep/<plain|yours>``, as one
    ``keep.tgz`` beside them (a device returns a few files, not a folder of many)."""
    times: dict[str, dict[str, object]] = {}
    result = {
        "profile": profile,
        "formats": formats,
        "machine": machine(),
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        **commit_state(),
        "yours": {"files": sorted(p.name for p in folder.glob("*.cu")), "chapters": chapters},
        "builds": times,
    }
    # --kernels measures chapter 00 as well (a student's rates are judged by its ceilings): the plain
    # build measures it too, so that the two builds differ by the student's series alone
    measured = list(dict.fromkeys([FIRST, *chapters]))
    work = Path(tempfile.mkdtemp(prefix="cudalab-bench-yours-"))
    try:
        print(f"imports read once before timing: {', '.join(warm_imports(dict(os.environ)))}", file=sys.stderr)
        for label, extra in (("plain", []), ("yours", ["--kernels", str(folder)])):
            out = work / label
            env = {
                **os.environ,
                "CUPY_CACHE_DIR": str(work / f"cupy-cache-{label}"),
                "CUDALAB_CACHE_DIR": str(work / f"cudalab-cache-{label}"),
            }
            print(f"{label}: chapters {' '.join(measured)} of {profile} (measuring) ...", file=sys.stderr, flush=True)
            seconds, rc, tail = _build(
                ["--gpu", profile, "--only", *measured, "--format", formats, "--out", str(out), *extra], env
            )
            print(f"{label}: {seconds:.1f} s (exit status {rc})", file=sys.stderr, flush=True)
            goal = YOURS_GOAL * float(times["plain"]["seconds"]) if label == "yours" else 0.0
            build = {
                "seconds": round(seconds, 1),
                "exit_status": rc,
                "log_tail": tail,
                "chapter_seconds": chapter_seconds(out),
                "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "goal_s": round(goal, 1),
            }
            # the plain build has no goal of its own; the student's build is held to YOURS_GOAL of it
            # (its exit status is 1 where a file was wrong: a verdict, not a failed build, so not read)
            build["meets_goal"] = label == "plain" and rc == 0 or label == "yours" and seconds <= goal
            times[label] = build
            if record_to is not None:
                record_to.parent.mkdir(parents=True, exist_ok=True)
                record_to.write_text(json.dumps(result, indent=2) + "\n")
            if keep is not None:
                _keep_build(out, keep / label)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return result


def _keep_build(out: Path, dest: Path) -> None:
    """A build's executed notebooks and chapter data (not its report) copied to ``dest``, and the
    whole of ``dest``'s parent packed again into ``keep.tgz`` there."""
    import tarfile

    for part in ("notebooks", "data"):
        if (out / part).is_dir():
            shutil.copytree(out / part, dest / part, dirs_exist_ok=True)
    with tarfile.open(dest.parent / "keep.tgz", "w:gz") as tar:
        for child in sorted(dest.parent.iterdir()):
            if child.is_dir():
                tar.add(child, arcname=child.name)


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


def _counts(text: str) -> tuple[int, ...]:
    """``--workers 4,2``: GPU counts of 2 or more."""
    try:
        counts = tuple(int(n) for n in text.split(",") if n.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: GPU counts, comma-separated (4,2)") from None
    if not counts or min(counts) < 2:
        raise argparse.ArgumentTypeError(f"{text!r}: each GPU count is 2 or more")
    return counts


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
        help="copy the measured builds' output (executed notebooks with each cell's duration) into DIR/measured "
        "(with --yours: DIR/plain and DIR/yours, packed into DIR/keep.tgz)",
    )
    parser.add_argument(
        "--workers",
        type=_counts,
        default=(),
        metavar="N[,N...]",
        help="on a host of at least N GPUs: also the cold build through Dask (build_report.py --workers N) for "
        "each N, beside the serial one: each chapter's seconds both ways and the cells that grew most",
    )
    parser.add_argument("--skip-cached", action="store_true", help="time no cached build (the cold one stays)")
    parser.add_argument(
        "--add",
        action="store_true",
        help="add this run's builds to the record of this machine and commit (a --workers build beside the "
        "serial one of an earlier run on the same host, where one run would not fit a time limit); give the "
        "earlier run's --keep DIR to set the cells that grew beside its serial notebooks",
    )
    parser.add_argument(
        "--yours",
        type=Path,
        metavar="DIR",
        help=f"on a GPU: the chapters that measure DIR's .cu files, plain and then with --kernels DIR, cold "
        f"each time (goal: at most {YOURS_GOAL:.0f}x); --only narrows the chapters",
    )
    parser.add_argument("--only", nargs="+", default=[], metavar="CHAPTER", help="with --yours: these chapters")
    args = parser.parse_args(argv)
    slug = machine()["slug"]
    if args.yours is not None:
        return _main_yours(parser, args, slug)
    dest = RESULTS_DIR / BUILD_TIMES / f"{slug}-{args.profile}.json"
    earlier = None
    if args.add:
        try:
            prior = json.loads(dest.read_text())
        except (OSError, ValueError):
            parser.error(f"--add: no record to add to at {dest}")
        if prior.get("git_commit") != commit_state().get("git_commit"):
            parser.error(f"--add: {dest.name} was measured at another commit ({prior.get('git_commit')})")
        earlier = prior["builds"]
    result = run(
        args.profile,
        args.skip_cold,
        args.formats,
        args.skip_replay,
        args.record_results,
        args.keep,
        args.workers,
        args.skip_cached,
        dest if args.record else None,
        earlier,
    )
    print(
        f"\nbuild times, profile {args.profile}, on {result['machine']['gpu_name']} "
        f"({result['machine']['cpu_count']} CPU cores), {result['date_utc']}"
    )
    print(f"{'build':<10} {'seconds':>8} {'goal':>6}  result")
    for label, t in result["builds"].items():
        verdict = (
            "meets the goal"
            if t["meets_goal"]
            else (f"FAILED (exit {t['exit_status']}): {t['log_tail']}" if t["exit_status"] else "misses the goal")
        )
        print(f"{label:<10} {t['seconds']:>8.1f} {t['goal_s']:>6.0f}  {verdict}")
        if t.get("chapter_seconds") and not label.startswith("workers"):  # (side by side: no sum to take)
            spent = sum(t["chapter_seconds"].values())
            parts = ", ".join(f"{name[:2]} {sec:.0f}" for name, sec in t["chapter_seconds"].items())
            print(f"{'':<10} chapters {spent:.0f} s ({parts}); the rest {t['seconds'] - spent:.0f} s")
    for n in args.workers:
        spread = result["builds"].get(f"workers-{n}")
        if not spread:
            continue
        print(f"\neach chapter on {n} GPUs against serial (goal: at most {PER_CHAPTER_GOAL:.2f}x):")
        for name, ratio in spread["chapter_ratio"].items():
            print(f"  {name:<28} {spread['chapter_seconds'][name]:6.1f} s  {ratio:.2f}x")
        print("cells that grew most under Dask (serial s -> workers s):")
        for c in spread["cells_grown"]:
            print(f"  {c['serial_s']:6.1f} -> {c['workers_s']:6.1f}  {c['notebook']} [{c['cell']}]  {c['first_line']}")
    if args.keep is not None and (args.keep / "measured").is_dir():
        print(f"\nslowest cells of the measured builds (kept in {args.keep / 'measured'}):")
        for seconds, notebook, index, first in slowest_cells(args.keep / "measured"):
            print(f"{seconds:7.1f} s  {notebook} [{index}]  {first}")
    if args.record:
        print(f"recorded: {BUILD_TIMES}/{slug}-{args.profile}.json")
    return 0 if all(t["exit_status"] == 0 for t in result["builds"].values()) else 1


def _main_yours(parser: argparse.ArgumentParser, args: argparse.Namespace, slug: str) -> int:
    """``--yours DIR``: the plain and the student's build, side by side."""
    from cudalab.grading.plan import chapters_measuring

    if not gpu.gpu_available():
        parser.error("--yours measures: it needs a CUDA device")
    files = sorted(p.name for p in args.yours.glob("*.cu")) if args.yours.is_dir() else []
    chapters = chapters_measuring(files)
    if args.only:
        chapters = [c for c in chapters if any(c == o or c.split("_")[0] == o for o in args.only)]
    if not chapters:
        parser.error(f"--yours {args.yours}: no .cu file there is measured by a chapter (of --only)")
    tag = "all" if not args.only else "-".join(c.split("_")[0] for c in chapters)
    dest = RESULTS_DIR / BUILD_TIMES / f"{slug}-{args.profile}-yours-{tag}.json"
    result = yours_builds(
        args.profile, args.yours.resolve(), chapters, args.formats, dest if args.record else None, args.keep
    )
    plain, yours = result["builds"].get("plain"), result["builds"].get("yours")
    if plain and yours:
        print(
            f"{' '.join(chapters)} on {result['machine']['gpu_name']}: plain {plain['seconds']:.0f} s, with "
            f"{', '.join(result['yours']['files'])} {yours['seconds']:.0f} s = "
            f"{yours['seconds'] / plain['seconds']:.2f}x (goal {YOURS_GOAL:.1f}x: "
            f"{'met' if yours['meets_goal'] else 'missed'})"
        )
    if args.record:
        print(f"recorded: {dest.relative_to(ROOT)}")
    return 0 if plain and plain["exit_status"] == 0 and yours else 1


if __name__ == "__main__":
    sys.exit(main())
