"""Kernel files share code through local headers (``kernels_cu/add_min.cuh``): one definition of a
relaxation, every cache of a compiled kernel keyed on the file *and* its headers, errors inside a
header named where they are. CPU only: nvcc compiles here, and NVRTC is stood in for by a fake CuPy
that records what it is handed."""

import os
import re
import shutil
import types

import pytest

from cudalab.core import kernels
from cudalab.core.errors import KernelCompileError
from cudalab.core.paths import KERNELS_DIR

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
HEADER = KERNELS_DIR / "add_min.cuh"
RELAXING = ("fw_blocked_registers.cu", "fw_blocked_minplus.cu", "int_add_min_ceiling.cu")


def _code(path) -> str:
    """A kernel file without its comments, so that prose about the intrinsic does not count."""
    return re.sub(r"//[^\n]*|/\*.*?\*/", "", path.read_text(), flags=re.S)


# ---- one definition of add_min


def test_add_min_is_defined_in_the_header_only():
    sources = sorted([*KERNELS_DIR.glob("*.cu"), *KERNELS_DIR.rglob("*.cuh")])
    defining = [p.name for p in sources if re.search(r"\bint\s+add_(?:then_)?min\s*\(", _code(p))]
    assert defining == ["add_min.cuh"]
    calling_dpx = [p.name for p in sources if "__viaddmin_s32" in _code(p)]
    assert calling_dpx == ["add_min.cuh"], "the DPX intrinsic is written once, in add_min.cuh"


def test_the_kernels_and_their_ceiling_include_the_header():
    for name in RELAXING:
        assert kernels.included_headers(name) == [HEADER.resolve()], name
    ceiling = _code(KERNELS_DIR / "int_add_min_ceiling.cu")
    plain, dpx = ceiling.split('extern "C" __global__ void add_min_dpx')
    assert "add_then_min(" in plain and "add_min(" not in plain.split("add_min_plain", 1)[1]
    assert "add_min(" in dpx and "add_then_min(" not in dpx


def test_no_other_kernel_file_includes_a_missing_or_unknown_header():
    for path in KERNELS_DIR.glob("*.cu"):
        for name in re.findall(r'#\s*include\s*"([^"]+)"', path.read_text()):
            assert (KERNELS_DIR / name).is_file(), f"{path.name} includes {name}, which is not in kernels_cu/"


# ---- the digest covers the headers


@pytest.fixture
def kernel_with_header(tmp_path):
    """A kernel file in its own folder that includes a header that includes another."""
    (tmp_path / "inner.cuh").write_text("#define SMEM 128\n")
    (tmp_path / "outer.cuh").write_text('#include "inner.cuh"\n__device__ int twice(int a) { return 2 * a; }\n')
    cu = tmp_path / "k.cu"
    cu.write_text(
        '#include "outer.cuh"\n#include <cstdint>\n'
        'extern "C" __global__ void k(int* a)\n{\n    __shared__ int s[SMEM];\n'
        "    s[threadIdx.x] = twice(a[threadIdx.x]);\n    __syncthreads();\n    a[threadIdx.x] = s[SMEM - 1 - threadIdx.x];\n}\n"
    )
    return cu


def _edit(path, text):
    """Rewrite a file and move its modification time on, as an editor's save does."""
    stat = path.stat()
    path.write_text(text)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))


def test_included_headers_follow_nested_local_includes(kernel_with_header):
    folder = kernel_with_header.parent
    assert kernels.included_headers(kernel_with_header) == [folder / "outer.cuh", folder / "inner.cuh"]


def test_source_digest_changes_when_an_included_header_changes(kernel_with_header):
    folder = kernel_with_header.parent
    first = kernels.source_digest(kernel_with_header)
    assert kernels.source_digest(kernel_with_header) == first
    _edit(folder / "inner.cuh", "#define SMEM 256\n")
    second = kernels.source_digest(kernel_with_header)
    assert second != first, "a nested header's edit is seen, also by the remembered digest"
    (folder / "unrelated.cuh").write_text("#define NOT_INCLUDED 1\n")
    assert kernels.source_digest(kernel_with_header) == second, "a header the file does not include is not covered"


def test_the_repository_kernels_digest_covers_add_min(tmp_path):
    copy = tmp_path / "kernels_cu"
    shutil.copytree(KERNELS_DIR, copy)
    before = {name: kernels.source_digest(copy / name) for name in (*RELAXING, "fw_blocked.cu")}
    _edit(copy / "add_min.cuh", (copy / "add_min.cuh").read_text() + "// edited\n")
    after = {name: kernels.source_digest(copy / name) for name in before}
    assert all(after[name] != before[name] for name in RELAXING)
    assert after["fw_blocked.cu"] == before["fw_blocked.cu"]


# ---- both caches of load_module see a header's edit (a fake CuPy records what NVRTC is handed)


class _FakeRawModule:
    built: list = []

    def __init__(self, code: str, options: tuple):
        self.code, self.options = code, options
        _FakeRawModule.built.append(self)

    def compile(self):
        pass


@pytest.fixture
def fake_cupy(monkeypatch):
    fake = types.SimpleNamespace(
        RawModule=_FakeRawModule,
        cuda=types.SimpleNamespace(compiler=types.SimpleNamespace(CompileException=RuntimeError)),
    )
    monkeypatch.setattr("cudalab.core.gpu.require_cupy", lambda: fake)
    monkeypatch.setattr(kernels, "_modules", {})
    _FakeRawModule.built = []
    return _FakeRawModule


def test_load_module_recompiles_after_a_header_edit(fake_cupy, kernel_with_header):
    folder = kernel_with_header.parent
    first = kernels.load_module(kernel_with_header, ("-DX=1",))
    assert kernels.load_module(kernel_with_header, ("-DX=1",)) is first, "cached in this process"
    assert f"-I{folder}" in first.options, "NVRTC finds the headers beside the file"
    head, line, rest = first.code.split("\n", 2)
    assert kernels.source_digest(kernel_with_header) in head and head.startswith("//")
    assert line == f'#line 1 "{kernel_with_header}"', "diagnostics still name the file and its own lines"
    assert rest == kernel_with_header.read_text()

    _edit(folder / "inner.cuh", "#define SMEM 64\n")
    second = kernels.load_module(kernel_with_header, ("-DX=1",))
    assert second is not first, "the in-process cache keys on the headers too"
    assert second.code != first.code, "so does CuPy's disk cache, which keys on the text it is handed"
    assert len(fake_cupy.built) == 2


def test_nvrtc_error_in_a_header_names_the_header(monkeypatch, kernel_with_header):
    folder = kernel_with_header.parent
    log = f'{folder}/outer.cuh(2): error: identifier "nope" is undefined\n1 error detected in the compilation of "k.cu".\n'

    class Broken(_FakeRawModule):
        def compile(self):
            raise RuntimeError(log)

    fake = types.SimpleNamespace(
        RawModule=Broken, cuda=types.SimpleNamespace(compiler=types.SimpleNamespace(CompileException=RuntimeError))
    )
    monkeypatch.setattr("cudalab.core.gpu.require_cupy", lambda: fake)
    monkeypatch.setattr(kernels, "_modules", {})
    with pytest.raises(KernelCompileError) as err:
        kernels.load_module(kernel_with_header)
    assert (err.value.path, err.value.line) == (folder / "outer.cuh", 2)
    assert f"{folder / 'outer.cuh'}:2: identifier" in str(err.value)


def test_compile_error_keeps_the_kernel_file_for_its_own_lines(tmp_path):
    cu = tmp_path / "k.cu"
    cu.write_text("\n")
    err = kernels.compile_error(cu.resolve(), f"{cu}(7): error: expected a ;\n")
    assert (err.path, err.line) == (cu.resolve(), 7)
    relative = kernels.compile_error(cu.resolve(), "k.cu(3): error: expected a ;\n")
    assert (relative.path, relative.line) == (cu.resolve(), 3)


# ---- nvcc: includes resolve, errors in a header, ptxas reports cached per header version


@needs_nvcc
def test_nvcc_error_inside_a_header_names_the_header_and_line(tmp_path):
    from cudalab.toolchain.nvcc import nvcc_check

    (tmp_path / "broken.cuh").write_text("// a header\n__device__ int f(int a)\n{\n    return a + undefined_name;\n}\n")
    cu = tmp_path / "uses.cu"
    cu.write_text('#include "broken.cuh"\nextern "C" __global__ void k(int* a) { a[0] = f(a[0]); }\n')
    with pytest.raises(KernelCompileError) as err:
        nvcc_check(cu)
    assert (err.value.path, err.value.line) == ((tmp_path / "broken.cuh").resolve(), 4)
    assert "undefined_name" in str(err.value)


@needs_nvcc
def test_ptxas_reports_follow_a_header_edit(monkeypatch, tmp_path, kernel_with_header):
    from cudalab.toolchain.nvcc import kernel_resources_for

    monkeypatch.setenv("CUDALAB_CACHE_DIR", str(tmp_path / "cache"))
    assert kernel_resources_for(kernel_with_header, "sm_75")["k"].shared_bytes == 4 * 128
    _edit(kernel_with_header.parent / "inner.cuh", "#define SMEM 256\n")
    assert kernel_resources_for(kernel_with_header, "sm_75")["k"].shared_bytes == 4 * 256


# ---- the listing shows the header; provenance fingerprints it


def test_listing_shows_the_included_header_folded_inside():
    html = kernels.source_markdown("fw_blocked_minplus.cu").data
    summaries = re.findall(r"<summary>(.*?)</summary>", html)
    assert summaries[0].startswith("Listing: <code>kernels_cu/fw_blocked_minplus.cu</code>")
    assert summaries[1].startswith("Included: <code>kernels_cu/add_min.cuh</code>")
    assert html.index("Included:") > html.index("cudalab-listing-code"), "after the file's own code"
    assert html.endswith("</details></details>")
    plain = kernels.source_markdown("fw_basic_2d.cu").data
    assert "Included:" not in plain and plain.count("<details") == 1


def test_source_fingerprint_covers_the_kernel_headers(monkeypatch, tmp_path):
    from cudalab.core import provenance

    folder = tmp_path / "kernels_cu"
    shutil.copytree(KERNELS_DIR, folder)
    monkeypatch.setattr(provenance, "KERNELS_DIR", folder)
    before = provenance.source_fingerprint(None, {})["kernels"]
    _edit(folder / "add_min.cuh", (folder / "add_min.cuh").read_text() + "// edited\n")
    assert provenance.source_fingerprint(None, {})["kernels"] != before


# ---- code two kernels share is written once; a kernel's comments carry no measured result


def test_the_tiled_and_fixed_point_passes_share_their_shape_and_staging_through_one_header():
    header = KERNELS_DIR / "km_tile_staging.cuh"
    for name in ("km_04_tiled.cu", "km_05_fixed_point.cu"):
        assert header.resolve() in kernels.included_headers(name), name
    sources = sorted([*KERNELS_DIR.glob("*.cu"), *KERNELS_DIR.glob("*.cuh")])
    for definition in (r"\bvoid\s+stage_tile\s*\(", r"#\s*define\s+PITCH\b", r"#\s*define\s+OWNED\b"):
        defining = [p.name for p in sources if re.search(definition, _code(p))]
        assert defining == ["km_tile_staging.cuh"], (definition, defining)


# A number with a unit of time or rate: what a measurement says, not what a design says (a bare
# "s" is left out: kernel comments index by s, "8 s + t").
MEASURED = re.compile(
    r"\d(?:[\d,]*\.\d+|[\d,]*)\s*(?:ms|us|µs|ns|seconds?|GB/s|TB/s|MB/s|GFLOP/s|TFLOP/s|GFLOPS|TFLOPS)(?![\w/])"
)


def test_no_kernel_comment_states_a_measured_time_or_rate():
    """Handouts list the kernels in full: a header that logs a measurement ("0.387 ms against
    0.421") would hand the student the answer. Measurements live in docs/tuning-log.md."""
    found = []
    for path in sorted([*KERNELS_DIR.glob("*.cu"), *KERNELS_DIR.glob("*.cuh")]):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            comment = line.split("//", 1)[1] if "//" in line else ""
            found += [f"{path.name}:{number}: {m.group(0)}" for m in MEASURED.finditer(comment)]
    assert not found, found


def test_the_measured_pattern_finds_what_a_log_would_say():
    said = "0.387 ms against 0.421; 5 us of a 0.25 ms iteration; 3,350 GB/s; 50.7 TFLOP/s; 2 seconds"
    assert len(MEASURED.findall(said)) == 6
    assert not MEASURED.findall("8 x 8 cells, 16 MiB a pass, K = 32, sm_90, 2 x KT, 4 warps/SM")
