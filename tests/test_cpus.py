"""A process's own pools are sized by its share of the host: the CPUs it may run on, at most the
share a build on Dask gave it."""

from __future__ import annotations

import os

import pytest

from cudalab.core import cpus
from cudalab.core.cpus import CPU_SHARE_ENV, cpu_share

AFFINITY = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def test_without_a_share_the_pools_take_every_cpu_this_process_may_run_on(monkeypatch):
    monkeypatch.delenv(CPU_SHARE_ENV, raising=False)
    assert cpu_share() == AFFINITY


def test_a_share_below_the_cpus_is_taken(monkeypatch):
    monkeypatch.setattr(cpus.os, "sched_getaffinity", lambda pid: set(range(64)), raising=False)
    monkeypatch.setenv(CPU_SHARE_ENV, "16")
    assert cpu_share() == 16


def test_a_share_above_the_cpus_is_bounded_by_them(monkeypatch):
    monkeypatch.setattr(cpus.os, "sched_getaffinity", lambda pid: {0, 1, 2}, raising=False)
    monkeypatch.setenv(CPU_SHARE_ENV, "16")
    assert cpu_share() == 3


@pytest.mark.parametrize("given", ["", "0", "-4", "many", "2.5"])
def test_a_share_that_is_no_positive_integer_is_ignored(monkeypatch, given):
    monkeypatch.setattr(cpus.os, "sched_getaffinity", lambda pid: set(range(8)), raising=False)
    monkeypatch.setenv(CPU_SHARE_ENV, given)
    assert cpu_share() == 8


def test_the_dask_build_gives_each_chapter_kernel_its_share_and_restores_the_worker(monkeypatch, tmp_path):
    pytest.importorskip("distributed")
    from cudalab.chapter import catalog
    from cudalab.report import cluster, execute

    seen = {}

    def run_notebook(chapter, out_nb, params, cell_timeout, progress):
        seen.update({k: os.environ.get(k) for k in (CPU_SHARE_ENV, "OMP_NUM_THREADS")})
        return True, ""

    monkeypatch.setattr(execute, "run_notebook", run_notebook)
    monkeypatch.setenv(CPU_SHARE_ENV, "worker's own")
    chapter = catalog.discover()[0]
    assert cluster._papermill(chapter, tmp_path / "nb.ipynb", {}, 60, 16) == (True, "")
    assert seen == {CPU_SHARE_ENV: "16", "OMP_NUM_THREADS": "16"}
    assert os.environ[CPU_SHARE_ENV] == "worker's own"
