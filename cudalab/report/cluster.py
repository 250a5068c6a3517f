"""The chapters as Dask tasks: a local cluster (``--workers N``) or a running one (``--scheduler``).

Imported only where one of those options is given, so a plain build never loads Dask. The build
(``report.build``) hands this module its list of chapter jobs; each becomes one task that runs
papermill synchronously in its worker (``run_chapter_task``) and moves the finished chapter into
the one output folder, so a chapter there is either whole or absent.

- **One GPU per chapter.** ``dask_cuda.LocalCUDACluster`` starts one worker per GPU, each with a
  rotated ``CUDA_VISIBLE_DEVICES``, so device 0 in its kernel is its own card, the only one it
  sees (``execute.one_gpu``); a worker runs one chapter at a time (one thread, and a lock in the
  task for workers started with more). The chapter's provenance names the card (name and UUID).
- **Chapter 00 first, the others beside it** where chapters measure: chapter 00 is submitted
  first (the highest priority), the others longest first (``report.order``), all at once; a
  chapter reads chapter 00's ceilings from the output folder and waits for them only where it
  reads them (``chapter.awaiting``: the build marks chapter 00 as measuring until it ends), so
  chapter 00 is no longer a step every other chapter waits behind.
- **A chapter's seconds** are its run on its worker (from papermill's start to its move into the
  output), not the time it spent queued behind others; the wait is in the log.
- **A worker that dies** mid-chapter: the chapter runs once more on another worker, then fails
  with the reason while the others complete. The attempts are counted in the staging folder
  (shared with the workers, as the output folder is), so this holds whatever the scheduler's
  ``allowed-failures``.
- **Ctrl-C**: the futures are cancelled and the staging folder removed; a task still running on
  a worker of another cluster finds its build gone and discards its chapter, so no partial
  chapter is ever moved in. The next build resumes from the cache as the serial build does.
- Kernel ports race when kernels start at once on one node (papermill#511): a launch error is
  retried with fresh ports. The nanny's ``OMP_NUM_THREADS=1`` is replaced, for the kernel, by
  the node's cores shared among the local workers.
- **Every core, as in a serial build.** ``dask_cuda`` pins each worker to the CPUs NVML puts
  near its GPU (its ``CPUAffinity`` plugin), and a chapter's kernel would inherit the pin; but a
  chapter also works on the CPU (it compiles its kernels in parallel, parses files), and a serial
  build gives it every core the build may use. A local cluster's chapters get those cores
  back (``Pool.kernel_cpus``), so that a chapter takes the time it takes serially.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cudalab.chapter import catalog, declarations
from cudalab.chapter.awaiting import AWAITING_ENV
from cudalab.chapter.recorded import PROVENANCE
from cudalab.core.errors import CudalabError
from cudalab.report import order

Log = Callable[[str], None]
CONNECT_TIMEOUT_S = 10  # an unreachable scheduler is reported within this (and 30 s in all)
WORKERS_TIMEOUT_S = 15  # a scheduler with no worker is reported within this
ATTEMPTS = 2  # a chapter whose worker dies runs once more, then fails
ARRIVING_S = 10  # at Ctrl-C, how long to wait for the results of chapters already moved into the output
STAGING_PREFIX = ".cudalab-staging-"
ACTIVE = "ACTIVE"  # present while the build that made the staging folder waits for its chapters
AWAITING = "awaiting"  # in the staging folder: a file per ceiling-offering chapter still measuring
# A test hook: "CHAPTER=SECONDS[,...]" holds that chapter's task before papermill starts (attempt
# 1 only with "CHAPTER=SECONDS@1"), so a test can kill its worker mid-chapter.
HOLD_ENV = "CUDALAB_TEST_HOLD"
_KERNEL_START_ERRORS = ("Address already in use", "Kernel died before replying", "Kernel didn't respond")
_one_chapter_per_worker = threading.Lock()


def _gpu_count() -> int:
    """The CUDA devices this process may use (0 without CuPy or a device)."""
    from cudalab.core import gpu

    cp = gpu.cupy_or_none()
    return cp.cuda.runtime.getDeviceCount() if cp is not None else 0


@dataclass
class Pool:
    """A Dask client with its cluster (when this build started it), and how the build uses it."""

    client: Any
    description: str
    cluster: Any = None
    kernel_threads: int | None = None  # OMP_NUM_THREADS for each chapter's kernel; None: leave the worker's
    kernel_cpus: frozenset[int] | None = None  # the CPUs each chapter's kernel may use; None: the worker's
    resources: dict[str, int] | None = None
    stopping: bool = False  # set by ``stop``: the builds sharing this pool stop as Ctrl-C stops one
    submitted: list = field(default_factory=list, repr=False)
    _closed: bool = field(default=False, repr=False)

    def stop(self) -> None:
        """Ctrl-C for builds running in other threads (``report.multi``): their tasks are cancelled,
        and each build waiting on them stops as if interrupted (finished chapters kept)."""
        self.stopping = True
        self.client.cancel(list(self.submitted), force=True)

    def close(self) -> None:
        """Disconnect; stop the cluster this build started (not one it joined)."""
        if self._closed:
            return
        self._closed = True
        try:
            self.client.close(timeout=10)
        except Exception:  # a scheduler already gone: nothing left to close
            pass
        if self.cluster is not None:
            try:
                self.cluster.close(timeout=30)
            except Exception:
                pass

    def run_chapters(self, jobs: list, out: Path, ran: Any, **how: Any) -> None:
        """Run ``jobs`` (``build.ChapterJob``) as tasks and append each chapter's outcome to ``ran``
        as it ends; chapter 00 first where it measures the ceilings the others read, then the
        longest first. ``how``: ``_run_on``'s keywords (``cell_timeout``, ``fail_fast``, ``log``,
        and ``seconds``, each chapter's in the last recorded build: ``report.order``)."""
        _run_on(self, jobs, out, ran, **how)


def open_pool(*, workers: int | None, scheduler: str | None, mode: str, log: Log) -> Pool:
    """Connect to ``scheduler``, or start a local cluster of ``workers``: ``LocalCUDACluster`` (one
    worker per GPU, at most ``workers``) where chapters measure on GPUs, else a ``LocalCluster`` of
    ``workers`` single-threaded processes. Raises ``CudalabError`` (one line) for a scheduler that
    does not answer within ``CONNECT_TIMEOUT_S`` or has no worker, before any work."""
    import dask
    import distributed

    # A worker that dies twice under the same task: the scheduler gives up (KilledWorker) rather
    # than trying a third; the attempts file holds the same rule on a scheduler configured otherwise.
    dask.config.set({"distributed.scheduler.allowed-failures": ATTEMPTS - 1})
    if scheduler:
        try:
            client = distributed.Client(scheduler, timeout=CONNECT_TIMEOUT_S)
        except (OSError, TimeoutError) as exc:
            raise CudalabError(
                f"cannot reach the Dask scheduler at {scheduler} within {CONNECT_TIMEOUT_S} s "
                f"({type(exc).__name__}); start it with `dask scheduler` and its workers, or drop --scheduler"
            ) from None
        try:
            client.wait_for_workers(1, timeout=WORKERS_TIMEOUT_S)
        except (OSError, TimeoutError):
            client.close()
            raise CudalabError(
                f"the Dask scheduler at {scheduler} has no worker after {WORKERS_TIMEOUT_S} s; start "
                f"`dask worker {scheduler} --nthreads 1` (or `dask cuda worker {scheduler}` on a GPU node)"
            ) from None
        info = client.scheduler_info(n_workers=-1)["workers"]
        return Pool(client, f"scheduler {scheduler}, {len(info)} worker(s)", resources=_resources(info))
    n = max(1, int(workers or 1))
    quiet = {"silence_logs": 40, "dashboard_address": None}  # logging.ERROR; no dashboard port to collide
    gpus = _gpu_count() if mode == "measure" else 0
    if gpus:
        from dask_cuda import LocalCUDACluster

        from cudalab.report.execute import VISIBLE_ENV, visible_devices

        visible = os.environ.get(VISIBLE_ENV)
        devices = visible_devices(visible) if visible else [str(i) for i in range(gpus)]
        devices = devices[: min(n, gpus)]
        if n > len(devices):
            log(f"note: --workers {n}, but {len(devices)} GPU(s): one worker per GPU, {len(devices)} worker(s)")
        cluster = LocalCUDACluster(CUDA_VISIBLE_DEVICES=devices, threads_per_worker=1, **quiet)
        what = f"LocalCUDACluster, {len(devices)} worker(s), one per GPU ({', '.join(devices)})"
        threads = max(1, (os.cpu_count() or 1) // len(devices))
    else:
        cluster = distributed.LocalCluster(n_workers=n, threads_per_worker=1, processes=True, **quiet)
        what = f"LocalCluster, {n} process worker(s)"
        threads = max(1, (os.cpu_count() or 1) // n)
    client = distributed.Client(cluster)
    return Pool(client, what, cluster=cluster, kernel_threads=threads, kernel_cpus=_usable_cpus())


def _usable_cpus() -> frozenset[int] | None:
    """The CPUs this process (the build) may run on, which a serial build's chapters get; None
    where the platform cannot say (no ``sched_getaffinity``)."""
    return frozenset(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None


@contextmanager
def _cpus(cpus: frozenset[int] | None) -> Iterator[None]:
    """The calling thread (Linux pins threads) on ``cpus`` for the duration, so that the kernel it
    starts inherits them; then back on its own. Nothing where ``cpus`` is None or the platform
    cannot pin."""
    if not cpus or not hasattr(os, "sched_setaffinity"):
        yield
        return
    own = os.sched_getaffinity(0)
    try:
        os.sched_setaffinity(0, cpus)
    except OSError:  # CPUs this host does not have (another host's build): keep the worker's
        yield
        return
    try:
        yield
    finally:
        os.sched_setaffinity(0, own)


def _resources(workers: dict[str, dict]) -> dict[str, int] | None:
    """One chapter per worker at a time: workers of one thread need nothing; workers started with
    ``--resources chapter=1`` are asked for it; others are refused (their threads would share one
    GPU between chapters)."""
    threads = {addr: w.get("nthreads", 1) for addr, w in workers.items()}
    if all(n == 1 for n in threads.values()):
        return None
    if all((w.get("resources") or {}).get("chapter") for w in workers.values()):
        return {"chapter": 1}
    many = ", ".join(f"{a} ({n} threads)" for a, n in threads.items() if n > 1)
    raise CudalabError(
        f"Dask workers {many} would run several chapters at once on one GPU; start them with "
        f"--nthreads 1 (as `dask cuda worker` does) or --resources chapter=1"
    )


def _holds() -> dict[str, tuple[float, bool]]:
    """The test hook's holds: chapter -> (seconds, first attempt only)."""
    holds = {}
    for item in filter(None, os.environ.get(HOLD_ENV, "").split(",")):
        cid, _, spec = item.partition("=")
        first_only = spec.endswith("@1")
        holds[cid.strip()] = (float(spec.removesuffix("@1") or 0), first_only)
    return holds


def _run_on(
    pool: Pool,
    jobs: list,
    out: Path,
    ran: Any,
    *,
    cell_timeout: int,
    fail_fast: bool,
    log: Log,
    seconds: dict[str, float] | None = None,
) -> None:
    import distributed

    from cudalab.report.stitch import ChapterOutcome

    staging = out / f"{STAGING_PREFIX}{uuid.uuid4().hex[:12]}"
    staging.mkdir()
    (staging / ACTIVE).write_text(str(os.getpid()))
    holds = _holds()
    started: dict[str, float] = {}

    def submit(job, priority: int = 0) -> distributed.Future:
        started.setdefault(job.chapter.id, time.time())
        future = pool.client.submit(
            run_chapter_task,
            job.chapter,
            str(out),
            str(staging),
            job.params,
            cell_timeout,
            pool.kernel_threads,
            holds.get(job.chapter.id),
            kernel_cpus=pool.kernel_cpus,
            key=f"cudalab-{job.chapter.id}-{uuid.uuid4().hex[:8]}",
            pure=False,
            resources=pool.resources,
            priority=priority,  # higher first: the order of the wave (longest first)
        )
        pool.submitted.append(future)
        return future

    def finish(job, result: dict[str, Any]) -> bool:
        chapter = job.chapter
        prov_path = out / "data" / chapter.id / PROVENANCE
        provenance = json.loads(prov_path.read_text()) if prov_path.is_file() else {}
        waited = time.time() - started[chapter.id]
        seconds = float(result.get("seconds", waited))  # its run on the worker, not its time in the queue
        queued = f", {waited - seconds:.0f} s queued" if waited - seconds >= 1 else ""
        where = result.get("worker", "")
        ran.outcomes.append(
            ChapterOutcome(
                chapter.id,
                chapter.title,
                job.notebook,
                result["ok"],
                result["error"],
                seconds,
                provenance,
                worker=where,
            )
        )
        measured = job.params.get("mode") == "measure"  # a replay ran on no GPU: it read a recording
        gpu = f" on {provenance.get('gpu_name')}" if measured and provenance.get("gpu_name") else ""
        status = "ok" if result["ok"] else "FAILED: " + (result["error"].splitlines() or [""])[0][:300]
        log(f"[{job.index}/{job.total}] {chapter.id}: {status}{gpu} ({where or 'no worker'}, {seconds:.0f} s{queued})")
        (staging / AWAITING / chapter.id).unlink(missing_ok=True)  # ended: those reading its ceilings go on
        return result["ok"]

    futures: dict[Any, Any] = {}
    try:
        offering = set(declarations.offering_ceilings())  # first: the others read their ceilings
        first = [j for j in jobs if j.params.get("mode") == "measure" and j.chapter.id in offering]
        rest = [j for j in jobs if j not in first]
        by_id = {j.chapter.id: j for j in rest}
        rest = [by_id[c] for c in order.longest_first([j.chapter.id for j in rest], seconds or {})]
        (staging / AWAITING).mkdir()
        for job in first:  # measuring: a chapter reading its ceilings waits for it (chapter.awaiting)
            (staging / AWAITING / job.chapter.id).touch()
        wave = first + rest
        for rank, job in enumerate(wave):
            log(f"[{job.index}/{job.total}] {job.chapter.id} ... (a Dask task)")
            futures[submit(job, len(wave) - rank)] = job
        pending = distributed.as_completed(list(futures))
        for future in pending:
            if pool.stopping:
                raise KeyboardInterrupt
            # a future leaves `futures` only once its outcome is recorded: a Ctrl-C that comes
            # while it is read (a test interrupts right as chapter 00 moves in) still finds it
            job = futures[future]
            result = _result_of(future, job.chapter.id, staging)
            if result is None:  # its worker died before it could retry here: once more
                log(f"[{job.index}/{job.total}] {job.chapter.id}: its worker died; running it on another")
                again = submit(job, len(jobs))  # a retry goes before what has not started
                futures[again] = job
                futures.pop(future)
                pending.add(again)
                continue
            ok = finish(job, result)
            futures.pop(future)
            if not ok and fail_fast:
                ran.stopped = True
                break
    except KeyboardInterrupt:
        (staging / ACTIVE).unlink(missing_ok=True)
        recorded = {o.id for o in ran.outcomes}  # one interrupted after its outcome, before leaving `futures`
        for future in _finished(futures, out):  # Ctrl-C keeps what finished, even a moment before
            job = futures.pop(future)
            result = _result_of(future, job.chapter.id, staging) if job.chapter.id not in recorded else None
            if result is not None:
                finish(job, result)
        pool.client.cancel(list(futures), force=True)
        raise
    finally:
        if futures:
            (staging / ACTIVE).unlink(missing_ok=True)
            pool.client.cancel(list(futures), force=True)
        shutil.rmtree(staging, ignore_errors=True)


def _finished(futures: dict[Any, Any], out: Path) -> list[Any]:
    """The tasks among ``futures`` (future -> ``ChapterJob``) that have ended, once those whose
    worker has already moved its chapter into ``out`` have had ARRIVING_S to report: a chapter that
    finished as Ctrl-C came is kept, not thrown away because its result was still on its way."""
    import distributed

    arriving = [f for f, job in futures.items() if not f.done() and (out / "data" / job.chapter.id).is_dir()]
    if arriving:
        try:
            distributed.wait(arriving, timeout=ARRIVING_S)
        except TimeoutError:  # one never reported: it is not kept
            pass
    return [f for f in futures if f.status == "finished"]


def _workers_of(attempts: list[str]) -> str:
    """The workers of an attempts file's lines ("pid address"), as the log and errors name them."""
    return ", ".join(line.split(" ", 1)[-1] for line in attempts)


def _attempts(staging: Path, chapter_id: str) -> list[str]:
    path = staging / chapter_id / "attempts"
    return path.read_text().splitlines() if path.is_file() else []


def _result_of(future: Any, chapter_id: str, staging: Path) -> dict[str, Any] | None:
    """The task's result; a failure of the task itself (its worker died, it could not be
    unpickled) as a failed chapter with the reason; None where its worker died after its first
    attempt and the scheduler gave up at once (``allowed-failures`` 0): the caller runs it again."""
    from distributed import KilledWorker

    try:
        return future.result()
    except KilledWorker:
        tried = _attempts(staging, chapter_id)
        if len(tried) < ATTEMPTS:
            return None
        workers = _workers_of(tried)
        return {
            "ok": False,
            "error": f"KilledWorker: the Dask workers running this chapter died {len(tried)} times ({workers})",
        }
    except Exception as exc:  # the task raised outside papermill: a bug or a broken worker, shown as the chapter's
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}


def run_chapter_task(
    chapter: catalog.ChapterInfo,
    out: str,
    staging: str,
    params: dict[str, Any],
    cell_timeout: int,
    kernel_threads: int | None,
    hold: tuple[float, bool] | None = None,
    kernel_cpus: frozenset[int] | None = None,
) -> dict[str, Any]:
    """One chapter in a Dask worker: papermill into a folder of its own under ``staging``, then
    the finished notebook and data moved into ``out`` (each a rename); a plain synchronous function
    (nbclient refuses a running event loop). Returns ``ok``, ``error`` and ``worker``."""
    from distributed import get_worker

    chapter_id = chapter.id
    try:
        worker = get_worker().address
    except ValueError:  # called outside a worker (tests)
        worker = "local"
    out_p, staging_p = Path(out), Path(staging)
    mine = staging_p / chapter_id
    if not (staging_p / ACTIVE).is_file():  # cancelled before it started: make nothing
        return {"ok": False, "error": "cancelled: the build stopped", "worker": worker}
    mine.mkdir(parents=True, exist_ok=True)
    earlier = _attempts(staging_p, chapter_id)
    if len(earlier) >= ATTEMPTS:  # the scheduler retries more often than we do: stop here
        workers = _workers_of(earlier)
        return {
            "ok": False,
            "error": f"the Dask workers running this chapter died {len(earlier)} times ({workers})",
            "worker": worker,
        }
    attempt = len(earlier) + 1
    with open(mine / "attempts", "a") as f:
        f.write(f"{os.getpid()} {worker}\n")
    with _one_chapter_per_worker:
        if hold and (attempt == 1 or not hold[1]):
            time.sleep(hold[0])
        if not (staging_p / ACTIVE).is_file():
            _discard(mine)
            return {"ok": False, "error": "cancelled: the build stopped", "worker": worker}
        work = mine / f"attempt-{attempt}"
        shutil.rmtree(work, ignore_errors=True)
        data = work / "data"
        data.mkdir(parents=True)
        for offering in declarations.offering_ceilings():  # chapter 00's ceilings, as in the serial build
            ceilings = out_p / "data" / offering
            measuring = (staging_p / AWAITING / offering).exists()  # it arrives there while this chapter runs
            if chapter_id != offering and (ceilings.is_dir() or measuring):
                (data / offering).symlink_to(ceilings, target_is_directory=True)
        out_nb = work / chapter.path.name
        started = time.monotonic()
        with _cpus(kernel_cpus):
            ok, error = _papermill(
                chapter, out_nb, {**params, "data_dir": str(data)}, cell_timeout, kernel_threads, staging_p / AWAITING
            )
        if not (staging_p / ACTIVE).is_file():  # interrupted meanwhile: leave nothing behind
            _discard(mine)
            return {"ok": False, "error": "cancelled: the build stopped", "worker": worker}
        _move_in(work, out_p, chapter_id, chapter.path.name)
        shutil.rmtree(mine, ignore_errors=True)
        return {
            "ok": ok,
            "error": error,
            "worker": worker + _retried(attempt, earlier),
            "seconds": time.monotonic() - started,
        }


def _retried(attempt: int, earlier: list[str]) -> str:
    """What the log says of a chapter run again: its attempt, and the worker that died running it
    before (the attempts file's lines are "pid address"), so a retry on another GPU can be seen."""
    if attempt < 2:
        return ""
    return f" (attempt {attempt}, after {_workers_of(earlier)} died running it)"


def _discard(mine: Path) -> None:
    """A cancelled chapter's staging folder removed, and the build's staging folder where it is
    left empty (the build removed it while this task was starting)."""
    shutil.rmtree(mine, ignore_errors=True)
    try:
        mine.parent.rmdir()
    except OSError:  # others' chapters still there, or already gone
        pass


def _papermill(
    chapter: catalog.ChapterInfo,
    out_nb: Path,
    params: dict,
    cell_timeout: int,
    kernel_threads: int | None,
    awaiting: Path | None = None,
) -> tuple[bool, str]:
    """papermill, retried with fresh ports where the kernel could not start (ports race when
    kernels start at once on one node); the kernel gets ``kernel_threads`` CPU threads, and the
    folder of the chapters still measuring (``chapter.awaiting``)."""
    from cudalab.report.execute import run_notebook

    threads = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
    saved = {k: os.environ.get(k) for k in (*threads, AWAITING_ENV)}
    if kernel_threads:
        for k in threads:
            os.environ[k] = str(kernel_threads)
    if awaiting is not None:
        os.environ[AWAITING_ENV] = str(awaiting)
    try:
        for tries in range(3):
            ok, error = run_notebook(chapter, out_nb, params, cell_timeout, False)
            if ok or not any(e in error for e in _KERNEL_START_ERRORS) or _executed_any(out_nb):
                return ok, error
            time.sleep(1 + random.random() * 2 * (tries + 1))
        return ok, error
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _executed_any(notebook: Path) -> bool:
    """Whether any cell of a (partly) executed notebook ran: then a failure is the chapter's own."""
    try:
        nb = json.loads(notebook.read_text())
    except (OSError, ValueError):
        return False
    return any(c.get("execution_count") for c in nb.get("cells", []))


def _move_in(work: Path, out: Path, chapter_id: str, notebook_name: str) -> None:
    """The chapter's data folder, then its executed notebook, renamed into ``out`` (the same
    file system, so each move is whole); a previous copy of either is replaced."""
    src = work / "data" / chapter_id
    dest = out / "data" / chapter_id
    if src.is_dir():
        if dest.exists():
            shutil.rmtree(dest)
        os.replace(src, dest)
    staged = work / notebook_name
    if staged.is_file():
        # the notebook names the folders it ran with: name those it is read from, as a serial build's does
        text = staged.read_text()
        final = out / "notebooks" / notebook_name
        for was, now in ((staged, final), (work / "data", out / "data")):
            text = text.replace(json.dumps(str(was))[1:-1], json.dumps(str(now))[1:-1])
        staged.write_text(text)
        os.replace(staged, final)
