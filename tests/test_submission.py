"""A student's submission is read as text and refused, file by file, before anything compiles:
only plain .cu/.cuh names, kernel files that stand in for a project file, and includes that stay
inside the submission and the project's headers (issue 43, item 4)."""

import os
import shutil

import pytest

from cudalab.core.errors import CudalabError
from cudalab.core.paths import KERNELS_DIR
from cudalab.grading import directives, submission
from cudalab.toolchain.nvcc import cuda_tool

# the tests that compile (seconds each): `make mutants` leaves them out with -k "not skipif"
needs_nvcc = pytest.mark.skipif(cuda_tool("nvcc") is None, reason="nvcc is not installed here")

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
    "include",
    [
        '#include "/etc/mine.cuh"',
        '#include "../mine.cuh"',
        '#include "../../student/mine.cuh"',
        '#include "./mine.cuh"',
        '#include "sub/mine.cuh"',
        '#include "sub\\mine.cuh"',
        '#include "C:\\mine.cuh"',
        '#include "/usr/include/add_min.cuh"',
        '#include "../add_min.cuh"',
        '#include_next "/etc/mine.cuh"',
        '#import "/etc/mine.cuh"',
        '#embed "../mine.cuh"',
        '#if __has_include("/etc/mine.cuh")\n#endif',
        '#/**/include "/etc/mine.cuh"',
    ],
)
def test_an_include_of_a_path_is_refused_even_where_its_base_name_is_the_students_own(tmp_path, include):
    """Issue 65, item 6, bug 3: an include accepted by its base name (``#include "/etc/mine.cuh"``
    passed the check because the folder holds mine.cuh, and the compiler would open /etc's). The
    name is matched whole, as the compiler reads it; a path is refused, whatever its last part."""
    folder = _folder(tmp_path, {"fw_blocked.cu": include + "\n" + GOOD, "mine.cuh": "#pragma once\n"})
    sub = submission.check(folder)
    assert not sub.ok and set(_reasons(sub)) == {"fw_blocked.cu"}, _reasons(sub)
    assert "names a path" in _reasons(sub)["fw_blocked.cu"], _reasons(sub)
    assert sub.headers == ["mine.cuh"], "the header itself is still accepted"


@pytest.mark.parametrize(
    "rest, own, project, refused",
    [
        ('"mine.cuh"', {"mine.cuh"}, set(), None),
        ('"add_min.cuh"', set(), {"add_min.cuh"}, None),
        ('"/etc/mine.cuh"', {"mine.cuh"}, set(), "names a path"),
        ('"x/add_min.cuh"', set(), {"add_min.cuh"}, "names a path"),
        ('"Mine.cuh"', {"mine.cuh"}, set(), "no such file"),
        ('"mine.cuh "', {"mine.cuh"}, set(), "no such file"),
        ('"mine"', {"mine.cuh"}, set(), "no such file"),
    ],
)
def test_a_quoted_include_is_matched_by_its_whole_name(rest, own, project, refused):
    """``include_problem`` on its own: a quoted name is one of the submission's own headers or the
    project's, byte for byte, or it is refused."""
    why = submission.include_problem(rest, own, project)
    if refused is None:
        assert why is None, why
    else:
        assert why is not None and refused in why, why


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


@needs_nvcc
def test_without_a_gpu_a_submission_compiles_beside_its_reference_and_a_compile_error_names_its_line(tmp_path):
    """Issue 43, item 2: nvcc (no GPU) builds the student's file and the project's for the
    architecture; the same code uses the same registers; a broken file is one row with the
    compiler's file:line under the submission's own file name, and the others still build."""
    import shutil

    from cudalab.toolchain import compile_only

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


def test_one_rule_picks_the_chapters_that_measure_each_kernel_file():
    """Every kernel file: the chapters that measure a student's copy are those whose declared points
    launch it (grading.plan.chapters_measuring), and a chapter whose handout asks for a file is one
    of them. fw_basic_2d.cu is launched by chapter 04's ladder point as well as by chapter 01, which
    asks for it: a rule reading the handouts alone gave 01."""
    from cudalab.chapter import catalog, declarations
    from cudalab.grading.plan import chapter_tasks, chapters_measuring

    launched: dict[str, set[str]] = {}
    for chapter in catalog.discover():
        for task in chapter_tasks(chapter.id):
            for name in task.files:
                launched.setdefault(name, set()).add(chapter.id)
    for kernel in sorted(p.name for p in KERNELS_DIR.glob("*.cu")):
        chapters = chapters_measuring([kernel])
        assert chapters == sorted(launched.get(kernel, ())), kernel
        asking = [c.id for c in catalog.discover() if kernel in declarations.of(c).handout.kernels]
        assert set(asking) <= set(chapters), f"{kernel}: a handout asks for it and its chapter does not measure it"
    assert chapters_measuring(["fw_basic_2d.cu"]) == [
        "01_block_size",
        "02_coalescing",
        "03_shared_memory",
        "04_blocking_factor",
    ]
    assert chapters_measuring(["fw_blocked.cu"]) == ["04_blocking_factor"]
    assert chapters_measuring(["read_stream.cu"]) == []  # chapter 00 measures no student's file
    for chapter in catalog.discover():
        for kernel in declarations.of(chapter).handout.kernels:
            assert (KERNELS_DIR / kernel).is_file(), f"{chapter.id} asks for {kernel}, which is no kernel file"


def test_a_build_with_a_students_kernels_takes_its_chapters_from_the_one_rule(tmp_path):
    """report.build.run with a submission and no chapters refuses, naming the rule, rather than
    picking chapters by another one."""
    from cudalab.core.errors import CudalabError
    from cudalab.report.build import run
    from cudalab.report.options import BuildOptions

    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "fw_basic_2d.cu").write_text((KERNELS_DIR / "fw_basic_2d.cu").read_text())
    with pytest.raises(CudalabError, match="chapters_measuring"):
        run("gtx680", BuildOptions(kernels=submission.check(folder), pdf=False), out=tmp_path / "out", log=print)
    with pytest.raises(CudalabError, match="reach a build checked"):  # a folder unread: the grading room reads it
        run("gtx680", BuildOptions(kernels=folder, only=("01",), pdf=False), out=tmp_path / "out", log=print)
    assert not (tmp_path / "out").exists(), "nothing written"


@needs_nvcc
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

    folder = _folder(tmp_path, {"fw_basic_2d.cu": (KERNELS_DIR / "fw_basic_2d.cu").read_text().replace(*change)})
    frame = compile_only.beside_reference(submission.check(folder), "sm_90")
    mine = frame[frame["source"].eq("yours")]
    assert list(mine["status"]) == ["does not fit the launch"], frame.to_string()
    reason = mine["reason"].iloc[0]
    assert says in reason and 'extern "C" __global__ void fw_basic_2d(int* mat, int k, int N)' in reason, reason


@needs_nvcc
def test_signatures_are_read_as_the_gpu_launches_them():
    """A parameter list built by a macro (vecMax's TRACE_PARAM) and nested launch bounds (the
    tensor k-means kernel) read as the compiler made them."""
    from cudalab.toolchain import compile_only

    vecmax = compile_only.entry_signatures(KERNELS_DIR / "vecmax_coalescing.cu", "sm_90")
    assert vecmax["vecmax00"] == ("u64", "u64", "u64", "u32")
    tensor = compile_only.entry_signatures(KERNELS_DIR / "km_07_tensor_scores.cu", "sm_90")
    assert list(tensor) == ["kmeans_tensor"] and len(tensor["kmeans_tensor"]) == 16
    assert tensor["kmeans_tensor"][-3:] == ("u64", "f32", "u32"), "the device loop's state, threshold and max_loop"


# ------------------------------------------------------------------------------ each reading, on its own
# file_references reads a source three ways and refuses what any reading finds, so a fault in one
# reading hides behind the others in the tests above; these pin each reading by itself (issue 65,
# item 6: the mutation tests' survivors, killed).


@pytest.fixture(autouse=True)
def _lexers_built_afresh(monkeypatch):
    """The lexers are built at import; build them again in every test, so that a fault in
    ``_tokens`` shows in these tests as it would in a fresh process."""
    monkeypatch.setattr(directives, "_MODERN", directives._tokens(False))
    monkeypatch.setattr(directives, "_OLD", directives._tokens(True))


@pytest.mark.parametrize(
    "text, modern, old",
    [
        ("a /* x */ b // y\nc", "a   b  \nc", "a   b  \nc"),
        ("a/**/b/*\n*/c//\nd", "a b c \nd", "a b c \nd"),
        ("a /* never closed\nb", "a  ", "a  "),
        ("x = \"/* a string */\"; y = '/'; // c", "x = \"/* a string */\"; y = '/';  ", None),
        ('s = "open /* \n/* c */ t', 's = "open /* \n  t', None),  # an unterminated quote ends at its line
        # raw strings: a /* inside starts nothing; a comment after one is a comment
        ('s = R"x( /* )" )x"; /* c */ t', 's = R"x( /* )" )x";   t', 's = R"x( /* )" )x"; /* c */ t'),
        ('R"(a)" /* c */ R"(b)"', 'R"(a)"   R"(b)"', None),
        ('s = "(a)"; r = R"(/*)"; /* c */ z', 's = "(a)"; r = R"(/*)";   z', None),
        ('a u8R"ab(x)ab"b /**/ c', 'a u8R"ab(x)ab"b   c', None),
        ('a LR"(x)"/**/b', 'a LR"(x)" b', None),
        ('a R"x( /* b', 'a R"x( /* b', None),  # unterminated: to the end
        ('fooR"(x)"/**/y', 'fooR"(x)" y', None),  # a name, then a raw string
        ('a = fooR"( " /* )" y */ z', 'a = fooR"( "   z', None),  # a name ending in R, then a string
        ('a = XR"( " /* )" y */ z', 'a = XR"( "   z', None),
        ('R"0123456789abcdef(x)0123456789abcdef"/**/y', 'R"0123456789abcdef(x)0123456789abcdef" y', None),
        # digit separators are C++14: the old rules read a character literal
        ("a = 1'2; /* ' */ b", "a = 1'2;   b", "a = 1'2; /* ' */ b"),
        ("a = 0x1'ffu; /* ' */ b", "a = 0x1'ffu;   b", "a = 0x1'ffu; /* ' */ b"),
        ("a = 0x1'FF; /* ' */ b", "a = 0x1'FF;   b", "a = 0x1'FF; /* ' */ b"),
        ("a = 1.5e+3f/**/b", "a = 1.5e+3f b", "a = 1.5e+3f b"),
        (".5'1 /* ' */", ".5'1  ", ".5'1 /* ' */"),
        # and know no raw strings: R"x(" is a name and a string
        ('R"x( " /* )x" y', 'R"x( " /* )x" y', 'R"x( "  '),
        # line ends of every kind, a byte-order mark, splices
        ("\ufeffa\r\nb\rc\\\n d\\ \t\ne", "a\nb\nc de", "a\nb\nc de"),
        ("#inc??/\nlude x", "#inc??/\nlude x", "#include x"),
        ("a ??/  \nb", "a ??/  \nb", "a b"),
    ],
)
def test_each_reading_makes_comments_spaces_as_its_compiler_reads_them(text, modern, old):
    assert directives.logical_text(text) == modern
    assert directives.logical_text(text, old_rules=True) == (modern if old is None else old)
    assert directives.logical_text(text, comments=False) == directives._LINE_ENDS.sub(
        "\n", text.removeprefix("\ufeff")
    ).replace("\\\n", "").replace("\\ \t\n", "")


def test_the_reading_that_keeps_comments_keeps_them():
    assert directives.logical_text("a /* c */ b // d", comments=False) == "a /* c */ b // d"
    assert directives.logical_text("a /* c */ b", old_rules=True, comments=False) == "a /* c */ b"
    assert directives.logical_text("x ??/\ny", old_rules=True, comments=False) == "x y"


@pytest.mark.parametrize(
    "text, found",
    [
        # only the old reading (trigraphs, no digit separators) sees these
        ('#inc??/\nlude "/etc/passwd"', [("include", '"/etc/passwd"')]),
        ("int a = 1'2; /* '\n#/**/include \"/etc/passwd\"\n", [("include", '"/etc/passwd"')]),
        # only the modern reading (raw strings, digit separators) sees these
        ('auto s = R"x( " /* )x";\n#/**/include "/etc/passwd"\n', [("include", '"/etc/passwd"')]),
        ('int a = 1\'2; const char* s = "\'/*";\n#/**/include "/etc/passwd"\n', [("include", '"/etc/passwd"')]),
        # only the reading that keeps comments sees this
        ('/*\n#include "/etc/passwd"\n*/', [("include", '"/etc/passwd"')]),
        # what follows a name on its line, comments made spaces, stripped
        ("#  include   /* c */ <cuda/std/cstdint>   // c", [("include", "<cuda/std/cstdint>")]),
        ('#include_next "a.cuh"', [("include_next", '"a.cuh"')]),
        ('%:import "a.cuh"\n??=embed <b>', [("import", '"a.cuh"'), ("embed", "<b>")]),
        ('#if __has_include ( "a.cuh" )', [("__has_include", '"a.cuh" )')]),
        ("#if __has_include_next(<a>) || __has_embed(<b>)", [("__has_include_next", "<a>) || __has_embed(<b>)")]),
        ("#if defined __has_include && X", [("__has_include", "&& X")]),
        ('#pragma GCC dependency "/etc/passwd"', [("pragma dependency", "")]),
        ('_Pragma("GCC dependency \\"x\\"")', [("pragma dependency", "")]),
        # a pragma whose dependency follows a raw string (the modern lexer reads the rest of its line)
        ('#pragma foo R"x( " /* )x" GCC dependency "/etc/passwd" // */', [("pragma dependency", "")]),
        ("#pragma unroll 4\n#pragma once", []),
        ("#define include x\nint includes;", []),
    ],
)
def test_every_place_that_names_a_file_is_found_with_what_follows_it(text, found):
    refs = directives.file_references(text)
    assert [(r.kind, r.rest) for r in refs] == found


def test_a_place_found_by_several_readings_is_listed_once_in_order():
    refs = directives.file_references('#include "b.cuh"\n#include "a.cuh"\n#include "b.cuh"\n')
    assert refs == [directives.FileReference("include", '"b.cuh"'), directives.FileReference("include", '"a.cuh"')]


# ------------------------------------------------------------------------------ submission: the words and edges


@pytest.mark.parametrize(
    "name, says",
    [
        ("", "an empty name"),
        (".", "an empty name"),
        ("..", "an empty name"),
        ("../x.cu", "the name '../x.cu' has path parts: submit plain file names"),
        ("sub\\x.cu", "the name 'sub\\\\x.cu' has path parts: submit plain file names"),
        ("/abs", "the name '/abs' has path parts: submit plain file names"),
        (".x.cu", "the name '.x.cu' is not a plain file name (letters, digits, '_', '-', '.')"),
        ("a b.cu", "the name 'a b.cu' is not a plain file name (letters, digits, '_', '-', '.')"),
        ("x.cpp", "x.cpp is not a .cu or .cuh file"),
        ("x.cu.txt", "x.cu.txt is not a .cu or .cuh file"),
    ],
)
def test_a_refused_name_says_why_in_its_own_words(name, says):
    assert submission.plain_name(name) == says


@pytest.mark.parametrize("name", ["fw_blocked.cu", "My_Header-2.cuh", "a+b.cuh", "X.CU.cu"])
def test_a_plain_name_is_accepted(name):
    assert submission.plain_name(name) is None


@pytest.mark.parametrize(
    "rest, kind, says",
    [
        ('"/etc/x"', "include", '#include "/etc/x" names a path: include only files'),
        ('"a\\b.cuh"', "include", '#include "a\\b.cuh" names a path'),
        ('".hidden.cuh"', "include", '#include ".hidden.cuh" names a path'),
        ('"nowhere.cuh"', "import", '#import "nowhere.cuh": no such file in the submission nor among'),
        ("</etc/x>", "embed", "#embed </etc/x> names a path outside the toolkit's headers"),
        ("<../x>", "include_next", "#include_next <../x> names a path outside the toolkit's headers"),
        ('"/etc/x")', "__has_include", '__has_include "/etc/x" names a path'),
        ("MACRO", "__has_embed", "a computed __has_embed (a macro, not a quoted or angled name) is refused"),
    ],
)
def test_a_refused_include_names_its_directive(rest, kind, says):
    assert submission.include_problem(rest, set(), {"add_min.cuh"}, kind).startswith(says)


def test_a_refused_include_says_include_by_default_and_its_directive_otherwise():
    assert submission.include_problem('"/x/y"', set(), set()).startswith('#include "/x/y"')
    ref = directives.FileReference("import", '"/x/y"')
    assert submission.reference_problem(ref, set(), set()).startswith('#import "/x/y"')
    dependency = directives.FileReference("pragma dependency", "")
    assert submission.reference_problem(dependency, set(), set()) == (
        "a GCC dependency pragma names a file of the machine: refused"
    )
    assert submission.include_problem("  <cuda/std/cstdint>  ", set(), set()) is None


def test_a_folder_named_like_a_kernel_file_is_refused_as_no_file(tmp_path):
    folder = _folder(tmp_path, {"mine.cuh": ""})
    (folder / "fw_blocked.cu").mkdir()
    assert _reasons(submission.check(folder)) == {"fw_blocked.cu": "fw_blocked.cu is not a file"}


def test_a_file_over_one_mib_is_refused_and_one_of_exactly_one_mib_is_read(tmp_path):
    folder = _folder(tmp_path, {})
    line = b"// padding\n"
    body = GOOD.replace('#include "mine.cuh"\n', "").encode()
    (folder / "fw_blocked.cu").write_bytes(body + line * ((submission.MAX_FILE_BYTES - len(body)) // len(line)))
    with (folder / "fw_blocked.cu").open("ab") as f:
        f.write(b"\n" * (submission.MAX_FILE_BYTES - (folder / "fw_blocked.cu").stat().st_size))
    assert (folder / "fw_blocked.cu").stat().st_size == submission.MAX_FILE_BYTES
    assert submission.check(folder).ok
    with (folder / "fw_blocked.cu").open("ab") as f:
        f.write(b"\n")
    assert _reasons(submission.check(folder)) == {"fw_blocked.cu": "fw_blocked.cu is over 1 MiB"}


def test_a_file_that_is_not_utf8_is_still_read_for_its_includes(tmp_path):
    """A comment in Latin-1 (or any bytes) never stops the check: the text is read with the bad
    bytes replaced, and an include after them is still found."""
    folder = tmp_path / "student"
    folder.mkdir()
    (folder / "fw_blocked.cu").write_bytes(
        b"// caf\xe9 \xff\xfe\n" + GOOD.replace('#include "mine.cuh"\n', "").encode()
    )
    assert submission.check(folder).ok
    (folder / "fw_blocked.cu").write_bytes(b'// caf\xe9\n#include "/etc/passwd"\n')
    assert "names a path" in _reasons(submission.check(folder))["fw_blocked.cu"]


def test_a_header_refused_through_a_chain_refuses_everything_that_includes_it(tmp_path):
    """A refused header refuses what includes it, through any number of headers and whatever order
    the files sort in (a_bad.cuh sorts before the files that reach it)."""
    folder = _folder(
        tmp_path,
        {
            "a_bad.cuh": '#include "/etc/passwd"\n',
            "fw_blocked.cu": '#include "z_mid.cuh"\n',
            "m_ok.cuh": "#pragma once\n",
            "z_mid.cuh": '#include "a_bad.cuh"\n#include "m_ok.cuh"\n',
        },
    )
    sub = submission.check(folder)
    assert set(_reasons(sub)) == {"a_bad.cuh", "fw_blocked.cu", "z_mid.cuh"}
    assert (
        _reasons(sub)["z_mid.cuh"]
        == '#include "a_bad.cuh": no such file in the submission nor among the project\'s kernel headers'
    )
    assert sub.headers == ["m_ok.cuh"] and not sub.kernels and not sub.ok


def test_what_check_returns_names_its_folder_and_each_refusal_whole(tmp_path):
    missing = tmp_path / "none"
    assert submission.check(missing).refused == [submission.Refusal(str(missing), "not a folder")]
    assert submission.check(missing).folder == missing
    empty = _folder(tmp_path, {"mine.cuh": ""})
    sub = submission.check(empty)
    assert sub.folder == empty and sub.headers == ["mine.cuh"] and not sub.ok
    assert sub.refused == [submission.Refusal(str(empty), "no .cu file named like one of the project's kernel files")]


# ------------------------------------------------------------------------------ stage


def test_stage_copies_what_was_accepted_and_the_project_headers_it_did_not_bring(tmp_path):
    folder = _folder(
        tmp_path,
        {"fw_blocked.cu": GOOD, "mine.cuh": "// mine\n", "add_min.cuh": "// the student's own\n", "notes.txt": "x"},
    )
    sub = submission.check(folder)
    dest = submission.stage(sub, tmp_path / "out" / "staged")
    assert dest == tmp_path / "out" / "staged"
    project = {p.name for p in KERNELS_DIR.glob("*.cuh")}
    assert {p.name for p in dest.iterdir()} == {"fw_blocked.cu", "mine.cuh", submission.STAGED_MARK} | project
    assert (dest / "add_min.cuh").read_text() == "// the student's own\n", "a student's header is never replaced"
    assert (dest / "fw_blocked.cu").read_text() == GOOD and (dest / "mine.cuh").read_text() == "// mine\n"
    others = project - {"add_min.cuh"}
    assert all((dest / h).read_bytes() == (KERNELS_DIR / h).read_bytes() for h in others)
    assert (dest / submission.STAGED_MARK).read_text().startswith("a copy of a submission, made by cudalab")
    assert sorted(p.name for p in folder.iterdir()) == ["add_min.cuh", "fw_blocked.cu", "mine.cuh", "notes.txt"]


def test_stage_again_replaces_its_own_copy_and_nothing_else(tmp_path):
    folder = _folder(tmp_path, {"fw_blocked.cu": GOOD, "mine.cuh": ""})
    dest = submission.stage(submission.check(folder), tmp_path / "staged")
    (dest / "left_over.cu").write_text("from an earlier run")
    submission.stage(submission.check(folder), dest)
    assert not (dest / "left_over.cu").exists() and (dest / "fw_blocked.cu").is_file()
    foreign = tmp_path / "someone_elses"
    foreign.mkdir()
    (foreign / "keep.txt").write_text("theirs")
    with pytest.raises(CudalabError, match="exists and was not staged by cudalab: choose another output folder"):
        submission.stage(submission.check(folder), foreign)
    assert (foreign / "keep.txt").read_text() == "theirs"


@pytest.mark.parametrize("where", [".", "staged_here_never", "deeper/still"])
def test_stage_never_writes_into_the_kernels_folder(tmp_path, where):
    folder = _folder(tmp_path, {"fw_blocked.cu": GOOD, "mine.cuh": ""})
    dest = KERNELS_DIR / where
    before = sorted(p.name for p in KERNELS_DIR.iterdir())
    try:
        with pytest.raises(CudalabError) as refused:
            submission.stage(submission.check(folder), dest)
    finally:
        if where != "." and (KERNELS_DIR / where.split("/")[0]).exists():  # only a broken stage made it
            shutil.rmtree(KERNELS_DIR / where.split("/")[0])
    assert sorted(p.name for p in KERNELS_DIR.iterdir()) == before
    assert str(refused.value) == ("a submission is staged outside kernels_cu/ (the reference files are never replaced)")


def test_what_is_staged_is_the_bytes_that_were_checked(tmp_path):
    """Bug: the check reads a file, the hash reads it again and the staging copies it a third time
    from the student's folder, so a file changed in between (an include of a file of the machine put
    in after the check) is compiled unchecked. Each file is read once: the staged copy is what was
    checked and hashed, whatever the folder holds by then."""
    import hashlib

    folder = tmp_path / "mine"
    folder.mkdir()
    clean = (KERNELS_DIR / "fw_blocked.cu").read_bytes()
    (folder / "fw_blocked.cu").write_bytes(clean)
    sub = submission.check(folder)
    assert sub.ok and sub.sha256["fw_blocked.cu"] == hashlib.sha256(clean).hexdigest()
    (folder / "fw_blocked.cu").write_bytes(b'#include "/etc/passwd"\n' + clean)  # swapped after the check
    staged = submission.stage(sub, tmp_path / "staged")
    assert (staged / "fw_blocked.cu").read_bytes() == clean


def test_a_file_swapped_for_a_link_is_refused_when_read(tmp_path, monkeypatch):
    """Bug: a file checked as a plain file, then replaced by a link before it is read, read through
    the link. The one read opens it without following links."""
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "fw_blocked.cu").write_bytes((KERNELS_DIR / "fw_blocked.cu").read_bytes())
    real = submission._file_problem

    def swapped(path, kernels_dir):
        why = real(path, kernels_dir)
        path.unlink()
        path.symlink_to("/etc/hostname")
        return why

    monkeypatch.setattr(submission, "_file_problem", swapped)
    sub = submission.check(folder)
    assert not sub.kernels and [r.name for r in sub.refused] == ["fw_blocked.cu"]
    assert sub.refused[0].reason.startswith("fw_blocked.cu cannot be read")


def test_a_file_is_read_at_most_one_byte_past_its_limit(tmp_path, monkeypatch):
    """Bugs: a file read whole before its size is judged (a file grown after its listing fills the
    grader's memory), one byte too few read (a file of exactly the limit taken as over it, or one
    byte over it taken whole), or the limit said in other units. The limit is 1 MiB here."""
    import os

    monkeypatch.setattr(submission, "MAX_FILE_BYTES", 1 << 20)
    asked = []
    real = os.fdopen

    def spying(fd, mode="r", *args, **kwargs):
        f = real(fd, mode, *args, **kwargs)
        read = f.read
        f.read = lambda size=-1: asked.append(size) or read(size)
        return f

    monkeypatch.setattr(os, "fdopen", spying)
    folder = tmp_path / "mine"
    folder.mkdir()
    body = b"// " + b"x" * ((1 << 20) - 4) + b"\n"
    assert len(body) == 1 << 20
    (folder / "fw_blocked.cu").write_bytes(body)
    sub = submission.check(folder)
    assert sub.ok and sub.data["fw_blocked.cu"] == body, "a file of exactly the limit is taken whole"
    assert asked == [(1 << 20) + 1], "read at most one byte past the limit"
    (folder / "fw_blocked.cu").write_bytes(body + b"/")
    sub = submission.check(folder)
    assert [(r.name, r.reason) for r in sub.refused] == [("fw_blocked.cu", "fw_blocked.cu is over 1 MiB")]


def test_a_checked_submission_stages_itself(tmp_path):
    """``Submission.stage``, which a build calls (report.options.StudentFiles), writes what
    ``stage`` writes: the checked bytes and the project's headers."""
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "fw_blocked.cu").write_bytes((KERNELS_DIR / "fw_blocked.cu").read_bytes())
    sub = submission.check(folder)
    staged = sub.stage(tmp_path / "staged")
    assert staged == tmp_path / "staged"
    assert (staged / "fw_blocked.cu").read_bytes() == sub.data["fw_blocked.cu"]
    assert {p.name for p in KERNELS_DIR.glob("*.cuh")} <= {p.name for p in staged.iterdir()}
