"""The architecture, enforced: which layer may import which, no cycles, faces outside the machinery.

    core        <- every layer                         (the bottom: imports only itself)
    toolchain   <- chapter, labs, grading              (imports core; computes, never shows)
    chapter     <- report, explore, grading, faces     (imports core, toolchain)
    labs        <- grading, notebooks, faces           (imports core, toolchain)
    report      <- grading, faces                      (imports core, chapter; never CuPy or labs)
    explore     <- notebooks                           (imports core, chapter; a chapter passes its labs recipe in;
                                                        explore.series starts the grading room's series job)
    grading     <- explore.series, notebooks, faces    (imports every layer but explore: a student's kernel runs
                                                        only in its child process)

Read from the source with ``ast`` (imports inside functions count too), so a lazy import cannot
hide a crossed layer. ARCHITECTURE.md explains the rules.
"""

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from cudalab.core.paths import NOTEBOOKS_DIR, PACKAGE_DIR, ROOT

LAYERS = ("core", "toolchain", "chapter", "labs", "report", "explore", "grading")
MAY_IMPORT = {
    "core": {"core"},
    "toolchain": {"core", "toolchain"},
    # toolchain computes for any caller (occupancy from the compiler's report) and knows no chapter:
    # a chapter shows and records what it computes (lab.occupancy)
    "chapter": {"core", "toolchain", "chapter"},
    "labs": {"core", "toolchain", "labs"},
    "report": {"core", "chapter", "report"},
    # the explorer reads recordings and profiles; a notebook passes its kernel family's point recipe in;
    # a student's folder over the sweep is the grading room's job (explore.series alone starts it)
    "explore": {"core", "chapter", "explore", "grading"},
    # a student's kernels measured and a class graded: a chapter's point recipe (labs) in a child
    # process, the compiler's verdict (toolchain), a Dask pool as a build opens one (report.cluster)
    "grading": {"core", "toolchain", "chapter", "labs", "report", "grading"},
}
# Child processes that a CUDA tool runs (ncu, compute-sanitizer): entry points, not faces.
CHILD_TARGET = "_target.py"


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        rel = path.relative_to(PACKAGE_DIR.parent).with_suffix("")
        name = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
        out[name] = path
    return out


MODULES = _modules()


def _imports(path: Path, name: str) -> set[str]:
    """Every cudalab module this file imports, at top level or inside a function."""
    found = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("cudalab")}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else [])
                )
            if not base.startswith("cudalab"):
                continue
            for a in node.names:
                full = f"{base}.{a.name}"
                found.add(full if full in MODULES else base)
    return found


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else "top"


GRAPH = {name: _imports(path, name) for name, path in MODULES.items()}


def test_every_module_lives_in_a_layer_or_is_a_known_face():
    top = sorted(m for m in MODULES if _layer(m) == "top")
    assert top == ["cudalab", "cudalab.apsp", "cudalab.kmeans"], f"new top-level modules belong in a layer: {top}"


@pytest.mark.parametrize("layer", LAYERS)
def test_layer_imports_only_what_it_may(layer):
    crossed = [
        (m, dep)
        for m, deps in GRAPH.items()
        if _layer(m) == layer
        for dep in deps
        if dep != "cudalab" and _layer(dep) not in MAY_IMPORT[layer]
    ]
    assert not crossed, f"{layer} may import only {sorted(MAY_IMPORT[layer])}: {crossed}"


def test_toolchain_computes_and_never_shows():
    """The tools return frames and values: no display (IPython), no chapter's table passed in
    as a callback; a chapter shows and records what they compute."""
    offenders = []
    for name, path in MODULES.items():
        if _layer(name) != "toolchain":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                offenders += [(name, a.name) for a in node.names if a.name.split(".")[0] == "IPython"]
            elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "IPython":
                offenders.append((name, node.module))
            elif isinstance(node, ast.Name) and node.id in ("display", "Markdown"):
                offenders.append((name, node.id))
            elif isinstance(node, ast.arg) and node.arg == "table":
                offenders.append((name, "a `table` callback"))
    assert not offenders, f"toolchain computes; the chapter layer displays and records: {offenders}"


def test_no_import_cycles():
    edges = {m: {d for d in deps if d in MODULES and d != "cudalab"} for m, deps in GRAPH.items()}
    state: dict[str, int] = {}

    def visit(m, stack):
        state[m] = 1
        for d in edges[m]:
            if state.get(d) == 1:
                raise AssertionError("import cycle: " + " -> ".join(stack[stack.index(d) :] + [d]) if d in stack else d)
            if d not in state:
                visit(d, stack + [d])
        state[m] = 2

    for m in edges:
        if m not in state:
            visit(m, [m])


def test_argparse_and_main_only_in_faces():
    offenders = []
    for name, path in MODULES.items():
        if _layer(name) == "top" or path.name.endswith(CHILD_TARGET):
            continue
        text = path.read_text()
        if "argparse" in text or "__main__" in text:
            offenders.append(name)
    assert not offenders, (
        f"command lines belong to faces (build_report.py, cudalab/apsp.py, cudalab/kmeans.py, tools/): {offenders}"
    )


def test_child_targets_are_only_entry_points_under_labs_and_grading():
    """A CUDA tool's target (labs) and the grader's worker, where a student's kernel runs (grading)."""
    targets = [m for m, p in MODULES.items() if p.name.endswith(CHILD_TARGET)]
    assert targets and all(_layer(m) in ("labs", "grading") for m in targets)


def test_every_exception_class_derives_from_the_one_base():
    from cudalab.core import errors

    defined = []
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and any(
                getattr(b, "id", getattr(b, "attr", "")).endswith(("Error", "Exception")) for b in node.bases
            ):
                defined.append((name, node.name))
    assert all(m == "cudalab.core.errors" for m, _ in defined), f"exceptions live in core/errors.py: {defined}"
    for cls in vars(errors).values():
        if isinstance(cls, type) and issubclass(cls, Exception) and cls.__module__ == errors.__name__:
            assert issubclass(cls, errors.CudalabError), cls


def test_report_layer_runs_without_cupy_or_lab_code():
    code = (
        "import sys; sys.modules['cupy'] = None\n"
        "import cudalab.report.build, cudalab.report.benchmarks, cudalab.report.compare.report\n"
        "bad = sorted(m for m in sys.modules if m.startswith(('cudalab.labs', 'cudalab.toolchain')))\n"
        "assert not bad, bad\n"
        "from cudalab.core.gpu import gpu_available; assert not gpu_available()\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]


@pytest.mark.parametrize("path", sorted(NOTEBOOKS_DIR.glob("*.ipynb")), ids=lambda p: p.name)
def test_notebooks_open_their_chapter_with_one_import_and_no_report_code(path):
    code = "\n".join("".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code")
    assert "from cudalab import open_chapter\n" in code
    assert f'open_chapter("{path.stem}", globals())' in code, (
        "parameters are declared once: open_chapter(id, globals())"
    )
    imported = _imports_from_code(code)
    assert not [m for m in imported if _layer(m) == "report"], "a notebook never imports report assembly"


def _imports_from_code(code: str) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("cudalab"):
            found |= {
                f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in MODULES else node.module for a in node.names
            }
    return found


def test_architecture_names_every_module_of_the_package():
    """ARCHITECTURE.md is the map: every module of ``cudalab/`` is named there, in backticks."""
    text = (ROOT / "ARCHITECTURE.md").read_text()
    spans = [span for line in text.splitlines() for span in re.findall(r"`([^`\n]+)`", line)]
    named = {w for span in spans for w in re.split(r"[^A-Za-z0-9_]+", span) if w}
    package = ROOT / "cudalab"
    modules = sorted(p.relative_to(package).as_posix() for p in package.rglob("*.py") if p.name != "__init__.py")
    missing = [m for m in modules if m.rsplit("/", 1)[-1].removesuffix(".py") not in named]
    assert not missing, f"ARCHITECTURE.md does not name {missing}"


def test_only_explore_series_reaches_the_grading_room():
    """The explorer's one door to grading is the series job it starts (``explore.series``)."""
    reaching = {
        name
        for name, path in MODULES.items()
        if _layer(name) == "explore" and any(_layer(dep) == "grading" for dep in _imports(path, name))
    }
    assert reaching <= {"cudalab.explore.series"}, reaching
