"""A chapter's kernel under Dask gets the CPUs a serial build's would (``report.cluster._cpus``),
whatever the worker was pinned to: the thread that starts the kernel is pinned for the duration,
and the kernel, a child process, inherits it. Real processes and a real Jupyter kernel (on CPU)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from cudalab.report.cluster import _cpus, _usable_cpus

pytestmark = pytest.mark.skipif(
    not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2, reason="needs CPU affinity and 2 CPUs"
)


def _child_cpus() -> set[int]:
    out = subprocess.run(
        [sys.executable, "-c", "import os; print(*sorted(os.sched_getaffinity(0)))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return {int(c) for c in out.split()}


def test_a_pinned_worker_starts_its_chapter_on_every_cpu_of_the_build_and_keeps_its_own_pin():
    every = _usable_cpus()
    own = os.sched_getaffinity(0)
    first = frozenset([min(every)])
    try:
        os.sched_setaffinity(0, first)  # as dask_cuda pins a worker to its GPU's CPUs
        assert _child_cpus() == set(first)
        with _cpus(every):
            assert _child_cpus() == set(every)
        assert os.sched_getaffinity(0) == first  # the worker's pin, back
    finally:
        os.sched_setaffinity(0, own)


def test_no_cpus_or_cpus_this_host_lacks_leave_the_pin_alone():
    own = os.sched_getaffinity(0)
    with _cpus(None):
        assert os.sched_getaffinity(0) == own
    with _cpus(frozenset([10**6])):  # a CPU of another host (a remote build's): nothing to pin to
        assert os.sched_getaffinity(0) == own
    assert os.sched_getaffinity(0) == own


@pytest.mark.slow
def test_the_jupyter_kernel_started_inside_runs_on_those_cpus():
    """jupyter_client starts the kernel from the calling thread, as papermill does in a Dask task."""
    from jupyter_client.manager import start_new_kernel

    one = frozenset([max(_usable_cpus())])
    with _cpus(one):
        km, kc = start_new_kernel(kernel_name="python3")
    try:
        seen = []
        kc.execute_interactive(
            "import os; print(*sorted(os.sched_getaffinity(0)))",
            output_hook=lambda m: seen.append(m["content"].get("text", "")) if m["msg_type"] == "stream" else None,
            timeout=60,
        )
        assert {int(c) for c in "".join(seen).split()} == set(one)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
