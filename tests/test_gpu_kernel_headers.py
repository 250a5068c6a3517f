"""On the GPU, through NVRTC and CuPy's caches: a kernel file's local headers are found, an edit to
one is compiled (not served from either cache), and an error inside one names the header. That the
ceiling and the registers kernels, which share add_min.cuh, still agree with their references
is tests/test_gpu_blocked.py's to check."""

import os

import pytest

from cudalab.core import kernels
from cudalab.core.errors import KernelCompileError

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def cp():
    import cupy

    return cupy


def _edit(path, text):
    stat = path.stat()
    path.write_text(text)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))


def test_a_header_edit_reaches_the_gpu(cp, tmp_path, monkeypatch):
    monkeypatch.setenv("CUPY_CACHE_DIR", str(tmp_path / "cupy-cache"))  # CuPy's disk cache, kept apart
    (tmp_path / "value.cuh").write_text("#define VALUE 7\n")
    cu = tmp_path / "k.cu"
    cu.write_text('#include "value.cuh"\nextern "C" __global__ void k(int* a) { a[threadIdx.x] = VALUE; }\n')
    out = cp.zeros(32, dtype=cp.int32)
    kernels.load_kernel(cu, "k")((1,), (32,), (out,))
    assert (out.get() == 7).all()
    _edit(tmp_path / "value.cuh", "#define VALUE 11\n")
    kernels.load_kernel(cu, "k")((1,), (32,), (out,))
    assert (out.get() == 11).all(), "neither load_module's cache nor CuPy's served the old header"


def test_nvrtc_error_inside_a_header_names_it(cp, tmp_path):
    (tmp_path / "broken.cuh").write_text("// a header\n__device__ int f(int a)\n{\n    return a + undefined_name;\n}\n")
    cu = tmp_path / "uses.cu"
    cu.write_text('#include "broken.cuh"\nextern "C" __global__ void k(int* a) { a[0] = f(a[0]); }\n')
    with pytest.raises(KernelCompileError) as err:
        kernels.load_kernel(cu, "k")
    assert (err.value.path, err.value.line) == ((tmp_path / "broken.cuh").resolve(), 4)
