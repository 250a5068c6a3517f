"""Is a recording still what today's sources would measure? Staleness, never silent.

A chapter's data is decided by a few files: its notebook (the code cells, not the explorer, the
questions or the answers), the ``cudalab`` modules those cells import (transitively), the kernel
files and C references those modules or cells name, and the headers the kernels include. When
measuring, each such file's sha256 is recorded in the chapter's ``provenance.json``
(``source_files``). A replay compares them with today's files and names those that changed.

Recordings made before per-file digests were kept name the commit that made them: where git and
that commit are at hand, the files changed since are ``git diff --name-only <commit>`` of today's
tree (uncommitted changes included), restricted to today's deciding files. Where neither is
available the replay says it cannot tell: never silent, never wrong.

The analysis is static (``ast``) and over-approximates: a digest may cover more than a run reads,
never less.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from cudalab.chapter.catalog import EXPLORE_TAG
from cudalab.core.errors import CudalabError
from cudalab.core.kernels import included_headers
from cudalab.core.paths import KERNELS_DIR, PACKAGE_DIR, ROOT

# Notebook cells that do not decide the data: the explorer (JupyterLab only), the discussion, and a
# student's kernels beside the reference (a build with --kernels, never recorded).
NOT_DECIDING_TAGS = frozenset({EXPLORE_TAG, "questions", "answers", "yours"})
PACKAGE = PACKAGE_DIR.name  # "cudalab"
# Files a module may name by a string literal beside it (C references) or in kernels_cu/.
_NAMED_SUFFIXES = (".cu", ".cuh", ".c", ".h")
_IMPORT_FALLBACK = re.compile(rf"^\s*(?:from|import)\s+({PACKAGE}(?:\.\w+)*)", re.MULTILINE)
SHOWN = 6  # changed files a sentence names; the rest are counted
# Modules that present, record or explore the data but do not decide a number in it: their imports
# are still followed (the chapter handle reaches the timing code), they themselves never stale a
# recording. Without this, a figure's colour or a banner's wording would call every recording stale.
# core/provenance.py records who measured (the GPU's name and UUID, versions, the commit): a new
# field there does not change a measured number. core/files.py writes a file whole under a
# temporary name and renames it (its bytes are the caller's): how it writes decides no number.
PRESENTING = ("chapter/", "report/", "explore/", "core/plots.py", "core/provenance.py", "core/files.py")
NO_FINGERPRINTS = "recorded before source fingerprints were kept; cannot tell what changed"


def _rel(path: Path) -> str:
    """A path as recordings name it: relative to the checkout (absolute outside it, as in tests)."""
    path, root = path.resolve(), ROOT.resolve()
    return path.relative_to(root).as_posix() if path.is_relative_to(root) else path.as_posix()


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# ---- the deciding files of a notebook


def deciding_cells(notebook: dict[str, Any]) -> list[str]:
    """The source of each code cell that decides the data (not tagged explore, questions, answers)."""
    return [
        "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
        for c in notebook.get("cells", [])
        if c.get("cell_type") == "code" and not NOT_DECIDING_TAGS & set(c.get("metadata", {}).get("tags", []))
    ]


def notebook_digest(text: str) -> str:
    """sha256 of a notebook's deciding cells' source (not its JSON: outputs, ids and the explorer
    cells change nothing that is measured)."""
    return _sha256("\n\0".join(deciding_cells(json.loads(text))).encode())


def _parse(source: str) -> ast.Module | None:
    """Python source, with IPython's magics (``%``, ``!``) blanked; None where it still fails."""
    lines = ["" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines()]
    try:
        return ast.parse("\n".join(lines))
    except SyntaxError:
        return None


def _module_file(name: str) -> Path | None:
    """The file of module ``cudalab.x.y`` (its ``.py`` or its package's ``__init__.py``)."""
    parts = name.split(".")
    if parts[0] != PACKAGE:
        return None
    base = PACKAGE_DIR.joinpath(*parts[1:])
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _with_parents(name: str) -> list[str]:
    """``a.b.c`` -> ``a``, ``a.b``, ``a.b.c``: importing a module runs its packages' ``__init__``."""
    parts = name.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


def _imported(tree: ast.Module, current: str = "", is_package: bool = False) -> set[str]:
    """The ``cudalab`` modules that ``import``/``from`` statements anywhere in ``tree`` (functions
    included) may load; ``current`` resolves relative imports."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = current.split(".")
                anchor = anchor if is_package else anchor[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found.update(f"{base}.{a.name}" for a in node.names)  # a submodule, where it is one
    return {m for name in found if name.split(".")[0] == PACKAGE for m in _with_parents(name) if _module_file(m)}


def _named_files(tree: ast.Module, folder: Path | None) -> set[Path]:
    """Kernel files (and, beside a module, C references) that string literals in ``tree`` name."""
    names = {
        Path(n.value).name
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.endswith(_NAMED_SUFFIXES)
    }
    found = {KERNELS_DIR / n for n in names if (KERNELS_DIR / n).is_file()}
    if folder is not None:
        found |= {p for p in _files_beside(folder) if p.name in names}
    return found


def _files_beside(folder: Path) -> tuple[Path, ...]:
    return tuple(p for p in folder.rglob("*") if p.suffix in _NAMED_SUFFIXES and p.is_file())


def _module_facts(path: Path, name: str) -> tuple[frozenset[str], frozenset[Path]]:
    tree = _parse(path.read_text())
    if tree is None:
        return frozenset(), frozenset()
    return frozenset(_imported(tree, name, path.name == "__init__.py")), frozenset(_named_files(tree, path.parent))


def deciding_files(notebook: Path) -> list[Path]:
    """The files that decide a chapter's data: its notebook, the ``cudalab`` modules its deciding
    cells import (transitively), the kernel files and C references named as string literals in
    those cells and modules, and the headers those kernels include. Sorted by path."""
    cells = deciding_cells(json.loads(notebook.read_text()))
    todo: set[str] = set()
    named: set[Path] = set()
    for source in cells:
        tree = _parse(source)
        if tree is None:  # a cell ast cannot read: its imports by pattern
            todo |= {m for n in _IMPORT_FALLBACK.findall(source) for m in _with_parents(n) if _module_file(m)}
            continue
        todo |= _imported(tree)
        named |= _named_files(tree, None)
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        imports, files = _module_facts(_module_file(name), name)
        todo |= imports - seen
        named |= files
    modules = {path for m in seen if not _presenting(path := _module_file(m))}
    headers = {h for k in named if k.suffix == ".cu" and k.is_relative_to(KERNELS_DIR) for h in included_headers(k)}
    return sorted({notebook.resolve(), *(p.resolve() for p in modules | named | headers)}, key=_rel)


def _presenting(path: Path) -> bool:
    """A module of ``PRESENTING``: it shows or records data, it does not decide it."""
    inside = path.resolve().relative_to(PACKAGE_DIR.resolve()).as_posix()
    return any(inside == p or inside.startswith(p) for p in PRESENTING)


def _presenting_rel(rel: str) -> bool:
    """``_presenting`` for a path as recordings name it (relative to the checkout)."""
    package = f"{PACKAGE}/"
    return rel.startswith(package) and any(
        rel[len(package) :] == p or rel[len(package) :].startswith(p) for p in PRESENTING
    )


def file_digest(path: Path) -> str:
    """A deciding file's sha256: a notebook's deciding cells, any other file's bytes."""
    return notebook_digest(path.read_text()) if path.suffix == ".ipynb" else _sha256(path.read_bytes())


def source_files(notebook: Path) -> dict[str, str]:
    """``{path relative to the checkout: sha256}`` of every deciding file: what a recording keeps
    (``provenance.json``'s ``source_files``)."""
    return {_rel(p): file_digest(p) for p in deciding_files(notebook)}


# ---- comparing a recording with today's sources


@dataclass(frozen=True)
class Staleness:
    """What changed since a recording: ``changed`` files, or ``known`` False where nobody can tell."""

    changed: tuple[str, ...] = ()
    known: bool = True
    how: str = ""  # "source fingerprints" or "git diff against <commit>"
    parameters: tuple[str, ...] = ()  # the profile's parameters the recording was made with other values of

    @property
    def stale(self) -> bool:
        return bool(self.changed) or bool(self.parameters) or not self.known

    def sentence(self) -> str:
        """'recorded before kernels_cu/x.cu and notebooks/y.ipynb changed', or why it cannot tell;
        empty where the recording matches today's sources."""
        if not self.known:
            return NO_FINGERPRINTS
        if not self.changed:
            return ""
        first = sorted(self.changed, key=_telling)
        names = first[:SHOWN] + ([f"{len(first) - SHOWN} other files"] if len(first) > SHOWN else [])
        listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
        return f"recorded before {listed} changed"


# The files a reader looks for first in a sentence: kernels, notebooks, the labs, then the machinery.
_TELLING_ORDER = ("kernels_cu/", "notebooks/", f"{PACKAGE}/labs/")


def _telling(path: str) -> tuple[int, str]:
    return next((i for i, top in enumerate(_TELLING_ORDER) if path.startswith(top)), len(_TELLING_ORDER)), path


def _git(*args: str, root: Path) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=20, check=True).stdout


def _changed_since(commit: str, root: Path) -> frozenset[str] | None:
    """Every path changed in ``root``'s working tree since ``commit`` (one git call), or None where
    git or the commit is not available."""
    if not (root / ".git").exists() or not re.fullmatch(r"[0-9a-fA-F]{7,40}", commit or ""):
        return None
    try:
        return frozenset(_git("diff", "--name-only", commit, "--", ".", root=root).splitlines())
    except (OSError, subprocess.SubprocessError):
        return None


def _notebook_changed(commit: str, rel: str, root: Path) -> bool:
    """Whether a notebook's deciding cells differ from ``commit``'s (git sees its JSON change)."""
    try:
        then = _git("show", f"{commit}:{rel}", root=root)
    except (OSError, subprocess.SubprocessError):
        return True
    return notebook_digest(then) != notebook_digest((root / rel).read_text())


def staleness(
    recorded: dict[str, Any], notebook: Path, root: Path = ROOT, diffs: dict[str, frozenset[str] | None] | None = None
) -> Staleness:
    """How a recorded chapter (its ``provenance.json``) stands against today's sources. ``diffs``
    keeps git's answer per commit across the calls of one check (one git call per commit)."""
    if not notebook.is_file():
        return Staleness((_rel(notebook),), how="notebook gone")
    now = deciding_files(notebook)
    if recorded.get("source_files"):
        # a module that today's rules call presenting (PRESENTING) stales no recording that listed it
        then: dict[str, str] = {k: v for k, v in recorded["source_files"].items() if not _presenting_rel(k)}
        current = {_rel(p): file_digest(p) for p in now}
        changed = sorted(k for k in current.keys() | then.keys() if current.get(k) != then.get(k))
        return Staleness(tuple(changed), how="source fingerprints")
    commit = str(recorded.get("git_commit") or "")
    diffs = {} if diffs is None else diffs
    if commit not in diffs:
        diffs[commit] = _changed_since(commit, root.resolve())
    diff = diffs[commit]
    if diff is None or recorded.get("git_dirty"):  # a dirty recording's commit is not its source
        return Staleness(known=False)
    here = root.resolve()
    changed = [
        rel
        for rel in (p.relative_to(here).as_posix() for p in now if p.is_relative_to(here))
        if rel in diff and (not rel.endswith(".ipynb") or _notebook_changed(commit, rel, root.resolve()))
    ]
    return Staleness(tuple(changed), how=f"git diff against {commit[:10]}")


# ---- every recording at once (make check-recordings)


@dataclass(frozen=True)
class StaleChapter:
    """One recorded chapter whose sources changed since (or cannot be compared)."""

    where: str  # gpu/profile/chapter
    staleness: Staleness

    def line(self) -> str:
        what = [", ".join(self.staleness.changed) if self.staleness.known else NO_FINGERPRINTS]
        if self.staleness.parameters:
            what.append(f"recorded with other parameters ({'; '.join(self.staleness.parameters)})")
        return f"{self.where}: {'; '.join(w for w in what if w)}"


def parameters_changed(recorded: dict[str, Any], profile: str, chapter: str) -> tuple[str, ...]:
    """Each parameter that the profile now gives the chapter and its recording was made with
    another value of ("dims: [32, 64] recorded, [8, 32] now"): its data is not what the profile
    asks for, and a replay can only show the recording. A profile that cannot be read names
    nothing here (the build says what is wrong with it)."""
    from cudalab.chapter.profiles import open_profile
    from cudalab.chapter.recorded import differing_parameters

    try:
        now = open_profile(profile).chapter_params(chapter)
    except (CudalabError, OSError, ValueError):
        return ()
    return tuple(f"{k}: {then!r} recorded, {v!r} now" for k, v, then in differing_parameters(recorded, now))


def stale_recordings(results: Path | None = None, notebooks: Path | None = None) -> list[StaleChapter]:
    """Every recorded chapter under ``results`` (``<gpu>/<profile>/<chapter>/provenance.json``)
    that differs from today's sources or was made with other parameters than its profile now gives
    (``parameters_changed``), in order of GPU, profile and chapter."""
    from cudalab.chapter.recorded import PROVENANCE, all_recordings
    from cudalab.core.paths import NOTEBOOKS_DIR, RESULTS_DIR

    found, diffs = [], {}
    for rec in all_recordings(results or RESULTS_DIR):
        for prov in sorted(rec.path.glob(f"*/{PROVENANCE}")):
            chapter = prov.parent.name
            recorded = json.loads(prov.read_text())
            state = staleness(recorded, (notebooks or NOTEBOOKS_DIR) / f"{chapter}.ipynb", diffs=diffs)
            state = replace(state, parameters=parameters_changed(recorded, rec.profile, chapter))
            if state.stale:
                found.append(StaleChapter(f"{rec.gpu}/{rec.profile}/{chapter}", state))
    return found
