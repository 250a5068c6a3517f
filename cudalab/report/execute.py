"""One chapter notebook through papermill: the call a serial build makes in its own process and a
Dask task makes in its worker (``report.cluster``), kept apart from both so neither imports the other.

Ctrl-C: a terminal sends SIGINT to the build's process group. The chapter's kernel runs in a
session of its own (jupyter_client starts it so) and never hears it; but the cleanup that the
interrupt sets off in papermill asks the kernel to shut down while it is still answering, and the
kernel then prints a ZMQ traceback on the terminal. So, while a notebook runs in the main thread,
SIGINT first kills the kernels this process started (SIGKILL to each one's own process group: a
kernel holds no result worth a graceful exit once the chapter is abandoned), then raises
KeyboardInterrupt as usual; the build removes the interrupted chapter's partial files.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import signal
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path

from cudalab.chapter import catalog
from cudalab.core.paths import NOTEBOOKS_DIR

VISIBLE_ENV = "CUDA_VISIBLE_DEVICES"

# A kernel may start slowly on a loaded node (several chapters starting at once on Dask workers).
KERNEL_START_TIMEOUT_S = 120


_KERNELS: set[int] = set()  # the process ids of the kernels this process started and has not seen end


@functools.cache
def _kernel_manager_class():
    """A kernel manager that remembers its kernel's process id (for ``_killing_kernels_on_sigint``)
    and does not interrupt a kernel it is about to shut down."""
    from jupyter_client.manager import AsyncKernelManager

    class RememberedKernel(AsyncKernelManager):
        async def _async_launch_kernel(self, kernel_cmd, **kw):
            kw["env"] = one_gpu(kw.get("env", os.environ))
            await super()._async_launch_kernel(kernel_cmd, **kw)
            pid = getattr(self.provisioner, "pid", None)
            if pid:
                _KERNELS.add(pid)

        async def _async_interrupt_kernel(self) -> None:
            # jupyter_client sends SIGINT before every shutdown, to stop whatever runs; a chapter's
            # kernel is shut down once its last cell has ended, and an interrupt then only makes
            # ipykernel print "KeyboardInterrupt caught in kernel" in the middle of a clean build.
            if not self.shutting_down:
                await super()._async_interrupt_kernel()

        async def _async_cleanup_resources(self, restart: bool = False) -> None:
            _KERNELS.discard(getattr(self.provisioner, "pid", None))
            await super()._async_cleanup_resources(restart=restart)

    return RememberedKernel


def one_gpu(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` for a chapter's kernel, with only the GPU it measures on visible: the first of
    ``CUDA_VISIBLE_DEVICES`` (device 0; a Dask worker's own card, ``report.cluster``), or device 0
    where the variable is unset. Why: a CUDA process starts up every GPU it can see, so on a host of
    four GPUs each chapter paid for four, and four chapters starting at once on Dask workers paid
    for sixteen, side by side (their first cell, which opens the GPU, took about 1 s longer there
    than in a serial build); a chapter also cannot touch a card another chapter measures on. An
    empty value (no GPU visible) is left as it is."""
    out = dict(env)
    visible = out.get(VISIBLE_ENV)
    if visible is None:
        out[VISIBLE_ENV] = "0"
    else:
        entries = visible_devices(visible)
        if entries:
            out[VISIBLE_ENV] = entries[0]
    return out


def visible_devices(value: str) -> list[str]:
    """The devices a ``CUDA_VISIBLE_DEVICES`` value names, in its order (indices, UUIDs or MIG ids)."""
    return [d.strip() for d in value.split(",") if d.strip()]


def kill_kernels() -> None:
    """SIGKILL every kernel this process started that is still running (each leads its own group)."""
    for pid in list(_KERNELS):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
        _KERNELS.discard(pid)


@contextlib.contextmanager
def _killing_kernels_on_sigint() -> Iterator[None]:
    """While a notebook runs in the main thread: Ctrl-C kills its kernel before papermill's cleanup
    can talk to it, then interrupts as Python does. Elsewhere (a Dask worker's thread): nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupted(signum, frame):
        kill_kernels()
        for name in ("asyncio", "papermill", "traitlets"):  # no "Task exception was never retrieved",
            logging.getLogger(name).setLevel(logging.CRITICAL)  # no "Kernel died while waiting"
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, interrupted)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def run_notebook(
    chapter: catalog.ChapterInfo, out_nb: Path, params: dict, cell_timeout: int, progress_bar: bool
) -> tuple[bool, str]:
    """One notebook through papermill, synchronously (nbclient refuses to run inside a running
    event loop, so a Dask task calls this from its worker thread too); (ok, the error if not)."""
    import papermill
    from papermill.exceptions import PapermillExecutionError

    # The kernel inherits this process's environment: a batch run, where explorers show nothing.
    previous = os.environ.get(catalog.BATCH_ENV)
    os.environ[catalog.BATCH_ENV] = "1"
    try:
        # The kernel's own log stays quiet below errors: its "running over TCP" warning (a local kernel
        # on loopback, started and stopped by this build) would otherwise print once per chapter.
        with _killing_kernels_on_sigint():
            papermill.execute_notebook(
                str(chapter.path),
                str(out_nb),
                parameters=params,
                kernel_name="python3",
                cwd=str(NOTEBOOKS_DIR),
                progress_bar=progress_bar,
                execution_timeout=cell_timeout or None,  # 0: no limit
                start_timeout=KERNEL_START_TIMEOUT_S,
                extra_arguments=["--IPKernelApp.log_level=ERROR"],
                kernel_manager_class=_kernel_manager_class(),
            )
        return True, ""
    except PapermillExecutionError as exc:
        return False, f"{exc.ename}: {exc.evalue}"
    except Exception as exc:  # the kernel died, timed out, or could not start: the chapter failed
        return False, f"{type(exc).__name__}: {exc}"
    finally:
        if previous is None:
            os.environ.pop(catalog.BATCH_ENV, None)
        else:
            os.environ[catalog.BATCH_ENV] = previous
