"""Staleness, never silent: the files that decide a chapter's data, and what changed since a
recording (per-file digests, or git against the recorded commit), on CPU."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from cudalab.chapter import staleness
from cudalab.chapter.recorded import PROVENANCE, RECORDINGS
from cudalab.core.paths import NOTEBOOKS_DIR, ROOT

CHECK = ROOT / "tools" / "check_recordings.py"


def _notebook(path: Path, code: str = "from cudalab.labs import vecmax", explore: str = "x = 0") -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# A chapter"),
        nbformat.v4.new_code_cell(code),
        nbformat.v4.new_code_cell('source_markdown("fw_blocked_minplus.cu")'),
        nbformat.v4.new_code_cell("def later():\n    from cudalab.labs import matmul\n    return matmul"),
        nbformat.v4.new_code_cell("%matplotlib inline\nfrom cudalab.explore.widgets import explore\n" + explore),
        nbformat.v4.new_code_cell("lab.answer(1, 'because')"),
    ]
    nb.cells[-2].metadata["tags"] = ["explore"]
    nb.cells[-1].metadata["tags"] = ["answers"]
    nbformat.write(nb, path)
    return path


def test_deciding_files_follow_imports_and_kernels_but_not_the_explorer(tmp_path):
    nb = _notebook(tmp_path / "01_x.ipynb")
    files = set(staleness.source_files(nb))
    assert nb.resolve().as_posix() in files
    assert {"cudalab/labs/vecmax.py", "cudalab/labs/__init__.py", "cudalab/__init__.py"} <= files
    assert "cudalab/labs/bandwidth.py" in files, "vecmax imports it: imports are followed transitively"
    assert "cudalab/labs/matmul.py" in files, "an import inside a function a cell defines counts"
    assert "kernels_cu/vecmax_coalescing.cu" in files, "a kernel that reached code names"
    # the cell imports matmul but calls nothing of it: its kernels, named inside its functions, are
    # not reached (a cell's `matmul.build_naive()` would reach them)
    assert "kernels_cu/mm_00_naive.cu" not in files
    assert {"kernels_cu/fw_blocked_minplus.cu", "kernels_cu/add_min.cuh"} <= files, "a kernel and its header"
    assert "cudalab/explore/widgets.py" not in files, "an explore cell decides nothing"


def test_modules_that_present_or_record_data_never_stale_a_recording():
    files = set(staleness.source_files(NOTEBOOKS_DIR / "01_block_size.ipynb"))
    assert {"cudalab/core/timing.py", "cudalab/labs/fw/harness.py", "kernels_cu/fw_basic_2d.cu"} <= files
    presenting = {f for f in files if f.startswith(("cudalab/chapter/", "cudalab/report/", "cudalab/explore/"))}
    assert not presenting and "cudalab/core/plots.py" not in files, presenting


def test_per_file_digests_name_the_changed_file(tmp_path):
    nb = _notebook(tmp_path / "01_x.ipynb")
    recorded = {"source_files": staleness.source_files(nb), "git_commit": "unknown"}
    assert not staleness.staleness(recorded, nb).stale, "unchanged: not stale"
    _notebook(nb, explore="y = 1")
    assert not staleness.staleness(recorded, nb).stale, "an explore cell's change does not stale a recording"
    tampered = dict(recorded["source_files"], **{"kernels_cu/add_min.cuh": "0" * 64})
    state = staleness.staleness({"source_files": tampered}, nb)
    assert state.changed == ("kernels_cu/add_min.cuh",)
    assert state.sentence() == "recorded before kernels_cu/add_min.cuh changed"
    _notebook(nb, code="from cudalab.labs import vecmax\nsizes = [1, 2]")
    assert staleness.staleness(recorded, nb).changed == (nb.resolve().as_posix(),)


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def test_without_digests_git_names_what_changed_since_the_recorded_commit(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    nb = _notebook(repo / "01_x.ipynb", code="x = 1")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "recorded here")
    commit = _git(repo, "rev-parse", "HEAD").strip()
    recorded = {"git_commit": commit, "git_dirty": False}
    assert not staleness.staleness(recorded, nb, root=repo).stale
    _notebook(nb, code="x = 1", explore="y = 2")  # uncommitted, and only the explorer
    assert not staleness.staleness(recorded, nb, root=repo).stale, "git sees the JSON; the deciding cells match"
    _notebook(nb, code="x = 2")  # an uncommitted change counts
    state = staleness.staleness(recorded, nb, root=repo)
    assert state.changed == ("01_x.ipynb",) and state.sentence() == "recorded before 01_x.ipynb changed"
    for unknown in ({"git_commit": "unknown"}, {"git_commit": "0" * 40}, {"git_commit": commit, "git_dirty": True}):
        state = staleness.staleness(unknown, nb, root=repo)
        assert state.stale and not state.known and state.sentence() == staleness.NO_FINGERPRINTS


def _recording(results: Path, digests: dict[str, str], parameters: dict | None = None) -> Path:
    rec = results / "some-gpu" / "gtx680"
    (rec / "01_block_size").mkdir(parents=True)
    (rec / RECORDINGS).write_text(json.dumps({"gpu_name": "Some GPU", "chapters": {}}))
    provenance = {"source_files": digests, "git_commit": "unknown", "parameters": parameters or {}}
    (rec / "01_block_size" / PROVENANCE).write_text(json.dumps(provenance))
    return rec


def _check(results: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(CHECK), "--results", str(results)], capture_output=True, text=True)


@pytest.mark.parametrize("stale", [False, True])
def test_check_recordings_lists_stale_chapters_and_exits_1(tmp_path, stale):
    digests = staleness.source_files(NOTEBOOKS_DIR / "01_block_size.ipynb")
    if stale:
        digests["kernels_cu/fw_basic_2d.cu"] = "0" * 64
    _recording(tmp_path, digests)
    done = _check(tmp_path)
    assert done.returncode == (1 if stale else 0), done.stdout + done.stderr
    if stale:
        assert "some-gpu/gtx680/01_block_size: kernels_cu/fw_basic_2d.cu" in done.stdout
    else:
        assert "every recording matches" in done.stdout


def test_a_recording_made_with_other_parameters_than_its_profile_now_gives_is_stale(tmp_path):
    # same sources, but the profile's grid changed since: its data is not what a build now asks for
    from cudalab.chapter.profiles import open_profile

    now = open_profile("gtx680").chapter_params("01_block_size")
    digests = staleness.source_files(NOTEBOOKS_DIR / "01_block_size.ipynb")
    _recording(tmp_path, digests, {**now, "sizes": [*now["sizes"], 12345], "not_in_the_profile": 1})
    done = _check(tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert (
        f"some-gpu/gtx680/01_block_size: recorded with other parameters (sizes: {[*now['sizes'], 12345]!r} recorded, "
        in done.stdout
    )
    assert "not_in_the_profile" not in done.stdout  # a notebook default the profile does not set is not compared

    same = tmp_path / "same"
    _recording(same, digests, now)
    assert _check(same).returncode == 0


def test_check_recordings_help():
    done = subprocess.run([sys.executable, str(CHECK), "--help"], capture_output=True, text=True)
    assert done.returncode == 0 and "before committing" in done.stdout


# ---- staleness by what can change a number (a scratch checkout: edits here touch no other test)


def _scratch_checkout(tmp_path: Path) -> Path:
    """A committed copy of the package, the kernels and the notebooks: a checkout to edit."""
    import shutil

    repo = tmp_path / "repo"
    for top in ("cudalab", "kernels_cu", "notebooks"):
        shutil.copytree(ROOT / top, repo / top, ignore=shutil.ignore_patterns("__pycache__", "scratch", "*.pyc"))
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "recorded here")
    return repo


def _stale_chapters(repo: Path, recordings: dict[str, dict], reached: dict) -> dict[str, tuple[str, ...]]:
    found = {}
    for chapter, recorded in recordings.items():
        state = staleness.staleness(recorded, repo / "notebooks" / f"{chapter}.ipynb", root=repo, reached=reached)
        if state.stale:
            found[chapter] = state.changed
    return found


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) == 1, f"{old!r} is not once in {path}: the test's edit no longer applies"
    path.write_text(text.replace(old, new))


def test_only_an_edit_that_can_change_a_number_stales_a_recording(tmp_path):
    repo = _scratch_checkout(tmp_path)
    chapters = sorted(p.stem for p in (repo / "notebooks").glob("*.ipynb"))
    commit = _git(repo, "rev-parse", "HEAD").strip()
    # today's recordings keep code digests; older ones kept only each file's bytes and their commit
    new = {c: staleness.fingerprints(repo / "notebooks" / f"{c}.ipynb", root=repo) for c in chapters}
    old = {c: {"source_files": new[c]["source_files"], "git_commit": commit, "git_dirty": False} for c in chapters}
    reached: dict = {}  # each notebook's reach, found once per state of the checkout
    assert not _stale_chapters(repo, new, reached) and not _stale_chapters(repo, old, reached)

    timing, harness = repo / "cudalab/core/timing.py", repo / "cudalab/labs/fw/harness.py"
    # a docstring (the module's and a function's), a comment, the layout, a function nothing calls
    _edit(timing, '"""Timing like a benchmark harness', '"""Edited. Timing like a benchmark harness')
    _edit(
        timing,
        "measured with CUDA events: one event pair per",
        "measured (edited) with CUDA events: one event pair per",
    )
    _edit(harness, "\ndef measure_variant(", "\n# a comment a maintainer added\ndef measure_variant(")
    _edit(
        repo / "cudalab/core/paths.py", "def require_checkout() -> None:", "def require_checkout() -> None:\n    x = 1"
    )
    subprocess.run(
        [
            sys.executable,
            "-m",
            "ruff",
            "format",
            "--line-length",
            "70",
            "--quiet",
            str(repo / "cudalab/core/launch.py"),
        ],
        check=True,
    )
    assert (repo / "cudalab/core/launch.py").read_text() != (ROOT / "cudalab/core/launch.py").read_text()
    assert staleness.deciding_files(repo / "notebooks/01_block_size.ipynb", root=repo)
    reached = {}
    assert not _stale_chapters(repo, new, reached), "no edit above can change a number"
    assert not _stale_chapters(repo, old, reached), "an old recording is judged by the same rule (its commit's code)"

    # one line of a kernel only chapter 06 compiles, one line of the harness that times Floyd-Warshall
    kernel = repo / "kernels_cu/km_00_assign.cu"
    kernel.write_text(kernel.read_text() + "\n__device__ int edited_line;\n")
    _edit(harness, '"launches": len(solver.launches),', '"launches": len(solver.launches) + 0,')
    reached = {}
    for recordings in (new, old):
        stale = _stale_chapters(repo, recordings, reached)
        assert sorted(stale) == [*chapters[1:5], "06_kmeans_device_update"], "exactly the chapters that use them"
        assert stale["06_kmeans_device_update"] == ("kernels_cu/km_00_assign.cu",)
        assert all(stale[c] == ("cudalab/labs/fw/harness.py",) for c in chapters[1:5]), stale


def test_a_recording_whose_commit_is_not_its_source_is_judged_by_its_bytes(tmp_path):
    repo = _scratch_checkout(tmp_path)
    commit = _git(repo, "rev-parse", "HEAD").strip()
    nb = repo / "notebooks" / "02_coalescing.ipynb"
    digests = staleness.source_files(nb, root=repo)
    _edit(repo / "cudalab/core/timing.py", '"""Timing like', '"""Edited. Timing like')
    dirty = {"source_files": digests, "git_commit": commit, "git_dirty": True}
    assert staleness.staleness(dirty, nb, root=repo).changed == ("cudalab/core/timing.py",), "no commit to read"
    forged = dict(digests, **{"cudalab/labs/bandwidth.py": "0" * 64})
    state = staleness.staleness({"source_files": forged, "git_commit": commit}, nb, root=repo)
    assert "cudalab/labs/bandwidth.py" in state.changed, "the commit's file is not the one the recording names"


def test_reach_follows_names_strings_and_module_names_in_strings(tmp_path):
    from cudalab.chapter.reach import code_digest, reach

    pkg, kernels = tmp_path / "cudalab", tmp_path / "kernels_cu"
    pkg.mkdir()
    kernels.mkdir()
    (pkg / "__init__.py").write_text("")
    (kernels / "k_used.cu").write_text('#include "h.cuh"\n')
    (kernels / "h.cuh").write_text("")
    (kernels / "k_unused.cu").write_text("")
    (pkg / "a.py").write_text(
        "def used():\n    return helper()\n\n"
        "def helper():\n    return 'k_used.cu'\n\n"
        "def by_string():\n    return 2\n\n"
        "def unused():\n    return 'k_unused.cu'\n\n"
        "class Plan:\n    def __init__(self):\n        self.x = 1\n\n    def step(self):\n        return 3\n\n"
        "    def never(self):\n        return 4\n"
    )
    (pkg / "b.py").write_text("NAME = 1\n")
    (pkg / "c.py").write_text("def other():\n    return 0\n")
    cell = 'from cudalab import a\na.used()\ngetattr(a, "by_string")()\nkind = "cudalab.b:NAME"\na.Plan().step()'
    found = reach([cell], pkg, kernels)
    assert set(found.modules) == {"cudalab", "cudalab.a", "cudalab.b"}, "a module named by a 'module:NAME' string"
    assert {"used", "helper", "by_string", "Plan", "step"} <= found.names
    assert not {"unused", "never", "other"} & found.names
    assert found.files == {kernels / "k_used.cu", kernels / "h.cuh"}, "a kernel only an unreached function names"
    text = (pkg / "a.py").read_text()
    digest = code_digest(text, found.names)
    assert code_digest(text.replace("return 4", "return 5"), found.names) == digest, "a method nothing calls"
    assert code_digest(text.replace("return 2", "return 5"), found.names) != digest, "a function named by a string"
    assert code_digest(text.replace("self.x = 1", "self.x = 2"), found.names) != digest, "a reached class's dunder"
