"""Compile-only numbers are the graded build's (issue 65, item 10): without a GPU, a student's kernel
file is compiled at each point a chapter grades it at, with that point's own build options, for the
GPU the profile is sized for; SASS counts come from the cuobjdump NVIDIA's wheel installs where the
toolkit has none; and a kernel whose parameters are declared with other types than the chapter's
launch passes does not fit it. Each test names the bug it catches."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from cudalab.chapter import catalog
from cudalab.chapter.profiles import available_profiles, load_profile
from cudalab.core.occupancy import occupancy
from cudalab.core.paths import KERNELS_DIR, PARAMS_DIR
from cudalab.grading import plan, section, series, submission
from cudalab.toolchain import compile_only
from cudalab.toolchain.nvcc import cuda_tool, nvcc_check

needs_nvcc = pytest.mark.skipif(cuda_tool("nvcc") is None, reason="nvcc is not installed here")
BF32 = {"n": 3000, "block_factor": 32, "kernel": "shared"}  # chapter 04's first graded point


def _staged(tmp_path: Path, files: dict[str, str]) -> Path:
    folder = tmp_path / "mine"
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text)
    return folder


def _task(chapter: str, file: str) -> plan.ChapterTask:
    """The first group of ``chapter`` that grades ``file`` (04's fw_blocked.cu: its shared kernel; the
    ladder's is the next)."""
    return [t for t in plan.chapter_tasks(chapter, [file]) if file in t.files][0]


def test_every_graded_point_lists_its_launches_without_a_gpu():
    """Bug: a point whose launches (and so its build options) cannot be known without a GPU is
    compiled with its file's defaults. Every chapter's graded point lists at least one launch of the
    file it grades, on the profile's GPU."""
    for info in catalog.discover():
        for task in plan.chapter_tasks(info.id):
            for point, file in task.points:
                launches = series.point_launches(task.yours, point, "9.0")
                assert any(Path(x.file).name == file for x in launches), (info.id, point, file)


def test_chapter_04s_bf_32_point_is_built_with_its_own_blocking_factor():
    """Bug: the BF 32 point compiled as fw_blocked.cu builds by default (BF 64)."""
    builds = section.point_builds([_task("04_blocking_factor", "fw_blocked.cu")], "7.5")["fw_blocked.cu"]
    at = next(b for b in builds if b.point == plan.point_label(BF32))
    assert at.builds("fw_blocked.cu") == [
        (("-DBF=32",), ["fw_blocked_phase1", "fw_blocked_phase2", "fw_blocked_phase3"])
    ]


@needs_nvcc
def test_compiled_only_registers_and_occupancy_are_the_points_build(tmp_path):
    """Bug: registers and occupancy taken from the file's default build (BF 64: 45/32/20 registers
    on sm_75 at the time of issue 65) instead of the point's -DBF=32 (30/18/14). The section's rows
    at the BF 32 point carry the registers of the -DBF=32 build, the student's beside the
    reference's, and its occupancy is computed at the point's launches (threads, dynamic shared
    memory) with those registers."""
    staged = _staged(tmp_path, {"fw_blocked.cu": (KERNELS_DIR / "fw_blocked.cu").read_text()})
    tasks = [_task("04_blocking_factor", "fw_blocked.cu")]
    points = section.point_builds(tasks, "7.5")
    frame = section.compiled(["fw_blocked.cu"], staged, "sm_75", points)
    label = plan.point_label(BF32)
    at = frame[frame["point"].eq(label)]
    assert set(at["status"]) == {"ok"} and set(at["options"]) == {"-DBF=32"}, frame.to_string()
    want = {u.kernel: u.registers for u in nvcc_check("fw_blocked.cu", "sm_75", ["-DBF=32"])}
    default = {u.kernel: u.registers for u in nvcc_check("fw_blocked.cu", "sm_75")}
    assert want != default, "the point's build differs from the file's default"
    for source in ("reference", "yours"):
        got = at[at["source"].eq(source)].set_index("kernel")["registers_per_thread"].to_dict()
        assert got == want, (source, got, want)
    occ = section.occupancy_at_points(frame, points, "7.5")
    (launch,) = [x for b in points["fw_blocked.cu"] for x in b.launches if x.kernel == "fw_blocked_phase3"]
    row = occ[occ["point"].eq(label) & occ["kernel"].eq("fw_blocked_phase3") & occ["source"].eq("yours")].iloc[0]
    expected = occupancy("7.5", launch.threads, want["fw_blocked_phase3"], 0, launch.dynamic_shared_bytes)
    assert row["registers_per_thread"] == want["fw_blocked_phase3"]
    assert row["occupancy_fraction"] == expected["occupancy"]
    assert row["dynamic_shared_bytes"] == launch.dynamic_shared_bytes > 0


def test_every_profile_names_the_gpu_it_is_sized_for():
    """Bug: a profile names no GPU of its own (h100 did not), so that without a GPU `--gpu h100`
    compiled for the lab GPU it extends (the GTX 680's cc 3.0, built for sm_75) instead of the
    H100's sm_90. Each file in params/ names its GPU's compute capability itself."""
    for name in available_profiles():
        raw = yaml.safe_load((PARAMS_DIR / f"{name}.yaml").read_text())
        assert "compute_capability" in (raw.get("gpu") or {}), f"params/{name}.yaml names no gpu"
        assert load_profile(name).sized_for() is not None
    assert load_profile("h100").sized_for().compute_capability == "9.0"
    assert load_profile("h200").sized_for().compute_capability == "9.0"
    assert load_profile("gtx680").sized_for().compute_capability == "3.0"


def test_a_students_build_without_a_gpu_compiles_for_the_profiles_gpu():
    """Bug: the section compiled for the profile's lab GPU (``device``), not the one it is sized
    for: h100's build used the GTX 680's compute capability."""
    lab = SimpleNamespace(profile=load_profile("h100"))
    assert section._cc(lab) == "9.0"
    if cuda_tool("nvcc") is not None:
        assert section._arch(lab) == "sm_90"


def test_a_gpu_named_with_an_unknown_compute_capability_is_refused(tmp_path):
    """Bug: a profile's GPU given as "5.x" accepted, then compiled for "sm_5.x" (nvcc refuses)."""
    from cudalab.core.errors import ProfileError

    bad = tmp_path / "mine.yaml"
    bad.write_text('extends: h100\ngpu: {name: a Maxwell, compute_capability: "5.x"}\n')
    with pytest.raises(ProfileError, match="5.x"):
        load_profile(str(bad))


@needs_nvcc
def test_sass_counts_come_from_the_wheels_cuobjdump_where_the_toolkit_has_none(tmp_path, monkeypatch):
    """Bug: SASS counts silently absent where the toolkit has no cuobjdump, though the
    nvidia-cuda-cuobjdump wheel installs one; and, where there is none at all, the section not
    saying why."""
    wheel = compile_only._wheel_tool("cuobjdump")
    if wheel is None:
        pytest.skip("the nvidia-cuda-cuobjdump wheel is not installed here")
    real = compile_only.cuda_tool
    monkeypatch.setattr(
        compile_only, "cuda_tool", lambda name: None if name in ("cuobjdump", "nvdisasm") else real(name)
    )
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # nvdisasm only beside the wheel's cuobjdump
    compile_only.sass_tool.cache_clear()
    try:
        assert compile_only.sass_tool() == str(wheel) and compile_only.sass_unavailable() == ""
        staged = _staged(tmp_path, {"fw_basic_2d.cu": (KERNELS_DIR / "fw_basic_2d.cu").read_text()})
        frame = compile_only.beside_reference(submission.check(staged), "sm_90")
        assert (frame["sass_instructions"] > 0).all(), frame.to_string()
        monkeypatch.setattr(compile_only, "_wheel_tool", lambda name: None)
        compile_only.sass_tool.cache_clear()
        assert "cuobjdump is not installed here" in compile_only.sass_unavailable()
    finally:
        compile_only.sass_tool.cache_clear()


@needs_nvcc
@pytest.mark.parametrize(
    "file, change, fits, says",
    [
        (
            "fw_basic_2d.cu",
            ("int* mat", "float* mat"),
            False,
            "takes (float*, int, int) where the chapter's launch passes (int*, int, int)",
        ),
        (
            "vecmax_coalescing.cu",
            ("void vecmax00(const float* a", "void vecmax00(const int* a"),
            False,
            "takes (int const*,",
        ),
        ("vecmax_coalescing.cu", ("void vecmax00(const float* a", "void vecmax00(float* __restrict__ a"), True, ""),
        ("fw_basic_2d.cu", ("int k, int N", "unsigned k, int N"), False, "takes (int*, unsigned int, int)"),
    ],
)
def test_a_kernel_declared_with_other_parameter_types_does_not_fit_the_launch(tmp_path, file, change, fits, says):
    """Bug: parameters compared as the GPU passes them only (their count and PTX width), so that a
    kernel taking ``float*`` where the chapter passes ``int*`` (both a 64-bit address) was measured
    and called wrong, or, worse, right. Declared C++ types are compared, const, volatile and
    restrict aside (they change nothing the launch passes)."""
    text = (KERNELS_DIR / file).read_text()
    assert change[0] in text
    staged = _staged(tmp_path, {file: text.replace(change[0], change[1], 1)})
    frame = compile_only.beside_reference(submission.check(staged), "sm_90")
    mine = frame[frame["source"].eq("yours")]
    if fits:
        assert set(mine["status"]) == {"ok"}, mine.to_string()
        return
    assert list(mine["status"]) == ["does not fit the launch"], mine.to_string()
    assert says in mine["reason"].iloc[0] and "it expects" in mine["reason"].iloc[0], mine["reason"].iloc[0]


@needs_nvcc
def test_a_misfit_is_found_at_the_points_own_build_before_anything_runs(tmp_path):
    """Bug: the measured build's signature check compiled the file with its defaults, so a kernel
    declared otherwise only under the point's options (``#if BF == 32``) reached the GPU."""
    text = (KERNELS_DIR / "fw_blocked.cu").read_text()
    declared = 'extern "C" __global__ void fw_blocked_phase3(int* d,'
    assert declared in text
    retyped = "#if BF == 32\n#define CUDALAB_T float\n#else\n#define CUDALAB_T int\n#endif\n" + declared.replace(
        "int* d", "CUDALAB_T* d"
    )
    staged = _staged(tmp_path, {"fw_blocked.cu": text.replace(declared, retyped)})
    default = compile_only.signature_problems(KERNELS_DIR / "fw_blocked.cu", staged / "fw_blocked.cu", "sm_90", ())
    assert default == [], "as the file builds by default, it fits"
    misfits = section._misfits(_task("04_blocking_factor", "fw_blocked.cu"), staged)
    assert misfits["fw_blocked.cu"]["status"] == "does not fit the launch", misfits
    assert "takes (float*, int, int)" in misfits["fw_blocked.cu"]["reason"]


def test_a_point_without_launches_builds_the_file_with_its_defaults():
    """Bug: a point whose recipe lists no launches dropped from the compiled rows; it must still
    build the file, with its defaults and every kernel shown."""
    assert compile_only.PointBuild("n=1").builds("x.cu") == [((), None)]
