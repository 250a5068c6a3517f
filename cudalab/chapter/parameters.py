"""A chapter's parameters, checked against their declared types before any work.

A chapter notebook declares its parameters once, in its cell tagged ``parameters``, with a type
annotation each (``sizes: list[int] = [256, 512, 1024]``). Values come from three places: that
cell itself (JupyterLab), papermill (``-p`` passes text, ``-y`` YAML, ``-r`` raw Python) and a
profile's YAML (``build_report.py``). All three go through ``check`` here, so a wrong value gets
the same one message wherever it was given, before a kernel is compiled or a sweep starts.

The rules come from the declaration, never from a per-notebook list:

- the value must be of the declared type; text that parses as that type is converted
  (``"[256, 2048]"`` -> ``[256, 2048]`` for ``list[int]``, ``"60"`` -> ``60.0`` for ``float``);
- a list of numbers is a sweep grid: not empty, every value positive;
- an ``int`` is a size, count or shape: positive (``seed`` only needs to be >= 0);
- a ``float`` (a time in seconds, a fraction) is never negative; 0 is allowed ("no limit");
- ``mode`` is one of ``MODES``.

A problem reads ``name: got VALUE, expected WHAT`` and ends with how to pass the value right.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import TypeAdapter, ValidationError

from cudalab.core.errors import ParameterError

MODES = ("auto", "measure", "replay")
# Parameters allowed to be 0 although declared ``int``: a random seed.
NON_NEGATIVE_INTS = ("seed",)
# The types a parameters cell may annotate with, by the names it writes them with.
_TYPE_NAMES: dict[str, Any] = {"int": int, "float": float, "str": str, "bool": bool, "list": list, "dict": dict}
# papermill's injected-parameters cell starts with exactly this line (its translator's comment).
_INJECTED_HEADER = "# Parameters"


@dataclass(frozen=True)
class Declared:
    """One parameter as its notebook declares it: name, annotation (``list[int]``) and default's text."""

    name: str
    type_name: str
    default: str = ""

    @property
    def python_type(self) -> Any:
        """The annotation as a Python type (``list[int]``); None where it is not one we know."""
        try:
            return eval(self.type_name.replace(" ", ""), {"__builtins__": {}}, _TYPE_NAMES)  # noqa: S307
        except Exception:
            return None

    @property
    def expected(self) -> str:
        """What a value must be, in words: the type and the rule the declaration implies."""
        t = self.type_name.replace(" ", "")
        if t in ("list[int]", "list[float]"):
            what = "integers" if t == "list[int]" else "numbers"
            return f"{t}: a non-empty list of positive {what}"
        if t == "int":
            return "int: an integer >= 0" if self.name in NON_NEGATIVE_INTS else "int: a positive integer"
        if t == "float":
            return "float: a number >= 0"
        if t == "bool":
            return "bool: True or False"
        if self.name == "mode":
            return f"one of {', '.join(repr(m) for m in MODES)}"
        return t

    def hint(self, where: str) -> str:
        """How to give this parameter right: in a profile's YAML (``where`` names the section), or
        to papermill (a list as YAML with ``-y`` or as Python with ``-r``; ``-p`` gives text)."""
        example = self.default or "..."
        if where:
            return f"in the profile's YAML write it as `{self.name}: {example}`"
        if self.type_name.replace(" ", "").startswith(("list", "dict")):
            return (
                f'with papermill pass a list as YAML, -y "{self.name}: {example}", '
                f'or as Python, -r {self.name} "{example}"'
            )
        plain = example.strip("\"'") or '""'
        return f"with papermill: -p {self.name} {plain}"


def declared_in(source: str) -> dict[str, Declared]:
    """The parameters a ``parameters`` cell declares, in order: each assignment's name, its
    annotation's text (``"None"`` where it has none, as papermill reports it) and its value's text
    (on one line where it was written over several).

    What ``papermill.inspect_notebook`` reads, read with Python's own parser: importing papermill
    imports nbformat and jsonschema, whose optional IRI checker (rfc3987-syntax) builds some forty
    grammars on import, two seconds and more before a chapter's first cell could work (jsonschema
    issue 1428). A test holds the two readings equal for every chapter."""
    declared: dict[str, Declared] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            name, annotation = node.target.id, ast.get_source_segment(source, node.annotation) or "None"
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name, annotation = node.targets[0].id, "None"
        else:
            continue
        default = ast.get_source_segment(source, node.value) or ""
        if "\n" in default:  # a value written over several lines: its text on one
            default = ast.unparse(node.value)
        declared[name] = Declared(name, annotation.strip("\"'"), default)
    return declared


def _given(value: Any) -> str:
    return f"{value!r} ({type(value).__name__})"


def problem(name: str, given: str, expected: str, hint: str) -> str:
    """One problem, in the one form every parameter problem takes."""
    return f"{name}: got {given}, expected {expected}; {hint}"


def _parsed(value: str) -> Any:
    """Text as papermill's ``-p`` gives it, read as a Python literal where it is one."""
    try:
        literal = ast.literal_eval(value.strip())
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return value
    return list(literal) if isinstance(literal, tuple) else literal


def _typed(value: Any, decl: Declared) -> Any:
    """``value`` as the declared type, or ValueError. Text is parsed first; other values must
    already be of the type (an int for a float is fine; a bool is never an int)."""
    python_type = decl.python_type
    if python_type is None:
        return value  # an annotation we cannot check: accepted as given
    adapter = TypeAdapter(python_type)
    if isinstance(value, str) and python_type is not str:
        parsed = _parsed(value)
        if parsed is not value:
            try:
                return adapter.validate_python(parsed, strict=True)
            except ValidationError:
                pass
        try:  # text the literal reader does not take: "true", "yes", "inf"
            return adapter.validate_python(value, strict=False)
        except ValidationError as exc:
            raise ValueError(exc.errors()[0]["msg"]) from None
    try:
        return adapter.validate_python(value, strict=True)
    except ValidationError as exc:
        raise ValueError(exc.errors()[0]["msg"]) from None


def _rule_broken(value: Any, decl: Declared) -> str | None:
    """Why a value of the right type still cannot be used (empty grid, negative size), or None."""
    t = decl.type_name.replace(" ", "")
    if t in ("list[int]", "list[float]"):
        if not value:
            return "an empty list sweeps nothing"
        bad = [v for v in value if v <= 0]
        return f"{bad[0]!r} is not positive" if bad else None
    if t == "int":
        if decl.name in NON_NEGATIVE_INTS:
            return "it is negative" if value < 0 else None
        return "it is not positive" if value <= 0 else None
    if t == "float":
        return "it is negative" if value < 0 else None
    if decl.name == "mode" and value not in MODES:
        return "no such mode"
    return None


def check_one(decl: Declared, value: Any, *, where: str = "") -> tuple[Any, str | None]:
    """``value`` converted to ``decl``'s type, and the problem with it (None if there is none).

    ``where`` prefixes the name (``chapters.01_block_size.params.``) and picks the hint: a
    profile's YAML there, papermill's options in a notebook."""
    name = f"{where}.{decl.name}" if where else decl.name
    try:
        typed = _typed(value, decl)
    except ValueError:
        return value, problem(name, _given(value), decl.expected, decl.hint(where))
    broken = _rule_broken(typed, decl)
    if broken:
        return value, problem(name, f"{typed!r} ({broken})", decl.expected, decl.hint(where))
    return typed, None


def check(
    values: Mapping[str, Any], declared: Mapping[str, Declared], *, where: str = "", chapter: str = ""
) -> tuple[dict[str, Any], list[str]]:
    """The good ``values``, converted to their declared types, and one line per problem: a wrong
    type, a broken rule, or a name the notebook does not declare (``chapter`` names the notebook)."""
    typed: dict[str, Any] = {}
    problems: list[str] = []
    for key, value in values.items():
        decl = declared.get(key)
        if decl is None:
            name = f"{where}.{key}" if where else key
            of = f" of chapter {chapter}" if chapter else ""
            problems.append(
                f"{name}: got {_given(value)}, but there is no such parameter{of}; "
                f"its parameters: {', '.join(declared)}"
            )
            continue
        value, found = check_one(decl, value, where=where)
        if found:
            problems.append(found)
        else:
            typed[key] = value
    return typed, problems


def validated(values: Mapping[str, Any], declared: Mapping[str, Declared], *, chapter: str = "") -> dict[str, Any]:
    """``values`` converted to their declared types; ParameterError listing every problem."""
    typed, problems = check(values, declared, chapter=chapter)
    if problems:
        raise ParameterError("\n".join(problems))
    return typed


def injected_names(namespace: Mapping[str, Any]) -> list[str]:
    """The names papermill injected into a notebook's namespace, in order.

    papermill writes its values as a cell of assignments under the line ``# Parameters``, after
    the notebook's own parameters cell, and injects any name, declared or not. Inside the kernel
    that cell's source is in IPython's input history (``In``), so the names it assigns are read
    from there; a namespace without history (a plain dict) has none."""
    names: list[str] = []
    for source in namespace.get("In") or []:
        if not isinstance(source, str) or source.split("\n", 1)[0].rstrip() != _INJECTED_HEADER:
            continue
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        for node in tree.body:
            targets = (
                node.targets
                if isinstance(node, ast.Assign)
                else [node.target]
                if isinstance(node, ast.AnnAssign)
                else []
            )
            names += [t.id for t in targets if isinstance(t, ast.Name) and t.id not in names]
    return names
