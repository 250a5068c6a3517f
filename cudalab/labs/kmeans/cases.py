"""Lab 004's classic k-means binary inputs as an instructor's hidden inputs for chapter 06
(``--grade --cases``, ``notebooks/06_kmeans_device_update.yaml``): each file run to convergence with
the student's k-means file in the student's process, and checked against the sequential code's
memberships after the second iteration, near ties excepted (``grading.cases`` says why)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from cudalab.labs.checks import CaseKind, Verdict

KMEANS_K = 32  # K where a case's name does not say (the chapter's points' K)
EARLY = 2  # the iteration whose memberships are the verdict: the first built on the student's own update


def _kmeans_k(case: Path) -> int:
    """K for a k-means case: ``name.k16.bin`` says 16; without it, ``KMEANS_K``."""
    found = re.search(r"\.k(\d+)$", case.stem)
    return int(found.group(1)) if found else KMEANS_K


def _kmeans_input(case: Path) -> tuple[Any, int]:
    """A k-means case's (N, D) float32 objects and its K, as the classic code reads them: a file
    it cannot read, or K above N, raises ``CaseFormatError``."""
    from cudalab.labs.kmeans import files, reference

    points = files.read_binary(case)
    k = _kmeans_k(case)
    reference.check_k(k, len(points), case.name)
    return points, k


def _kmeans_solve(
    case: Path, out: Path, kernel_file: str | None, point: dict[str, Any], params: dict[str, Any]
) -> float:
    """Run the point's variant, built from ``kernel_file``, to convergence as the classic code
    loops; write the memberships after iteration ``EARLY``, the final ones and the iteration count
    (int32); return the run's GPU time (every stage of every iteration, ms)."""
    import numpy as np

    from cudalab.labs.kmeans import gpu, reference

    points, k = _kmeans_input(case)
    runner = gpu.Runner(gpu.Problem(points, k), str(point["variant"]), kernel_file)
    early, gpu_ms, loop = None, 0.0, 0
    # gpu.run_to_convergence's loop, with the memberships kept at iteration EARLY on the way
    while True:
        changed = runner.step()
        gpu_ms += sum(runner.last_times.values())
        if loop + 1 == EARLY:
            early = runner.result()[1]
        if not (
            np.float32(changed) / np.float32(len(points)) > np.float32(reference.THRESHOLD)
            and loop < reference.MAX_LOOP
        ):
            break
        loop += 1
    final = runner.result()[1]
    early = final if early is None else early
    out.write_bytes(b"".join(np.asarray(a, dtype="<i4").tobytes() for a in (early, final, [loop + 1])))
    return gpu_ms


def _kmeans_expected(case: Path) -> bytes:
    """The sequential code's memberships after iteration ``EARLY`` (or its last, if it stopped
    sooner), which of its objects were near a tie in that assignment (uint8), its final
    memberships and its iteration count."""
    import numpy as np

    from cudalab.labs.kmeans import reference

    points, k = _kmeans_input(case)
    early = reference.classic(points, k, max_loop=EARLY - 1)
    ran = min(early.iterations, EARLY)  # the classic count reads one more where max_loop stopped it
    before = points[:k] if ran == 1 else reference.classic(points, k, max_loop=ran - 2).centres
    _, gap = reference.assign64(points, before)
    whole = reference.classic(points, k)
    tie = (gap < reference.TIE_RTOL).astype(np.uint8)
    return b"".join(
        [
            np.asarray(early.membership, dtype="<i4").tobytes(),
            tie.tobytes(),
            np.asarray(whole.membership, dtype="<i4").tobytes(),
            np.asarray([whole.iterations], dtype="<i4").tobytes(),
        ]
    )


def _kmeans_check(answer: Path, expected: bytes) -> Verdict:
    """Wrong where an object is outside the sequential code's cluster after iteration ``EARLY``
    without a near tie; the whole run's agreement is the note."""
    import numpy as np

    n = (len(expected) - 4) // 9
    want_early = np.frombuffer(expected, dtype="<i4", count=n)
    tie = np.frombuffer(expected, dtype=np.uint8, count=n, offset=4 * n).astype(bool)
    want_final = np.frombuffer(expected, dtype="<i4", count=n, offset=5 * n)
    want_its = int(np.frombuffer(expected, dtype="<i4", count=1, offset=9 * n)[0])
    if not answer.is_file():
        return "wrote no output", ""
    got = answer.read_bytes()
    if len(got) != 8 * n + 4:
        return f"the output has {len(got):,} bytes, the expected {8 * n + 4:,}", ""
    early, final = np.frombuffer(got, dtype="<i4", count=n), np.frombuffer(got, dtype="<i4", count=n, offset=4 * n)
    iterations = int(np.frombuffer(got, dtype="<i4", count=1, offset=8 * n)[0])
    off = (early != want_early) & ~tie
    if off.any():
        i = int(np.flatnonzero(off)[0])
        return (
            f"after iteration {EARLY}, {int(off.sum()):,} of {n:,} objects are outside the sequential code's "
            f"cluster and not near a tie (object {i}: cluster {int(early[i])}, expected {int(want_early[i])})",
            "",
        )
    same = float((final == want_final).mean())
    return (
        "",
        f"whole run: {same:.2%} of objects in the sequential code's cluster, {iterations} iterations (its {want_its})",
    )


KMEANS = CaseKind(
    "a classic k-means binary input (lab 004), checked against the sequential code's memberships",
    _kmeans_solve,
    _kmeans_expected,
    _kmeans_check,
    _kmeans_input,
)
