import os
from pathlib import Path

import numpy as np
import pytest

from cudalab.core.gpu import gpu_available


def _cuda_binary_tools() -> None:
    """Put the CUDA 13 binary tools of the test extras (cuobjdump, and nvdisasm, which cuobjdump
    runs from PATH) on PATH, after whatever toolkit the machine has, so that the SASS tests run
    wherever nvcc does."""
    try:
        import nvidia  # the namespace package of NVIDIA's wheels
    except ImportError:
        return
    found = [str(p / "cu13" / "bin") for p in map(Path, nvidia.__path__) if (p / "cu13" / "bin").is_dir()]
    if found:
        os.environ["PATH"] = os.pathsep.join([os.environ.get("PATH", ""), *found])


_cuda_binary_tools()


def pytest_configure(config):
    """One replay cache for the whole run (``cudalab.report.replay_cache``): the controller makes
    its folder, and the xdist workers and every build they start inherit it. Left as it is where
    the environment names one already (``CUDALAB_REPLAY_CACHE= make test`` runs every replay)."""
    from cudalab.report import replay_cache

    if os.environ.get("PYTEST_XDIST_WORKER") or replay_cache.ENV in os.environ:
        return
    import tempfile

    config._replay_cache = tempfile.mkdtemp(prefix="cudalab-replay-cache-")
    os.environ[replay_cache.ENV] = config._replay_cache


def pytest_unconfigure(config):
    folder = getattr(config, "_replay_cache", None)
    if folder:
        import shutil

        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def every_replay_runs(monkeypatch) -> dict[str, str]:
    """For a test of what a chapter's run does (Ctrl-C, a hold, a failure): no kept replay. Returns
    the environment with the run's cache, for the builds around the one under test (one that only
    sets a folder up, or checks that a rerun completes), which may copy kept chapters in."""
    from cudalab.report import replay_cache

    cached = {**os.environ}
    monkeypatch.delenv(replay_cache.ENV, raising=False)
    return cached


def pytest_addoption(parser):
    parser.addoption(
        "--kernel-resources",
        action="store_true",
        help="end the run with a table of every compiled kernel's registers, shared memory and spills",
    )


def pytest_report_header(config):
    return "GPU tests: " + (
        "run on the CUDA device present" if gpu_available() else "skipped, no CUDA device (or no CuPy) here"
    )


def pytest_collection_modifyitems(config, items):
    if gpu_available():
        return
    skip = pytest.mark.skip(reason="no CUDA device (or no CuPy) here")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def rng(request):
    """A fresh random generator per test; its seed is printed so a failure can be replayed."""
    seed = int(os.environ.get("CUDALAB_TEST_SEED", np.random.SeedSequence().entropy % 2**32))
    print(f"{request.node.name}: seed {seed} (set CUDALAB_TEST_SEED to replay)")
    return np.random.default_rng(seed)


def random_graph(rng, n: int, edge_probability: float, max_weight: int) -> np.ndarray:
    """A graph from a fresh seed (see cudalab.labs.fw.graphs.gen_sparse)."""
    from cudalab.labs.fw.graphs import gen_sparse

    return gen_sparse(n, int(rng.integers(2**31)), edge_probability, max_weight)


_RESOURCES: list = []


@pytest.fixture
def kernel_resources_report():
    """Collects (file, PtxasUsage) so the run ends with a table of every kernel's resources."""
    return _RESOURCES


def pytest_terminal_summary(terminalreporter, config):
    if not _RESOURCES or not config.getoption("--kernel-resources"):
        return
    terminalreporter.section("kernel resources (nvcc -Xptxas -v)")
    terminalreporter.write_line(f"{'file':36} {'kernel':24} {'arch':6} {'regs':>5} {'smem B':>7} {'spill B':>8}")
    for name, u in sorted(_RESOURCES, key=lambda r: (r[0], r[1].kernel, r[1].arch)):
        terminalreporter.write_line(
            f"{name:36} {u.kernel:24} {u.arch:6} {u.registers:5d} {u.shared_bytes:7d} {u.spill_store_bytes:8d}"
        )


def notebook_defaults(chapter_id: str) -> dict:
    """The notebook's parameters cell, executed: what JupyterLab's namespace holds after it."""
    import json

    from cudalab.chapter import catalog

    ns: dict = {}
    cell = next(
        c
        for c in json.loads(catalog.chapter(chapter_id).path.read_text())["cells"]
        if "parameters" in c.get("metadata", {}).get("tags", [])
    )
    exec("".join(cell["source"]), ns)
    return ns


def ctrl_c(proc, ready, within_s: float = 60) -> tuple[int, str]:
    """Send SIGINT to a build started with ``subprocess.Popen`` once ``ready()`` has returned (it
    waits for the moment to interrupt), and return its exit status and stderr. A build still
    running ``within_s`` later fails the test with where it was: SIGABRT, which makes a Python
    started with ``PYTHONFAULTHANDLER=1`` (``FAULT_STACKS``) print every thread's stack."""
    import signal
    import subprocess

    try:
        ready()
        status = Path(f"/proc/{proc.pid}/status")  # the build's signal masks: ignored, blocked, caught
        masks = [ln for ln in status.read_text().splitlines() if ln.startswith("Sig")] if status.exists() else []
        proc.send_signal(signal.SIGINT)
        try:
            _, stderr = proc.communicate(timeout=within_s)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGABRT)
            try:
                _, stderr = proc.communicate(timeout=15)
            except subprocess.TimeoutExpired:
                stderr = "(no stacks: the build did not end on SIGABRT either)"
            pytest.fail(
                f"the build was still running {within_s:.0f} s after Ctrl-C; this test's SIGINT handler "
                f"{signal.getsignal(signal.SIGINT)!r}, the build's {masks}; its stacks:\n{stderr[-12000:]}"
            )
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, stderr


FAULT_STACKS = {"PYTHONFAULTHANDLER": "1"}  # a build's env for ``ctrl_c``: its stacks on SIGABRT


def at_a_terminal() -> None:
    """``preexec_fn`` for a build a test will interrupt: SIGINT as a terminal leaves it. A shell
    starts a background job (``make test &``) with SIGINT ignored, its children inherit that, and
    a Python started so never raises KeyboardInterrupt: a Dask build waiting on its workers would
    not hear the test's Ctrl-C (a serial one catches SIGINT itself while a notebook runs)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


def chapter_recipe(chapter_id: str):
    """The point recipe a chapter's notebook hands its explorer: the name passed as ``point=`` in
    its cell tagged ``explore``, imported as that cell imports it (from the chapter's own module)."""
    import json
    import re

    from cudalab.chapter import catalog

    (chapter,) = catalog.select([chapter_id])  # by id (01_block_size) or number (01)
    for cell in json.loads(chapter.path.read_text())["cells"]:
        code = "".join(cell["source"])
        if cell["cell_type"] == "code" and "explore" in cell.get("metadata", {}).get("tags", []):
            name = re.search(r"point=(\w+)", code)
            if name:
                namespace: dict = {}
                exec("\n".join(line for line in code.splitlines() if line.startswith("from cudalab.labs")), namespace)
                return namespace[name.group(1)]
    raise LookupError(f"{chapter.id}: no explore cell hands a point recipe to the explorer")
