"""GPU test of a chapter's precompile warming CuPy's kernels for its checks (chapter.occupancy.warm_checks):
after it, checking a chapter-sized result compiles nothing more, with an empty kernel cache."""

import os
import subprocess
import sys

import pytest

from cudalab.core.paths import ROOT

pytestmark = pytest.mark.gpu
pytest.importorskip("cupy")

SCRIPT = """
import os, pathlib
import cupy as cp
from cudalab.chapter.occupancy import warm_checks
from cudalab.core.check import compare, compare_close

cache = pathlib.Path(os.environ["CUPY_CACHE_DIR"])
files = lambda: sum(1 for f in cache.rglob("*") if f.is_file())
# the inputs first: what makes them compiles its own kernels
distances = cp.arange(3072 * 3072, dtype=cp.int32).reshape(3072, 3072)
same = distances.copy()
product = cp.random.default_rng(0).random((1000, 1000), dtype=cp.float32)
rounded, scale = product.copy(), cp.abs(product) + 1
cp.cuda.Device().synchronize()
before = files()
warm_checks(cp.cuda.Device().id)
warmed = files()
exact = compare(distances, same)
close = compare_close(rounded, product, scale, 1e-6)
print(before, warmed, files(), exact["status"], close["status"])
"""


def test_after_the_warm_up_a_chapter_sized_check_compiles_nothing(tmp_path):
    env = {**os.environ, "CUPY_CACHE_DIR": str(tmp_path / "cupy"), "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    before, warmed, after, exact, close = out.stdout.split()
    assert int(warmed) > int(before), "the warm-up compiled nothing: the cache was not empty, or it checked nothing"
    assert int(after) == int(warmed), f"the checks compiled {int(after) - int(warmed)} more kernels after the warm-up"
    assert (exact, close) == ("ok", "ok")
