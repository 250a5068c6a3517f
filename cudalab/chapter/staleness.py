"""Is a recording still what today's sources would measure? Staleness, never silent.

A recording is stale when, and only when, something that can change its numbers has changed since
(its profile's parameters are compared apart, ``parameters_changed``):

- a kernel or header it compiled (its bytes);
- the code of a definition its measurement reaches, compared without docstrings, comments and
  layout (``chapter.reach``: definitions reached by name from the notebook's deciding cells);
- its notebook's deciding cells (not the explorer, the questions or the answers).

When measuring, each deciding file's sha256 (``source_files``) and code digest (``code_digests``)
are recorded in the chapter's ``provenance.json``. A replay judges each of today's deciding files:
unchanged where its bytes match, or its code digest does; for a recording older than code digests,
where the file at the recording's commit (the one whose bytes the recording names) has today's
code digest. A docstring fixed after a recording therefore stales nothing, old recordings included.

Recordings made before per-file digests were kept name only their commit: where git and that
commit are at hand, the files changed since are ``git diff --name-only <commit>`` of today's tree
(uncommitted changes included), restricted to today's deciding files. Where neither is available
the replay says it cannot tell: never silent, never wrong.

The analysis is static (``ast``) and over-approximates: a digest may cover more than a run reads,
never less.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from cudalab.chapter.catalog import EXPLORE_TAG
from cudalab.chapter.reach import cells_digest, code_digest, reach
from cudalab.core.errors import CudalabError
from cudalab.core.paths import KERNELS_DIR, PACKAGE_DIR, ROOT

# Notebook cells that do not decide the data: the explorer (JupyterLab only), the discussion, and a
# student's kernels beside the reference (a build with --kernels, never recorded).
NOT_DECIDING_TAGS = frozenset({EXPLORE_TAG, "questions", "answers", "yours"})
PACKAGE = PACKAGE_DIR.name  # "cudalab"
SHOWN = 6  # changed files a sentence names; the rest are counted
# Modules that present, record or explore the data but do not decide a number in it: their imports
# are still followed (the chapter handle reaches the timing code), they themselves never stale a
# recording. Without this, a figure's colour or a banner's wording would call every recording stale.
# core/provenance.py records who measured (the GPU's name and UUID, versions, the commit): a new
# field there does not change a measured number. core/files.py writes a file whole under a
# temporary name and renames it (its bytes are the caller's): how it writes decides no number.
PRESENTING = ("chapter/", "report/", "explore/", "core/plots.py", "core/provenance.py", "core/files.py")
NO_FINGERPRINTS = "recorded before source fingerprints were kept; cannot tell what changed"


def _rel(path: Path, root: Path = ROOT) -> str:
    """A path as recordings name it: relative to the checkout (absolute outside it, as in tests)."""
    path, root = path.resolve(), root.resolve()
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


def _deciding(notebook: Path, root: Path = ROOT) -> tuple[list[Path], frozenset[str]]:
    """The deciding files of a notebook and every name its reached code mentions, in the checkout at
    ``root`` (its package and kernels_cu/)."""
    package_dir, kernels_dir = root / PACKAGE, root / KERNELS_DIR.relative_to(ROOT)
    found = reach(deciding_cells(json.loads(notebook.read_text())), package_dir, kernels_dir)
    modules = {path for path in found.modules.values() if not _presenting(path, package_dir)}
    files = {notebook.resolve(), *(p.resolve() for p in modules | found.files)}
    return sorted(files, key=lambda p: _rel(p, root)), found.names


def deciding_files(notebook: Path, root: Path = ROOT) -> list[Path]:
    """The files that decide a chapter's data: its notebook, the ``cudalab`` modules its deciding
    cells reach (``chapter.reach``), and the kernel files, C references and headers that reached code
    names, less the modules that only present data (``PRESENTING``). Sorted by path."""
    return _deciding(notebook, root)[0]


def _presenting(path: Path, package_dir: Path = PACKAGE_DIR) -> bool:
    """A module of ``PRESENTING``: it shows or records data, it does not decide it."""
    inside = path.resolve().relative_to(package_dir.resolve()).as_posix()
    return any(inside == p or inside.startswith(p) for p in PRESENTING)


def file_digest(path: Path) -> str:
    """A deciding file's sha256: a notebook's deciding cells, any other file's bytes."""
    return _digest_of(path.read_bytes(), path.suffix)


def _digest_of(data: bytes, suffix: str) -> str:
    return notebook_digest(data.decode()) if suffix == ".ipynb" else _sha256(data)


def _code_of(data: bytes, suffix: str, names: frozenset[str]) -> str:
    """What can change a number in a deciding file (``chapter.reach``): a module's reached code, a
    notebook's deciding cells, without docstrings, comments or layout; any other file's bytes."""
    if suffix == ".py":
        return code_digest(data.decode(errors="replace"), names)
    if suffix == ".ipynb":
        return cells_digest(deciding_cells(json.loads(data)))
    return _sha256(data)


def source_files(notebook: Path, root: Path = ROOT) -> dict[str, str]:
    """``{path relative to the checkout: sha256}`` of every deciding file's bytes (a notebook's
    deciding cells): what a recording keeps (``provenance.json``'s ``source_files``)."""
    return {_rel(p, root): file_digest(p) for p in deciding_files(notebook, root)}


def fingerprints(notebook: Path, root: Path = ROOT) -> dict[str, dict[str, str]]:
    """What a recording keeps of its sources: each deciding file's ``source_files`` digest and its
    ``code_digests`` (the code that can change a number, ``chapter.reach``), by path."""
    files, names = _deciding(notebook, root)
    return {
        "source_files": {_rel(p, root): file_digest(p) for p in files},
        "code_digests": {_rel(p, root): _code_of(p.read_bytes(), p.suffix, names) for p in files},
    }


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


@functools.lru_cache(maxsize=4096)
def _at_commit(root: Path, commit: str, rel: str) -> bytes | None:
    """A file's bytes at ``commit`` (git is asked once per file and commit), or None."""
    if not (root / ".git").exists() or not re.fullmatch(r"[0-9a-fA-F]{7,40}", commit or ""):
        return None
    try:
        done = subprocess.run(["git", "show", f"{commit}:{rel}"], cwd=root, capture_output=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def _unchanged(path: Path, recorded: dict[str, Any], names: frozenset[str], root: Path) -> bool:
    """Whether a deciding file's code is what the recording measured: its bytes match the recorded
    digest, or its code digest does (``code_digests``), or the file at the recording's commit, the
    one whose digest the recording names, has the same code digest as today's."""
    rel = _rel(path, root)
    then_bytes = recorded["source_files"].get(rel)
    data = path.read_bytes()
    if then_bytes is not None and _digest_of(data, path.suffix) == then_bytes:
        return True
    now = _code_of(data, path.suffix, names)
    if (recorded.get("code_digests") or {}).get(rel) == now:
        return True
    if recorded.get("git_dirty") or not path.is_relative_to(root):
        return False  # a dirty recording's commit is not its source
    then = _at_commit(root, str(recorded.get("git_commit") or ""), path.relative_to(root).as_posix())
    if then is None or (then_bytes is not None and _digest_of(then, path.suffix) != then_bytes):
        return False
    return _code_of(then, path.suffix, names) == now


def _bytes_unchanged(recorded: dict[str, str], root: Path) -> bool:
    """Whether every deciding file a recording names (modules that present data aside) has the
    bytes it had: today's reach then reads the same code, so nothing that decides can differ, and
    a replay needs no analysis (the common case, and a fast one)."""
    if not recorded:
        return False
    for rel, digest in recorded.items():
        path = Path(rel) if Path(rel).is_absolute() else root / rel
        if rel.startswith(f"{PACKAGE}/") and _presenting(path, root / PACKAGE):
            continue
        if not path.is_file() or file_digest(path) != digest:
            return False
    return True


def staleness(
    recorded: dict[str, Any],
    notebook: Path,
    root: Path = ROOT,
    diffs: dict[str, frozenset[str] | None] | None = None,
    reached: dict[Path, tuple[list[Path], frozenset[str]]] | None = None,
) -> Staleness:
    """How a recorded chapter (its ``provenance.json``) stands against today's sources: the deciding
    files whose code can change a number and differs from what was measured (``_unchanged``).
    ``diffs`` keeps git's answer per commit across the calls of one check (one git call per commit),
    for recordings older than per-file digests; ``reached`` keeps each notebook's reach."""
    if not notebook.is_file():
        return Staleness((_rel(notebook),), how="notebook gone")
    if _bytes_unchanged(recorded.get("source_files") or {}, root):
        return Staleness(how="source fingerprints")  # the same bytes reach the same code
    reached = {} if reached is None else reached
    if notebook not in reached:
        reached[notebook] = _deciding(notebook, root)
    now, names = reached[notebook]
    root = root.resolve()
    if recorded.get("source_files"):
        changed = sorted(_rel(p, root) for p in now if not _unchanged(p, recorded, names, root))
        return Staleness(tuple(changed), how="source fingerprints")
    commit = str(recorded.get("git_commit") or "")
    diffs = {} if diffs is None else diffs
    if commit not in diffs:
        diffs[commit] = _changed_since(commit, root)
    diff = diffs[commit]
    if diff is None or recorded.get("git_dirty"):  # a dirty recording's commit is not its source
        return Staleness(known=False)
    changed = [
        rel
        for rel in (p.relative_to(root).as_posix() for p in now if p.is_relative_to(root))
        if rel in diff and (not rel.endswith(".ipynb") or _notebook_changed(commit, rel, root))
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

    found, diffs, reached = [], {}, {}
    for rec in all_recordings(results or RESULTS_DIR):
        for prov in sorted(rec.path.glob(f"*/{PROVENANCE}")):
            chapter = prov.parent.name
            recorded = json.loads(prov.read_text())
            state = staleness(recorded, (notebooks or NOTEBOOKS_DIR) / f"{chapter}.ipynb", diffs=diffs, reached=reached)
            state = replace(state, parameters=parameters_changed(recorded, rec.profile, chapter))
            if state.stale:
                found.append(StaleChapter(f"{rec.gpu}/{rec.profile}/{chapter}", state))
    return found
