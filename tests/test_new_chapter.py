"""Adding a chapter is adding files: a toy chapter 07 (``tests/data/toy_chapter/``: a kernel file, its
family's module with the explorer's recipe, a notebook, its declarations and its gtx680 grid in a
file of its own) is copied into a copy of the checkout, where no existing file is edited. Without a
GPU, from a small recording that the test makes through the recording API (``record_tables``), the
report contains the chapter, ``--compare`` draws its declared figure, and the explorer takes its
recipe; a student's copy of its kernel goes through ``--kernels`` and ``--grade`` (its ``yours:``
declaration). ARCHITECTURE.md's "Adding a chapter" names every kind of file involved."""

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

from cudalab.core.paths import ROOT

TOY = ROOT / "tests" / "data" / "toy_chapter"
CHAPTER = "07_toy_scale"
GPUS = ("Toy GPU A", "Toy GPU B")  # the recording's GPU names: a test's, never a measurement's
pytestmark = pytest.mark.slow


def _python(checkout, code: str, *args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    """``code`` (or, with ``args``, a script) run by this Python in the copy, its package the copy's."""
    env = {k: v for k, v in os.environ.items() if k != "CUDALAB_BATCH"} | {"PYTHONPATH": str(checkout)}
    command = [sys.executable, *args] if args else [sys.executable, "-c", textwrap.dedent(code)]
    return subprocess.run(command, cwd=checkout, env=env, capture_output=True, text=True, timeout=timeout)


def _build(checkout, name: str, *args: str):
    """``build_report.py ARGS`` in the copy (a replay, HTML only) into ``build/NAME``; its output folder."""
    out = checkout / "build" / name
    proc = _python(checkout, "", "build_report.py", *args, "--replay", "--format", "html", "--out", str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def checkout(tmp_path_factory):
    """A copy of this checkout with the toy chapter's files added (none of them there before) and
    its tables recorded on two toy GPUs through ``record_tables``."""
    copy = tmp_path_factory.mktemp("new-chapter") / "cudalab-checkout"
    skip = shutil.ignore_patterns(".git", ".venv", "build", "wheelhouse", "__pycache__", "*.egg-info", ".*cache*")
    shutil.copytree(ROOT, copy, ignore=skip)
    shutil.rmtree(copy / "tests")  # the copy needs the project, not its tests
    for src in sorted(p for p in TOY.rglob("*") if p.is_file()):
        dest = copy / src.relative_to(TOY)
        assert not dest.exists(), f"{dest.relative_to(copy)} exists: a new chapter adds files, it edits none"
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dest)
    proc = _python(
        copy,
        f"""
        import cudalab, pandas as pd
        from pathlib import Path
        from cudalab.report.recordings import record_tables
        assert Path(cudalab.__file__).is_relative_to(Path.cwd()), cudalab.__file__
        for gpu, scale in zip({GPUS!r}, (1.0, 0.5)):
            frame = pd.DataFrame({{"n": [1024, 65536], "kernel": ["scale"] * 2,
                                   "time_ms": [0.004 * scale, 0.02 * scale],
                                   "time_ms_q1": [0.0039 * scale, 0.019 * scale],
                                   "time_ms_q3": [0.0041 * scale, 0.021 * scale],
                                   "status": ["ok", "ok"], "reason": ["", ""]}})
            record_tables(Path("results"), "gtx680", "{CHAPTER}", {{"scale_sweep": (frame, ("n", "kernel"))}},
                          gpu_name=gpu, how="tests/test_new_chapter.py: a toy chapter's tables, not a measurement")
        """,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return copy


def test_the_new_chapter_replays_into_the_report_without_a_gpu(checkout):
    out = _build(checkout, "toy-report", "--gpu", "gtx680", "--only", "07", "--from", "toy-gpu-a", "--handout")
    report = (out / "report.html").read_text()
    assert "07 Toy scale: one kernel over n" in report and "scale at n = 65536" in report
    summary = json.loads((out / "data" / CHAPTER / "summary.json").read_text())
    assert [h["key"] for h in summary] == ["time_ms_largest_n"] and summary[0]["value"] == 0.02
    assert (out / "handout" / f"{CHAPTER}.html").is_file()
    # the recording names no source changed since: it carries today's fingerprints of the chapter's files
    assert "recorded before" not in report


def test_compare_draws_the_figure_the_new_chapter_declares(checkout):
    out = _build(checkout, "toy-compare", "--compare", "toy-gpu-a/gtx680", "toy-gpu-b/gtx680")
    page = (out / "report.html").read_text()
    section = page[re.search(rf"id=.chapter-{CHAPTER}.", page).start() :]
    assert "scale_sweep: time_ms over n, a colour per source" in section, "the declared figure's caption"
    assert re.search(r"<img[^>]+src=.data:image/png;base64,", section), "the figure is drawn"


def test_the_explorer_takes_the_new_chapters_recipe(checkout):
    proc = _python(
        checkout,
        f"""
        import json, re
        from pathlib import Path
        from cudalab import open_chapter
        from cudalab.chapter import catalog
        from cudalab.core.errors import NoGPU
        from cudalab.explore import measure, widgets

        chapter = catalog.chapter("{CHAPTER}")
        cell = next("".join(c["source"]) for c in json.loads(chapter.path.read_text())["cells"]
                    if "explore" in c["metadata"].get("tags", []) and c["cell_type"] == "code")
        namespace = {{}}
        exec("\\n".join(l for l in cell.splitlines() if l.startswith("from cudalab.labs")), namespace)
        recipe = namespace[re.search(r"point=(\\w+)", cell).group(1)]
        assert recipe.chapter == chapter.id and recipe.table == "scale_sweep"
        assert measure.check_point(recipe, {{}}) == {{"n": 3000, "kernel": "scale"}}
        values = {{name: p.default for name, p in chapter.parameters().items()}}
        values.update(profile="gtx680", mode="replay", data_dir=str(Path("build/toy-explore")),
                      recorded_dir=str(Path("results/toy-gpu-a/gtx680")), progress=False)
        lab = open_chapter(chapter.id, values)
        lab.table("scale_sweep", lambda: None, axes=("n", "kernel"))  # as the notebook's cell replays it
        try:
            measure.measure_now(lab, recipe, {{"n": 2048}})
            raise SystemExit("measured without a GPU")
        except NoGPU as exc:
            print("no GPU:", exc)
        explorer = widgets.explore(lab, "scale_sweep", point=recipe)
        assert explorer is not None and explorer.measure_button.disabled
        print("explorer ok")
        """,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "explorer ok" in proc.stdout


needs_nvcc = pytest.mark.skipif(
    shutil.which("nvcc") is None and not os.path.exists("/usr/local/cuda/bin/nvcc"), reason="nvcc"
)


def _students(root, **bodies: str):
    """A folder per student, each holding its copy of the toy kernel with ``y[i] = a * x[i]`` as given."""
    kernel = (TOY / "kernels_cu" / "toy_07_scale.cu").read_text()
    assert "y[i] = a * x[i];" in kernel
    for name, line in bodies.items():
        (root / name).mkdir(parents=True)
        (root / name / "toy_07_scale.cu").write_text(kernel.replace("y[i] = a * x[i];", line))
    return root


@needs_nvcc
def test_a_students_kernel_goes_through_the_new_chapter_without_a_gpu(checkout, tmp_path):
    """The chapter's ``yours:`` declaration is all it takes: --kernels picks chapter 07 for a copy of
    its kernel (the one rule: the chapter whose points launch the file), compiles it beside the
    reference at the declared point, and the report shows the chapter's section."""
    mine = _students(tmp_path, mine="y[i] = x[i] * a;") / "mine"
    out = checkout / "build" / "yours"
    proc = _python(checkout, "", "build_report.py", "--kernels", str(mine), "--format", "html", "--out", str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "your toy_07_scale.cu in 07_toy_scale: compiled only" in proc.stderr
    assert f"1 chapter(s) -> {out}" in proc.stderr, "only the chapter that launches the file"
    html = (out / "report.html").read_text()
    assert "Your kernels beside the reference" in html and "toy_07_scale.cu" in html


@needs_nvcc
def test_the_new_chapter_is_graded_without_a_gpu(checkout, tmp_path):
    """--grade takes the new chapter's students: the compiler's verdict per student, a scoreboard."""
    klass = _students(tmp_path / "class", a_copy="y[i] = x[i] * a;", b_broken="y[i] = x[i] * b;")
    out = tmp_path / "graded"
    proc = _python(checkout, "", "build_report.py", "--grade", str(klass), "--out", str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = {line.split(",")[0]: line for line in (out / "scoreboard.csv").read_text().splitlines()[1:]}
    assert set(rows) == {"a_copy", "b_broken"}
    assert ",07_toy_scale,toy_07_scale.cu," in rows["a_copy"] and ",compiled only," in rows["a_copy"]
    assert ",does not compile," in rows["b_broken"] and 'identifier ""b"" is undefined' in rows["b_broken"]


def test_architecture_names_every_file_a_new_chapter_adds():
    text = (ROOT / "ARCHITECTURE.md").read_text()
    section = text[text.index("## Adding a chapter") :]
    section = section[: section.index("\n## ", 3)] if "\n## " in section[3:] else section
    kinds = {
        "kernels_cu/toy_07_scale.cu": "kernels_cu/",
        "cudalab/labs/toy_scale.py": "cudalab/labs/",
        "notebooks/07_toy_scale.ipynb": "notebooks/NN_name.ipynb",
        "notebooks/07_toy_scale.yaml": "notebooks/NN_name.yaml",
        "params/gtx680/07_toy_scale.yaml": "params/<profile>/NN_name.yaml",
    }
    added = sorted(p.relative_to(TOY).as_posix() for p in TOY.rglob("*") if p.is_file())
    assert added == sorted(kinds), added
    for path, named in kinds.items():
        assert f"`{named}" in section, f"ARCHITECTURE.md's 'Adding a chapter' does not name {named} ({path})"
