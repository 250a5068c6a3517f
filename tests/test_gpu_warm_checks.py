"""GPU test of a chapter's precompile warming the checks' costly CuPy kernel (chapter.occupancy.warm_checks):
after it, with an empty kernel cache, an exact check of a chapter-sized result compiles nothing, and a
rounded check compiles no reduction, only CuPy's quick elementwise kernels."""

import os
import subprocess
import sys

import pytest

from cudalab.core.paths import ROOT

pytestmark = pytest.mark.gpu
pytest.importorskip("cupy")

SCRIPT = """
import os, pathlib, re
import cupy as cp
from cudalab.chapter.occupancy import warm_checks
from cudalab.core.check import compare, compare_close

cache = pathlib.Path(os.environ["CUPY_CACHE_DIR"])
sources = lambda: {f: f.read_text(errors="replace") for f in cache.rglob("*.cu")}
# the inputs first: what makes them compiles its own kernels
distances = cp.arange(3072 * 3072, dtype=cp.int32).reshape(3072, 3072)
same = distances.copy()
product = cp.random.default_rng(0).random((1000, 1000), dtype=cp.float32)
rounded, scale = product.copy(), cp.abs(product) + 1
cp.cuda.Device().synchronize()
before = sources()
warm_checks(cp.cuda.Device().id)
warmed = sources()
exact = compare(distances, same)
after_exact = sources()
close = compare_close(rounded, product, scale, 1e-6)
after_close = sources()
new = [text for f, text in after_close.items() if f not in after_exact]
reductions = [n for text in new for n in re.findall(r"__global__\\s+void\\s+(\\w+)", text) if "_cub_" in n]
print(len(before), len(warmed), len(after_exact), len(after_close), len(reductions), exact["status"], close["status"])
"""


def test_after_the_warm_up_checking_a_chapter_sized_result_compiles_no_reduction(tmp_path):
    env = {
        **os.environ,
        "CUPY_CACHE_DIR": str(tmp_path / "cupy"),
        "CUPY_CACHE_SAVE_CUDA_SOURCE": "1",
        "PYTHONPATH": str(ROOT),
    }
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    before, warmed, after_exact, after_close, reductions, exact, close = out.stdout.split()
    assert int(warmed) > int(before), "the warm-up compiled nothing: the cache was not empty, or it summed nothing"
    assert int(after_exact) == int(warmed), "the exact check compiled kernels the warm-up should have"
    assert int(reductions) == 0, "the rounded check compiled a reduction through CUB after the warm-up"
    assert (exact, close) == ("ok", "ok")
