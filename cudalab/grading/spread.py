"""A class's submissions as Dask tasks, one GPU each (``--grade ... --workers N``).

Each task is ``isolate.run`` on a worker of the grader's own pool (``report.cluster.open_pool``:
``LocalCUDACluster``, one worker per GPU, so the submission's process sees that worker's GPU as
device 0), opened while the compiler checks the submissions; the references run on it too, first,
beside the students. A student's kernel runs in the task's child process, so a fault kills that process, not
the worker; a worker that dies anyway is retried once on another, then its submission is marked
crashed while the rest complete.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cudalab.grading import isolate
from cudalab.grading import results as R


def open_pool(workers: int, log: Callable[[str], None]) -> Any:
    """The build's own pool of ``workers`` (``report.cluster.open_pool``: one worker per GPU, process
    workers where there is no GPU); the caller closes it."""
    from cudalab.report.cluster import open_pool as open_cluster

    pool = open_cluster(workers=workers, scheduler=None, mode="measure", log=log)
    log(f"grading on {pool.description}")
    return pool


def run(
    pool: Any,
    requests: list[dict[str, Any]],
    names: list[str],
    limits: list[isolate.Limits],
    log: Callable[[str], None],
    worker: tuple[str, ...] = isolate.WORKER,
) -> list[dict[str, Any]]:
    """Each request's ``isolate.run`` result under its ``limits``, in order, computed as tasks on
    ``pool`` (the first submitted first); ``worker``: what each task's child process runs (a test's
    stand-in)."""
    from distributed import as_completed

    futures = [
        pool.client.submit(
            isolate.run, request, limit, worker=worker, retries=1, pure=False, priority=len(requests) - i
        )
        for i, (request, limit) in enumerate(zip(requests, limits, strict=True))
    ]
    index = {f.key: i for i, f in enumerate(futures)}
    results: list[dict[str, Any] | None] = [None] * len(requests)
    for future in as_completed(futures):
        i = index[future.key]
        try:
            results[i] = future.result()
        except Exception as exc:  # the worker died under it twice (KilledWorker) or the task failed
            why = f"its Dask worker died, once retried ({type(exc).__name__})"
            results[i] = {
                "ceiling": None,
                "points": [{"status": R.CRASHED, "reason": why}] * len(requests[i]["points"]),
                "wall_s": 0.0,
            }
        log(R.progress_line(names[i], requests[i].get("chapter", ""), results[i]))
    return [r for r in results if r is not None]
