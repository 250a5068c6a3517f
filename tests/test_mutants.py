"""The grader's mutants (issue 65, item 6) hold what they claim, on the CPU: at least 15 mistakes
from at least four chapters, each a real edit of today's reference (never the reference itself,
never an edit that no longer applies), each compiling, so that a mutant is caught by what it gets
wrong and not by the compiler. tests/test_gpu_mutants.py grades them on a GPU."""

from __future__ import annotations

import pytest

from cudalab.core.paths import KERNELS_DIR
from cudalab.grading import plan
from cudalab.toolchain.nvcc import cuda_tool, nvcc_check
from tests import mutants as M


def test_at_least_fifteen_mutants_from_four_chapters_each_a_real_edit():
    found = M.load()
    measured = plan.measured_files()
    chapters = {c for m in found for c in measured.get(m.file, [])[:1]}
    assert len(found) >= 15, [m.name for m in found]
    assert len(chapters) >= 4, chapters
    assert len({m.name for m in found}) == len(found), "names are folders: unique"
    for m in found:
        assert m.file in measured, f"{m.name}: no chapter measures a student's {m.file}"
        assert m.source() != (KERNELS_DIR / m.file).read_text(), m.name


def test_an_edit_that_no_longer_applies_is_an_error_not_a_silent_copy(tmp_path):
    """Bug caught: a mutant whose edit text left the reference would be the reference itself, graded
    correct, and the suite would call the grader wrong (or, worse, pass with a weaker set)."""
    stale = M.Mutant("stale", "fw_blocked.cu", "x", (("no such text in the file", "y"),))
    with pytest.raises(ValueError, match="occurs 0 times"):
        stale.source()
    klass = M.materialize(tmp_path / "class", M.load()[:2])
    names = sorted(p.name for p in klass.iterdir())
    assert M.copy_name("fw_blocked.cu") in names and M.load()[0].name in names


@pytest.mark.skipif(cuda_tool("nvcc") is None, reason="nvcc is not installed here")
def test_every_mutant_compiles(tmp_path):
    for m in M.load():
        path = tmp_path / m.name / m.file
        path.parent.mkdir()
        path.write_text(m.source())
        for header in KERNELS_DIR.glob("*.cuh"):
            (path.parent / header.name).write_text(header.read_text())
        nvcc_check(path, "sm_90")  # raises KernelCompileError with the file's line where it does not
