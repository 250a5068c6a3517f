"""Command line for NTHU-format all-pairs shortest-path cases (lab 001): a thin face.

    python -m cudalab.apsp generate V DENSITY OUT [--seed S] [--max-weight W]
    python -m cudalab.apsp solve IN OUT [--check] [--cpu] [--kernel KIND:BF]
    python -m cudalab.apsp verify IN OUT

``solve`` runs a blocked kernel on the GPU and prints the time of each stage as lab 001 reports
them. Its default kernel is, of those chapter 04 recorded for the present GPU's profile
(``results/<gpu>/<profile>/04_blocking_factor/``), the fastest expected at the case's V once its
matrix is padded to the kernel's blocking factor (``labs.fw.blocked.choice``; the chapter's
``best_kernel`` headline where its tables time none); ``--kernel minplus:64``,
``registers:64:t8`` or ``shared:32`` picks one. Without a GPU, or with ``--cpu``,
it runs the course's sequential C Floyd-Warshall. ``--check`` compares the answer with an
independent reference: the C code for a GPU answer, a vectorized NumPy Floyd-Warshall for a CPU
answer; ``verify`` compares an existing output file with the C reference. An output path that is
the input, a folder, or in a folder that does not exist is refused before any work.
Exit status: 0 ok, 1 a wrong answer, 2 a malformed file or bad arguments.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from cudalab.chapter import recorded
from cudalab.chapter.profiles import profile_for_gpu
from cudalab.core.errors import CaseFormatError, NoRecordedResults
from cudalab.core.face import exit_status
from cudalab.core.gpu import gpu_available, gpu_name
from cudalab.labs.fw import nthu

CHAPTER = "04_blocking_factor"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m cudalab.apsp",
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n", 2)[2],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="command", required=True)
    g = sub.add_parser("generate", help="write a random test case")
    g.add_argument("v", type=int, help="vertices")
    g.add_argument("density", type=float, help="fraction of the V*(V-1) possible edges")
    g.add_argument("out", help="input file to write")
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--max-weight", type=int, default=1000)
    s = sub.add_parser("solve", help="solve an input file into an output file")
    s.add_argument("input")
    s.add_argument("output")
    s.add_argument("--check", action="store_true", help="compare the answer with the CPU reference (slow for large V)")
    s.add_argument(
        "--cpu", action="store_true", help="solve with the sequential C reference even where a GPU is present"
    )
    s.add_argument(
        "--kernel",
        metavar="KIND:BF",
        help="blocked kernel: minplus:64|128|256|512[:nodpx], registers:BF[:t4|:t8][:nodpx] or shared:BF "
        "(default: of the kernels chapter 04 recorded for this GPU's profile, the fastest expected at "
        "the case's V once padded to the kernel's blocking factor)",
    )
    v = sub.add_parser("verify", help="compare an output file with the CPU reference")
    v.add_argument("input")
    v.add_argument("output")
    return p


def _compare(got: np.ndarray, want: np.ndarray, reference: str) -> int:
    bad = np.argwhere(got != want)
    if len(bad) == 0:
        print(f"ok: all {got.size} distances match {reference}")
        return 0
    i, j = bad[0]
    print(f"WRONG: {len(bad)} of {got.size} distances differ; first at ({i}, {j}): {got[i, j]} vs {want[i, j]}")
    return 1


def _recorded_chapter(gpu: str) -> Path:
    """Chapter 04's recorded folder for this GPU's profile: the recording made on this GPU if
    there is one, else the newest."""
    profile = profile_for_gpu(gpu)
    try:
        rec, _ = recorded.find(profile, gpu=gpu)
    except NoRecordedResults:
        rec, _ = recorded.find(profile)
    return rec.path / CHAPTER


def _shown(folder: Path) -> str:
    return str(folder.relative_to(folder.parents[2]))


def recorded_best_kernel(gpu: str) -> tuple[str, str]:
    """(kernel spec text, where it was read): the ``best_kernel`` headline of chapter 04's
    recorded summary, the fastest at its largest N."""
    path = _recorded_chapter(gpu) / recorded.SUMMARY
    best = [e for e in (json.loads(path.read_text()) if path.is_file() else []) if e["key"] == "best_kernel"]
    if not best:
        raise NoRecordedResults(f"{path} records no best_kernel; pass --kernel KIND:BF")
    return str(best[0]["value"]), f"chapter 04's best, recorded in {_shown(path.parent)}"


def recorded_kernel_for(gpu: str, v: int) -> tuple[str, str]:
    """(kernel spec text, why) for a graph of ``v`` vertices: of the kernels chapter 04 timed for
    this GPU's profile, the fastest expected at ``v`` once padded (``blocked.choice``); the
    chapter's best at its largest N where its tables time none."""
    import pandas as pd

    from cudalab.labs.fw.blocked import choice

    folder = _recorded_chapter(gpu)
    frames = [pd.read_csv(path) for path in (folder / f"{name}.csv" for name in choice.TABLES) if path.is_file()]
    picked = choice.choose(pd.concat(frames, ignore_index=True), v) if frames else None
    if picked is None:
        return recorded_best_kernel(gpu)
    return picked.spec.as_text(), f"{picked.reason()}, in {_shown(folder)}"


def _solve_gpu(args: argparse.Namespace, v: int, edges: np.ndarray) -> np.ndarray:
    from cudalab.labs.fw import nthu_gpu
    from cudalab.labs.fw.blocked.kernels import KernelSpec

    name = gpu_name() or ""
    text, source = (args.kernel, "--kernel") if args.kernel else recorded_kernel_for(name, v)
    spec = KernelSpec.parse(text)
    ms, _ = nthu_gpu.solve_file(args.input, args.output, spec.plan())
    print(
        f"{args.output}: V = {v}, E = {len(edges)}, solved on {name} with {spec.label()} ({source}); "
        + ", ".join(f"{stage} {t:.1f} ms" for stage, t in ms.items())
        + f"; total {sum(ms.values()):.1f} ms"
    )
    return nthu.read_output(args.output, v)


def _check_output_path(input_path: str, output_path: str) -> None:
    """Refuse, before solving, an output that would overwrite the input or cannot be written."""
    out, inp = Path(output_path), Path(input_path)
    if out.resolve() == inp.resolve() or (out.exists() and inp.exists() and out.samefile(inp)):
        raise CaseFormatError(f"{output_path}: the output path is the input file; it would be overwritten")
    if out.is_dir():
        raise CaseFormatError(f"{output_path}: the output path is a folder; name a file")
    if not out.parent.is_dir():
        raise CaseFormatError(f"{output_path}: the folder {out.parent} does not exist")


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    return exit_status(lambda: _run(args))


def _run(args: argparse.Namespace) -> int:
    if args.command == "generate":
        edges = nthu.generate_case(args.v, args.density, args.seed, args.max_weight)
        nthu.write_case(args.out, args.v, edges)
        print(f"{args.out}: V = {args.v}, E = {len(edges)}")
        return 0
    v, edges = nthu.read_case(args.input)
    if args.command == "solve":
        _check_output_path(args.input, args.output)
        if args.cpu or not gpu_available():
            t0 = time.perf_counter()
            dist = nthu.solve_cpu(v, edges)
            nthu.write_output(args.output, dist)
            print(
                f"{args.output}: V = {v}, E = {len(edges)}, solved on the CPU in {time.perf_counter() - t0:.3f} s"
                + ("" if args.cpu else " (no CUDA device here)")
            )
            # the answer came from the C code: check it with an implementation that shares none of it
            return _compare(dist, nthu.solve_numpy(v, edges), "a NumPy Floyd-Warshall") if args.check else 0
        dist = _solve_gpu(args, v, edges)
        return _compare(dist, nthu.solve_cpu(v, edges), "the sequential C reference") if args.check else 0
    return _compare(nthu.read_output(args.output, v), nthu.solve_cpu(v, edges), "the sequential C reference")


if __name__ == "__main__":
    sys.exit(main())
