"""K-means on a file, as the classic Northwestern codes run it (lab 004's starting point): a thin face.

    python -m cudalab.kmeans -i FILE -n K [-t THRESHOLD] [-b] [-o PREFIX] [--cpu] [--variant NAME]

Reads FILE (text: an id then D values per line; with -b, binary: int32 N, int32 D, N*D float32),
clusters its N objects into K clusters starting from the first K objects, and writes
PREFIX.cluster_centres (a line per cluster: index, then D values) and PREFIX.membership (a line
per object: index, then cluster); PREFIX defaults to FILE. It prints the iteration count and
the time of each stage.

On a GPU it runs chapter 06's exact variant: the sequential code's arithmetic in the sequential code's
order, so that its memberships, iteration count and centres are the sequential mode's, bit for bit, on
any data (``--variant`` picks a faster one, whose rounding differs in the last bits, which at large K
can end a run in another local optimum: tensor, dot, fixed, tiled, fused, shared_buffers,
device_update, host_update, cupy); without a GPU, or with --cpu, it runs the classic sequential code,
whose memberships, iteration count and centres (to six decimals) it reproduces.
A malformed file, K <= 0 or K > N, or an output path that is the input, is refused before any
work. Exit status: 0 ok, 2 a malformed file or bad arguments.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from cudalab.core.errors import CudalabError
from cudalab.core.face import exit_status
from cudalab.core.gpu import gpu_available, gpu_name
from cudalab.labs.kmeans import files, reference


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m cudalab.kmeans",
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n", 2)[2],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("-i", dest="input", required=True, metavar="FILE", help="input file")
    p.add_argument("-n", dest="k", required=True, type=int, metavar="K", help="number of clusters")
    p.add_argument(
        "-t",
        dest="threshold",
        type=float,
        default=reference.THRESHOLD,
        metavar="THRESHOLD",
        help=f"stop when at most this fraction of objects changes cluster (default {reference.THRESHOLD})",
    )
    p.add_argument("-b", dest="binary", action="store_true", help="the input is binary (default: text)")
    p.add_argument("-o", dest="prefix", metavar="PREFIX", help="output prefix (default: the input file's path)")
    p.add_argument("--cpu", action="store_true", help="run the classic sequential code even where a GPU is present")
    p.add_argument(
        "--variant",
        default=None,
        help="GPU variant (default: exact, the sequential code's arithmetic and order on the GPU: the same "
        "answer as --cpu, bit for bit; tensor and dot are faster, deterministic, and round differently)",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    return exit_status(lambda: _run(args))


def _run(args: argparse.Namespace) -> int:
    source = Path(args.input)
    prefix = Path(args.prefix) if args.prefix else source
    for out in (prefix.with_name(prefix.name + ".cluster_centres"), prefix.with_name(prefix.name + ".membership")):
        if out.exists() and source.exists() and out.resolve() == source.resolve():
            raise CudalabError(f"the output {out} is the input file; choose another -o PREFIX")
        if out.is_dir():
            raise CudalabError(f"the output {out} is a folder; choose another -o PREFIX")
    if not prefix.parent.is_dir():
        raise CudalabError(f"no folder {prefix.parent} for the outputs")
    if not 0 <= args.threshold < 1:
        raise CudalabError(f"-t {args.threshold}: the threshold is a fraction of the objects, in [0, 1)")
    if args.variant is not None:
        from cudalab.labs.kmeans.gpu import VARIANTS  # names only: importing it needs no GPU

        if args.variant not in VARIANTS:
            raise CudalabError(f"unknown variant {args.variant!r}; variants: {', '.join(VARIANTS)}")
    t0 = time.perf_counter()
    points = files.read(source, args.binary)
    reference.check_k(args.k, len(points), str(source))
    read_s = time.perf_counter() - t0
    n, d = points.shape
    stages: dict[str, float] = {}
    run: dict | None = None
    t1 = time.perf_counter()
    if args.cpu or not gpu_available():
        where = "the classic sequential code (CPU)"
        result = reference.classic(points, args.k, args.threshold)
        centres, membership, iterations = result.centres, result.membership, result.iterations
    else:
        from cudalab.labs.kmeans import gpu

        variant = args.variant or "exact"
        where = f"{variant} on {gpu_name()}"
        problem = gpu.Problem(points, args.k)
        t_setup = time.perf_counter()
        run = gpu.run_to_convergence(problem, variant, args.threshold)
        stages = {"H2D + transpose": (t_setup - t1) * 1e3, **run["stages_ms"]}
        centres, membership, iterations = run["centres"], run["membership"], run["iterations"]
    compute_s = time.perf_counter() - t1
    t2 = time.perf_counter()
    written = files.write_outputs(prefix, centres, membership)
    write_s = time.perf_counter() - t2
    print(f"N = {n} objects, D = {d} coordinates, K = {args.k} clusters, threshold {args.threshold:g}: {where}")
    print(f"iterations: {iterations}" + (f" (the loop on the {run['loop']})" if run else ""))
    print(f"read {read_s * 1e3:.1f} ms, compute {compute_s * 1e3:.1f} ms, write {write_s * 1e3:.1f} ms")
    for name, ms in stages.items():
        print(f"  {name}: {ms:.2f} ms")
    print("wrote " + ", ".join(str(p) for p in written))
    return 0


if __name__ == "__main__":
    sys.exit(main())
