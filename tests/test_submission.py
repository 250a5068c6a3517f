"""A student's submission is read as text and refused, file by file, before anything compiles:
only plain .cu/.cuh names, kernel files that stand in for a project file, and includes that stay
inside the submission and the project's headers (issue 43, item 4)."""

import os

import pytest

from cudalab.core import submission
from cudalab.core.paths import KERNELS_DIR

GOOD = '#include "add_min.cuh"\n#include <cuda_fp16.h>\n#include "mine.cuh"\nextern "C" __global__ void k() {}\n'


def _folder(tmp_path, files: dict[str, str]):
    folder = tmp_path / "student"
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text)
    return folder


def _reasons(sub) -> dict[str, str]:
    return {r.name: r.reason for r in sub.refused}


def test_a_kernel_named_as_a_project_file_with_its_own_header_is_accepted_with_sha256s(tmp_path):
    folder = _folder(tmp_path, {"fw_blocked.cu": GOOD, "mine.cuh": "#pragma once\n"})
    sub = submission.check(folder)
    assert sub.ok and sub.kernels == {"fw_blocked.cu": KERNELS_DIR / "fw_blocked.cu"}
    assert sub.headers == ["mine.cuh"] and set(sub.sha256) == {"fw_blocked.cu", "mine.cuh"}
    assert all(len(h) == 64 for h in sub.sha256.values())


@pytest.mark.parametrize(
    "include, says",
    [
        ('#include "/etc/passwd"', "names a path"),
        ('#include "../../secret.cuh"', "names a path"),
        ('#include "sub/x.cuh"', "names a path"),
        ('#include "nowhere.cuh"', "no such file"),
        ("#include </etc/passwd>", "outside the toolkit"),
        ("#include <cuda/../../../etc/passwd>", "outside the toolkit"),
        ("#define F </etc/passwd>\n#include F", "computed #include"),
        ('%:include "/etc/passwd"', "names a path"),  # a digraph of #
        ('#inc\\\nlude "/etc/passwd"', "names a path"),  # a spliced line
        ('#include_next "/etc/passwd"', "names a path"),
        # the same include as the preprocessor reads it: comments are spaces, splices may have blanks
        ('#/**/include "/etc/passwd"', "names a path"),
        ('# /* a comment\n over two lines */ include "/etc/passwd"', "names a path"),
        ('#inc\\ \nlude "/etc/passwd"', "names a path"),  # GCC splices a backslash, blanks, a newline
        ('#inc\\\r\nlude "/etc/passwd"', "names a path"),  # a Windows line end
        ('x;\r#include "/etc/passwd"', "names a path"),  # a lone CR ends a line too
        ('\ufeff#include "/etc/passwd"', "names a path"),  # after a byte-order mark
        ('#\finclude "/etc/passwd"', "names a path"),
        # a /* inside a literal starts no comment, so it hides no line
        ('int a = 1\'2; const char *s = "\'/*";\n#include "/etc/passwd"\n// */', "names a path"),
        ('auto s = u8R"x( /* )" )x";\n#include "/etc/passwd"\n// */', "names a path"),
        ('// ??/\n#include "/etc/passwd"', "names a path"),  # a trigraph splice, where honoured
        # other ways to open a file, or to ask whether one exists
        ('#import "/etc/passwd"', "names a path"),
        ('#embed "/etc/passwd"', "names a path"),
        ('#if __has_include("/etc/shadow")\n#error it exists\n#endif', "names a path"),
        ("#if __has_include(</etc/shadow>)\n#endif", "outside the toolkit"),
        ('#pragma GCC dependency "/etc/passwd"', "dependency pragma"),
        ('_Pragma("GCC dependency \\"/etc/passwd\\"")', "dependency pragma"),
    ],
)
def test_an_include_that_reaches_outside_the_submission_is_refused_before_compiling(tmp_path, include, says):
    folder = _folder(tmp_path, {"fw_blocked.cu": include + "\n" + GOOD, "mine.cuh": ""})
    sub = submission.check(folder)
    assert not sub.ok and "fw_blocked.cu" in _reasons(sub), sub
    assert says in _reasons(sub)["fw_blocked.cu"]
    assert "root:" not in _reasons(sub)["fw_blocked.cu"], "no file of the machine is ever printed"


@pytest.mark.parametrize(
    "text",
    [
        '// #include "/etc/passwd" in a line comment\n',
        'const char *s = "#include \\"/etc/passwd\\"";\n',
        '#include /* the project\'s */ "add_min.cuh" // and a comment\n',
        "#if __has_include(<cuda_fp16.h>)\n#include <cuda_fp16.h>\n#endif\n",
        "#pragma unroll\nint n = 1'000'000;\n",
        "#pragma unroll // no dependency between the steps\n",
    ],
)
def test_what_names_no_file_of_the_machine_is_accepted(tmp_path, text):
    folder = _folder(tmp_path, {"fw_blocked.cu": text + GOOD, "mine.cuh": ""})
    sub = submission.check(folder)
    assert sub.ok, _reasons(sub)


def test_every_kernel_file_of_the_project_passes_as_a_submission(tmp_path):
    """The project's own kernels and headers, submitted as they are: none is refused."""
    folder = tmp_path / "student"
    folder.mkdir()
    for path in [*KERNELS_DIR.glob("*.cu"), *KERNELS_DIR.glob("*.cuh")]:
        (folder / path.name).write_bytes(path.read_bytes())
    sub = submission.check(folder)
    assert sub.ok and not sub.refused and len(sub.kernels) == len(list(KERNELS_DIR.glob("*.cu")))


def test_a_header_that_reaches_outside_refuses_what_includes_it(tmp_path):
    folder = _folder(tmp_path, {"fw_blocked.cu": GOOD, "mine.cuh": '#include "/etc/passwd"\n'})
    reasons = _reasons(submission.check(folder))
    assert "names a path" in reasons["mine.cuh"] and "mine.cuh" in reasons["fw_blocked.cu"]


@pytest.mark.parametrize(
    "name, says",
    [
        ("notes.txt", "not a .cu or .cuh file"),
        ("kernel.py", "not a .cu or .cuh file"),
        ("my_own_idea.cu", "replaces no kernel file"),
        (".hidden.cu", "not a plain file name"),
        ("spaced name.cu", "not a plain file name"),
    ],
)
def test_files_that_are_not_kernels_of_the_project_are_refused(tmp_path, name, says):
    folder = _folder(tmp_path, {"fw_blocked.cu": GOOD.replace('#include "mine.cuh"\n', ""), name: "x"})
    reasons = _reasons(submission.check(folder))
    assert says in reasons[name] and "fw_blocked.cu" not in reasons


@pytest.mark.parametrize("name", ["../x.cu", "/abs/fw_blocked.cu", "sub\\fw_blocked.cu", "..", ""])
def test_a_name_with_path_parts_is_refused(name):
    assert submission.plain_name(name) is not None


def test_a_link_is_refused_even_to_a_kernel_file(tmp_path):
    folder = _folder(tmp_path, {})
    os.symlink("/etc/hostname", folder / "fw_blocked.cu")
    reasons = _reasons(submission.check(folder))
    assert "is a link" in reasons["fw_blocked.cu"]


def test_an_empty_or_missing_folder_says_so(tmp_path):
    assert not submission.check(tmp_path / "none").ok
    empty = _folder(tmp_path, {})
    assert "no .cu file" in submission.check(empty).refused[0].reason


def test_without_a_gpu_a_submission_compiles_beside_its_reference_and_a_compile_error_names_its_line(tmp_path):
    """Issue 43, item 2: nvcc (no GPU) builds the student's file and the project's for the
    architecture; the same code uses the same registers; a broken file is one row with the
    compiler's file:line under the submission's own file name, and the others still build."""
    import shutil

    from cudalab.toolchain import compile_only
    from cudalab.toolchain.nvcc import cuda_tool

    if cuda_tool("nvcc") is None:
        pytest.skip("nvcc is not installed here")
    folder = _folder(tmp_path, {})
    shutil.copy(KERNELS_DIR / "fw_basic_2d.cu", folder)
    broken = (KERNELS_DIR / "fw_coalesced.cu").read_text().splitlines()
    line = next(i for i, text in enumerate(broken, 1) if "__global__" in text) + 2
    broken.insert(line - 1, "    int oops = ;")
    (folder / "fw_coalesced.cu").write_text("\n".join(broken) + "\n")
    frame = compile_only.beside_reference(submission.check(folder), "sm_90")
    basic = frame[frame["file"].eq("fw_basic_2d.cu")].set_index("source")
    assert basic.loc["yours", "registers_per_thread"] == basic.loc["reference", "registers_per_thread"]
    assert (basic["status"] == "ok").all()
    mine = frame[frame["file"].eq("fw_coalesced.cu") & frame["source"].eq("yours")]
    assert list(mine["status"]) == ["does not compile"]
    assert mine["reason"].iloc[0].startswith(f"fw_coalesced.cu:{line}:"), mine["reason"].iloc[0]
    assert str(tmp_path) not in mine["reason"].iloc[0], "no path of the machine in the message"
    ref = frame[frame["file"].eq("fw_coalesced.cu") & frame["source"].eq("reference")]
    assert (ref["status"] == "ok").all() and len(ref) >= 1


def test_each_students_kernel_file_belongs_to_the_chapters_that_ask_for_it():
    """The chapters a submitted file touches are those whose handout asks the student for it."""
    from cudalab.chapter import catalog, declarations

    assert declarations.chapters_for_kernel("fw_blocked.cu") == ["04_blocking_factor"]
    assert declarations.chapters_for_kernel("km_01_device_update.cu") == ["06_kmeans_device_update"]
    assert declarations.chapters_for_kernel("km_07_tensor_scores.cu") == []  # ours, not a student's
    for chapter in catalog.discover():
        for kernel in declarations.of(chapter).handout.kernels:
            assert (KERNELS_DIR / kernel).is_file(), f"{chapter.id} asks for {kernel}, which is no kernel file"


@pytest.mark.parametrize(
    "change, says",
    [
        (("int* mat, int k, int N", "int* mat, int k, long long N"), "of other types than the chapter's launch"),
        (("fw_basic_2d(", "my_basic("), "defines no kernel fw_basic_2d"),
    ],
)
def test_a_kernel_that_does_not_fit_the_chapters_launch_gets_one_message_naming_the_signature(tmp_path, change, says):
    """Issue 43, item 1: compared as the GPU launches them (the PTX parameter types, macros and
    launch bounds expanded), a kernel with other parameters or another name is refused in one
    message that names the expected signature, before it is ever timed."""
    from cudalab.toolchain import compile_only
    from cudalab.toolchain.nvcc import cuda_tool

    if cuda_tool("nvcc") is None:
        pytest.skip("nvcc is not installed here")
    folder = _folder(tmp_path, {"fw_basic_2d.cu": (KERNELS_DIR / "fw_basic_2d.cu").read_text().replace(*change)})
    frame = compile_only.beside_reference(submission.check(folder), "sm_90")
    mine = frame[frame["source"].eq("yours")]
    assert list(mine["status"]) == ["does not fit the launch"], frame.to_string()
    reason = mine["reason"].iloc[0]
    assert says in reason and 'extern "C" __global__ void fw_basic_2d(int* mat, int k, int N)' in reason, reason


def test_signatures_are_read_as_the_gpu_launches_them():
    """A parameter list built by a macro (vecMax's TRACE_PARAM) and nested launch bounds (the
    tensor k-means kernel) read as the compiler made them."""
    from cudalab.toolchain import compile_only
    from cudalab.toolchain.nvcc import cuda_tool

    if cuda_tool("nvcc") is None:
        pytest.skip("nvcc is not installed here")
    vecmax = compile_only.entry_signatures(KERNELS_DIR / "vecmax_coalescing.cu", "sm_90")
    assert vecmax["vecmax00"] == ("u64", "u64", "u64", "u32")
    tensor = compile_only.entry_signatures(KERNELS_DIR / "km_07_tensor_scores.cu", "sm_90")
    assert list(tensor) == ["kmeans_tensor"] and len(tensor["kmeans_tensor"]) == 16
    assert tensor["kmeans_tensor"][-3:] == ("u64", "f32", "u32"), "the device loop's state, threshold and max_loop"
