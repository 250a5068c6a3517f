"""What a chapter's measurement reaches: the code that can change its numbers, and its digest.

A recording is stale when something that can change its numbers has changed, and only then
(``chapter.staleness``). What can change them is the code its notebook's deciding cells run:

- **definitions, by name.** Starting from every identifier the deciding cells mention, a top-level
  function or class of a ``cudalab`` module is reached when a reached piece of code mentions its
  name (a call, an attribute ``x.name``, an import, a word of a string such as a recipe's name in
  ``getattr(lab, "fw_blocked")`` or ``"module:NAME"``). A module's statements outside its
  definitions run when it is imported, so they are always reached; so are a reached class's own
  statements and its dunder methods (Python calls those itself). The rest of a class's methods are
  reached by name, as functions are. Matching by name over-approximates (every ``run`` is reached
  once one is), and never misses a call, whatever object it goes through;
- **modules**, those the reached code imports (its packages' ``__init__`` included), or that a whole
  string of it names (a ``python -m`` target, ``"cudalab.labs.fw.cases:NTHU"``);
- **kernels and C references** named by a string literal of reached code, and the headers those
  kernels include: their bytes decide.

A Python file's **code digest** is the sha256 of its reached statements as ``ast`` reads them, with
docstrings dropped: a comment, a docstring, the layout (``ruff format``) or a function no reached
code names leaves it unchanged. A notebook's is the same over its deciding cells (with IPython's
``%``/``!`` lines kept as written). Any other file's is its bytes' sha256.
"""

from __future__ import annotations

import ast
import copy
import functools
import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from cudalab.core.kernels import included_headers
from cudalab.core.paths import KERNELS_DIR, PACKAGE_DIR

PACKAGE = PACKAGE_DIR.name  # "cudalab"
# Files a string literal may name, in kernels_cu/ or (C references) beside the module naming them.
NAMED_SUFFIXES = (".cu", ".cuh", ".c", ".h")
_WORD = re.compile(r"[A-Za-z_]\w*")
_MODULE_STRING = re.compile(rf"({PACKAGE}(?:\.\w+)+)(?::\w+)?")
_IMPORT_FALLBACK = re.compile(rf"^\s*(?:from|import)\s+({PACKAGE}(?:\.\w+)*)", re.MULTILINE)
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def parse(source: str) -> ast.Module | None:
    """Python source, with IPython's magics (``%``, ``!``) blanked; None where it still fails."""
    lines = ["" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines()]
    try:
        return ast.parse("\n".join(lines))
    except SyntaxError:
        return None


# ---- what a piece of code mentions


def _facts(
    node: ast.AST, current: str = "", is_package: bool = False, skip: frozenset[int] = frozenset()
) -> tuple[set[str], set[str], set[str]]:
    """In one walk of ``node``: the identifiers it mentions, the modules it may import (as written,
    relative imports resolved against ``current``) and the file names its strings end with. Nodes
    whose ``id`` is in ``skip`` (docstrings) count for nothing."""
    words: set[str] = set()
    modules: set[str] = set()
    files: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            words.add(n.id)
        elif isinstance(n, ast.Attribute):
            words.add(n.attr)
        elif isinstance(n, ast.alias):
            words.update(_WORD.findall(n.name))
            if n.asname:
                words.add(n.asname)
        elif isinstance(n, ast.keyword) and n.arg:
            words.add(n.arg)
        elif isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in skip:
            words.update(_WORD.findall(n.value))
            if named := _MODULE_STRING.fullmatch(n.value):  # "-m" targets, "module:NAME"
                modules.add(named[1])
            if n.value.endswith(NAMED_SUFFIXES):
                files.add(Path(n.value).name)
        if isinstance(n, ast.Import):
            modules.update(a.name for a in n.names)
        elif isinstance(n, ast.ImportFrom):
            base = n.module or ""
            if n.level:
                anchor = current.split(".")
                anchor = anchor if is_package else anchor[:-1]
                anchor = anchor[: len(anchor) - (n.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            modules.add(base)
            modules.update(f"{base}.{a.name}" for a in n.names)  # a submodule, where it is one
    return words, modules, files


def mentions(node: ast.AST) -> set[str]:
    """Every identifier ``node`` mentions: names, attributes, imported names, keyword arguments, and
    the words of its string literals (a recipe named by a string, ``getattr(x, "name")``)."""
    return _facts(node)[0]


def _with_parents(name: str) -> list[str]:
    """``a.b.c`` -> ``a``, ``a.b``, ``a.b.c``: importing a module runs its packages' ``__init__``."""
    parts = name.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


@functools.lru_cache(maxsize=4096)
def module_file(name: str, package_dir: Path = PACKAGE_DIR) -> Path | None:
    """The file of module ``cudalab.x.y`` (its ``.py`` or its package's ``__init__.py``)."""
    parts = name.split(".")
    if parts[0] != PACKAGE:
        return None
    base = package_dir.joinpath(*parts[1:])
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _ours(modules: Iterable[str], package_dir: Path) -> set[str]:
    """Of module names as written, the ``cudalab`` modules that exist, with their packages."""
    return {
        m
        for name in modules
        if name.split(".")[0] == PACKAGE
        for m in _with_parents(name)
        if module_file(m, package_dir)
    }


def imported(node: ast.AST, current: str = "", is_package: bool = False, package_dir: Path = PACKAGE_DIR) -> set[str]:
    """The ``cudalab`` modules that the ``import``/``from`` statements in ``node`` may load, and those
    a whole string of it names (``"cudalab.labs.fw._ncu_target"`` run as ``python -m``,
    ``"cudalab.labs.fw.cases:NTHU"``); ``current`` resolves relative imports."""
    return _ours(_facts(node, current, is_package)[1], package_dir)


def _named(node: ast.AST) -> set[str]:
    """The file names (``x.cu``) that string literals in ``node`` end with."""
    return _facts(node)[2]


# ---- the reached pieces of one module


def _is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def _without_docstrings(node: ast.AST) -> ast.AST:
    """A copy of ``node`` with every module, class and function docstring dropped."""
    node = copy.deepcopy(node)
    for n in ast.walk(node):
        if isinstance(n, (ast.Module, *_DEFINITIONS)) and n.body and _is_docstring(n.body[0]):
            n.body = n.body[1:] or [ast.Pass()]
    return node


def _docstrings(tree: ast.Module) -> frozenset[int]:
    """The ``id`` of every module, class and function docstring's string in ``tree``."""
    return frozenset(
        id(n.body[0].value)
        for n in ast.walk(tree)
        if isinstance(n, (ast.Module, *_DEFINITIONS)) and n.body and _is_docstring(n.body[0])
    )


def _dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")


def reached_pieces(tree: ast.Module, names: set[str] | frozenset[str]) -> list[ast.stmt]:
    """The top-level statements of ``tree`` that run when it is imported or that ``names`` reach: every
    statement but a definition, a module's dunder function (``__getattr__``), a definition whose
    name is in ``names``, and of a reached class its own statements, its dunder methods and the
    methods whose names are in ``names``. Docstrings dropped; source order kept."""
    body = _without_docstrings(tree).body
    kept: list[ast.stmt] = []
    for stmt in body:
        if not isinstance(stmt, _DEFINITIONS) or (not isinstance(stmt, ast.ClassDef) and _dunder(stmt.name)):
            kept.append(stmt)
        elif stmt.name in names:
            if isinstance(stmt, ast.ClassDef):
                stmt.body = [
                    s for s in stmt.body if not isinstance(s, _DEFINITIONS) or s.name in names or _dunder(s.name)
                ] or [ast.Pass()]
            kept.append(stmt)
    return kept


@functools.lru_cache(maxsize=4096)
def code_digest(text: str, names: frozenset[str]) -> str:
    """A Python module's code digest: its reached pieces (``reached_pieces``) as ``ast`` dumps them,
    so comments, docstrings, the layout and definitions nothing reaches do not count. Source that
    does not parse is digested as written."""
    tree = parse(text)
    if tree is None:
        return _sha256(text.encode())
    return _sha256(ast.dump(ast.Module(body=reached_pieces(tree, names), type_ignores=[])).encode())


def cells_digest(cells: list[str]) -> str:
    """A notebook's code digest over its deciding cells: each cell as ``ast`` dumps it (docstrings
    dropped), with its IPython magic lines as written; a cell that does not parse, as written."""
    parts = []
    for source in cells:
        tree = parse(source)
        magics = [line for line in source.splitlines() if line.lstrip().startswith(("%", "!"))]
        parts.append(source if tree is None else ast.dump(_without_docstrings(tree)) + "\n".join(magics))
    return _sha256("\n\0".join(parts).encode())


# ---- the reach of a notebook


@dataclass(frozen=True)
class Reach:
    """What the deciding cells reach: the ``cudalab`` modules (name -> file), every name reached code
    mentions, and the kernel files, C references and headers it names."""

    modules: dict[str, Path]
    names: frozenset[str]
    files: frozenset[Path]


@dataclass(frozen=True)
class _Unit:
    """A piece of a module reached once every name of ``requires`` is (none: when imported), and
    what it mentions, imports and names."""

    requires: tuple[str, ...]
    mentions: frozenset[str]
    imports: frozenset[str]
    named: frozenset[str]


def _units(tree: ast.Module, module: str, is_package: bool, package_dir: Path) -> list[_Unit]:
    """A module's pieces as ``reached_pieces`` splits them, each with the names that reach it."""
    skip = _docstrings(tree)

    def unit(requires: tuple[str, ...], *nodes: ast.AST) -> _Unit:
        words, modules, files = set(), set(), set()
        for node in nodes:
            w, m, f = _facts(node, module, is_package, skip)
            words |= w
            modules |= m
            files |= f
        return _Unit(requires, frozenset(words), frozenset(_ours(modules, package_dir)), frozenset(files))

    found = []
    for stmt in tree.body:
        if not isinstance(stmt, _DEFINITIONS):
            found.append(unit((), stmt))
        elif not isinstance(stmt, ast.ClassDef):  # a module's __getattr__ is Python's to call
            found.append(unit(() if _dunder(stmt.name) else (stmt.name,), stmt))
        else:
            own = [*stmt.bases, *stmt.keywords, *stmt.decorator_list]
            own += [s for s in stmt.body if not isinstance(s, _DEFINITIONS)]
            found.append(unit((stmt.name,), *own))
            methods = [s for s in stmt.body if isinstance(s, _DEFINITIONS)]
            found += [unit((stmt.name,) if _dunder(m.name) else (stmt.name, m.name), m) for m in methods]
    return found


@functools.lru_cache(maxsize=1024)
def _module_units(text: str, module: str, is_package: bool, package_dir: Path) -> tuple[_Unit, ...]:
    """``_units`` of a module's source, parsed once per text (a check reaches the same modules for
    every chapter)."""
    return tuple(_units(parse(text) or ast.Module(body=[], type_ignores=[]), module, is_package, package_dir))


def reach(cells: list[str], package_dir: Path = PACKAGE_DIR, kernels_dir: Path = KERNELS_DIR) -> Reach:
    """The reach of a notebook's deciding ``cells`` (all of each cell counts: a function a cell
    defines is a later cell's to call), found by a fixpoint over names and modules."""
    names: set[str] = set()
    todo: set[str] = set()
    file_names: dict[Path | None, set[str]] = {None: set()}  # folder of the naming module -> names
    for source in cells:
        tree = parse(source)
        if tree is None:  # a cell ast cannot read: its imports by pattern, its words as names
            todo |= {
                m for n in _IMPORT_FALLBACK.findall(source) for m in _with_parents(n) if module_file(n, package_dir)
            }
            names |= set(_WORD.findall(source))
            continue
        names |= mentions(tree)
        todo |= imported(tree, package_dir=package_dir)
        file_names[None] |= _named(tree)
    modules: dict[str, Path] = {}
    pending: list[tuple[Path, _Unit]] = []
    while True:
        for name in todo - modules.keys():
            path = modules[name] = module_file(name, package_dir)
            pending += [
                (path.parent, u) for u in _module_units(path.read_text(), name, path.name == "__init__.py", package_dir)
            ]
        reached = [(folder, u) for folder, u in pending if names.issuperset(u.requires)]
        if not reached:
            break
        pending = [(folder, u) for folder, u in pending if not names.issuperset(u.requires)]
        for folder, u in reached:
            names |= u.mentions
            todo |= u.imports
            file_names.setdefault(folder, set()).update(u.named)
    files: set[Path] = set()
    for folder, wanted in file_names.items():
        files |= {kernels_dir / n for n in wanted if (kernels_dir / n).is_file()}
        if folder is not None and wanted:
            files |= {p for p in folder.rglob("*") if p.name in wanted and p.suffix in NAMED_SUFFIXES and p.is_file()}
    headers = {h for k in files if k.suffix == ".cu" and k.is_relative_to(kernels_dir) for h in included_headers(k)}
    return Reach(modules, frozenset(names), frozenset(files | headers))
