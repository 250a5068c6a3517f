"""A chapter's kernel sees only the GPU its chapter measures on (``report.execute.one_gpu``): the
first of ``CUDA_VISIBLE_DEVICES``, as a Dask worker's rotated list puts its own card first, or
device 0 where the variable is unset. A real papermill run with the build's kernel manager."""

from __future__ import annotations

import json

import nbformat
import pytest

from cudalab.report.execute import _kernel_manager_class, one_gpu


@pytest.mark.parametrize(
    ("visible", "seen"),
    [
        ("2,3,0,1", "2"),  # a Dask worker's rotated list: its own card
        (" 1 , 0", "1"),
        ("GPU-8f1c2a55-0000-4000-8000-000000000000,GPU-0b", "GPU-8f1c2a55-0000-4000-8000-000000000000"),
        ("MIG-1,MIG-2", "MIG-1"),
        (",3", "3"),
        (None, "0"),  # unset: device 0, the one CUDA would pick
        ("", ""),  # no GPU visible stays so
    ],
)
def test_the_kernel_env_keeps_only_the_first_visible_gpu(visible, seen):
    env = {"PATH": "/bin"} if visible is None else {"PATH": "/bin", "CUDA_VISIBLE_DEVICES": visible}
    out = one_gpu(env)
    assert out["CUDA_VISIBLE_DEVICES"] == seen
    assert out["PATH"] == "/bin"
    assert env.get("CUDA_VISIBLE_DEVICES") == visible  # the caller's mapping is left alone


def test_a_notebook_run_by_the_build_sees_one_gpu_and_the_build_keeps_its_own(tmp_path, monkeypatch):
    import os

    import papermill

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3,0,1")
    seen = tmp_path / "seen.json"
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(
            f"import json, os; json.dump(os.environ.get('CUDA_VISIBLE_DEVICES'), open({str(seen)!r}, 'w'))"
        )
    ]
    src = tmp_path / "probe.ipynb"
    nbformat.write(nb, src)
    papermill.execute_notebook(
        str(src),
        str(tmp_path / "out.ipynb"),
        kernel_name="python3",
        progress_bar=False,
        kernel_manager_class=_kernel_manager_class(),
    )
    assert json.loads(seen.read_text()) == "2"
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "2,3,0,1"
