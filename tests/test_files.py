"""core.files: files written whole, and readable by others as any file the user writes."""

import os
import stat

import pytest

from cudalab.core.files import atomic_write_text


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_a_new_file_gets_the_mode_of_a_plain_open_not_the_private_temporary_one(tmp_path, umask_022):
    out = atomic_write_text(tmp_path / "report.html", "<p>handout</p>")
    assert stat.S_IMODE(out.stat().st_mode) == 0o644  # 0666 less the umask, not mkstemp's 0600
    assert out.read_text() == "<p>handout</p>"


def test_rewriting_a_file_keeps_the_mode_its_owner_gave_it(tmp_path, umask_022):
    path = tmp_path / "results.csv"
    path.write_text("old")
    path.chmod(0o640)
    atomic_write_text(path, "new")
    assert stat.S_IMODE(path.stat().st_mode) == 0o640 and path.read_text() == "new"


def test_a_failed_write_leaves_the_old_file_and_no_temporary_one(tmp_path):
    from cudalab.core.files import atomic_write

    path = tmp_path / "membership"
    path.write_text("kept")

    def fail(tmp):
        tmp.write_text("half")
        raise RuntimeError("interrupted")

    with pytest.raises(RuntimeError):
        atomic_write(path, fail)
    assert path.read_text() == "kept" and sorted(p.name for p in tmp_path.iterdir()) == ["membership"]
