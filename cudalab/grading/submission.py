"""A student's submission, checked before anything of it compiles or runs.

A submission is a folder of ``.cu`` files named like the project's kernel files
(``fw_blocked.cu``, ``mm_02_footprint.cu``), each standing in for the file of the same name, and
``.cuh`` headers of its own. It is untrusted input, so ``check`` reads it as text only and
refuses, one reason per file, what could reach beyond it:

- a file that is not ``.cu`` or ``.cuh``, or whose name has path parts (``../x.cu``, ``/abs.cu``),
  or that is a link (it could point anywhere on the machine);
- a ``.cu`` file that replaces no kernel file of the project (there is nothing to measure it
  beside);
- an ``#include`` that does not resolve inside the submission's folder or to a project kernel
  header: a quoted path with folders or ``..``, an absolute path, a computed include (``#include
  MACRO``), or a system header named with a path (``<../../x>``). The same holds for every other
  way a source makes the compiler open or look for a file (``#include_next``, ``#import``,
  ``#embed``, ``__has_include``), and a ``GCC dependency`` pragma is refused outright. They are
  found as the preprocessor finds them (``grading.directives``: spliced lines, comments as spaces,
  so ``#/**/include`` is one), not by how a line looks. No compiler message can then print a file
  of the grading machine, nor say whether one exists.

What is accepted comes back with each file's sha256, as the report's first page names it.
``stage`` copies what was accepted where it compiles for one build or grading run: never into
``kernels_cu/`` and never back into the student's folder. The copy holds the student's accepted
files and the project's kernel headers they did not bring (``add_min.cuh``); every compiler here
puts a kernel file's own folder on its include path, so the copy compiles on its own and reads
nothing else of the project.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from cudalab.core.errors import CudalabError
from cudalab.core.paths import KERNELS_DIR
from cudalab.grading.directives import FileReference, file_references

SUFFIXES = (".cu", ".cuh")
MAX_FILE_BYTES = 1 << 20  # a kernel file larger than 1 MiB is not a student's kernel
_QUOTED = re.compile(r'^"(?P<name>[^"]+)"')
_ANGLED = re.compile(r"^<(?P<name>[^>]+)>")
# A system header's name: letters, digits, dots, dashes, underscores, and the toolkit's own
# sub-folders (``cuda/std/cstdint``), never a leading slash or a ``..`` part.
_SYSTEM_NAME = re.compile(r"^[A-Za-z0-9_.+-]+(/[A-Za-z0-9_.+-]+)*$")


@dataclass(frozen=True)
class Refusal:
    """A file of a submission that will not be compiled, and why (one line, no machine path)."""

    name: str
    reason: str


@dataclass
class Submission:
    """What ``check`` accepted: ``kernels`` (each ``.cu`` file name -> the project kernel file it
    stands in for), ``headers`` (its own ``.cuh`` files), ``sha256`` (every accepted file's), and
    ``refused`` (each refused file with its reason). ``data``: each accepted file's bytes as they were
    read once, checked and hashed: ``stage`` writes these, never the folder's file again (which the
    student could have changed since the check)."""

    folder: Path
    kernels: dict[str, Path] = field(default_factory=dict)
    headers: list[str] = field(default_factory=list)
    sha256: dict[str, str] = field(default_factory=dict)
    refused: list[Refusal] = field(default_factory=list)
    data: dict[str, bytes] = field(default_factory=dict, repr=False)

    @property
    def ok(self) -> bool:
        """Something to compile and nothing refused."""
        return bool(self.kernels) and not self.refused

    def stage(self, dest: Path) -> Path:
        """``stage(self, dest)``: the accepted files, as they were checked, copied to ``dest``."""
        return stage(self, dest)


def plain_name(name: str) -> str | None:
    """Why a file name is refused (path parts, an absolute path, a hidden or odd name), or None."""
    if not name or name in (".", ".."):
        return "an empty name"
    if "/" in name or "\\" in name or Path(name).is_absolute():
        return f"the name {name!r} has path parts: submit plain file names"
    if name.startswith(".") or not re.fullmatch(r"[A-Za-z0-9_.+-]+", name):
        return f"the name {name!r} is not a plain file name (letters, digits, '_', '-', '.')"
    if not name.endswith(SUFFIXES):
        return f"{name} is not a .cu or .cuh file"
    return None


def include_problem(rest: str, own: set[str], project: set[str], kind: str = "include") -> str | None:
    """Why one ``#include`` line (what follows ``#include``; ``kind``: or ``#import``, ``#embed``,
    ``__has_include(``, ...) is refused, or None: a quoted name must be a file of the submission
    (``own``) or a project kernel header (``project``); an angled one a toolkit header named
    without ``..``; anything else (a macro) is refused."""
    label = kind if kind.startswith("__") else f"#{kind}"
    rest = rest.strip()
    quoted, angled = _QUOTED.match(rest), _ANGLED.match(rest)
    if quoted:
        name = quoted.group("name")
        if name in own or name in project:
            return None
        if "/" in name or "\\" in name or name.startswith("."):
            return f'{label} "{name}" names a path: include only files of the submission or the project\'s headers'
        return f'{label} "{name}": no such file in the submission nor among the project\'s kernel headers'
    if angled:
        name = angled.group("name")
        parts = name.split("/")
        if _SYSTEM_NAME.match(name) and ".." not in parts:
            return None
        return f"{label} <{name}> names a path outside the toolkit's headers"
    return f"a computed {label} (a macro, not a quoted or angled name) is refused: name the header"


def reference_problem(ref: FileReference, own: set[str], project: set[str]) -> str | None:
    """Why a place where a source names a file (``directives.file_references``) is refused, or
    None. A ``GCC dependency`` pragma asks whether any file of the machine exists: always refused."""
    if ref.kind == "pragma dependency":
        return "a GCC dependency pragma names a file of the machine: refused"
    return include_problem(ref.rest, own, project, ref.kind)


def project_headers(kernels_dir: Path = KERNELS_DIR) -> set[str]:
    """The project's kernel headers a submission may include (``add_min.cuh``, ...)."""
    return {p.name for p in kernels_dir.glob("*.cuh")}


def _file_problem(path: Path, kernels_dir: Path) -> str | None:
    """Why a file of the folder is refused before its text is read, or None."""
    name = path.name
    why = plain_name(name)
    if why is None and path.is_symlink():
        return f"{name} is a link: submit the file itself"
    if why is None and not path.is_file():
        return f"{name} is not a file"
    if why is None and name.endswith(".cu") and not (kernels_dir / name).is_file():
        return f"{name} replaces no kernel file of the project (name it as the file it stands in for)"
    return why


def _read_once(path: Path) -> bytes | str:
    """A file's bytes, read once and never through a link (a file swapped for a link after its
    check is refused here), at most ``MAX_FILE_BYTES``; the reason it is refused otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as exc:
        return f"{path.name} cannot be read ({exc.strerror})"
    with os.fdopen(fd, "rb") as f:
        data = f.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        return f"{path.name} is over {MAX_FILE_BYTES >> 20} MiB"
    return data


def check(folder: str | Path, kernels_dir: Path = KERNELS_DIR) -> Submission:
    """Read a submission folder as text and sort its files into accepted and refused (see the
    module docstring). Nothing is compiled or run; the folder is not written to."""
    root = Path(folder)
    sub = Submission(root)
    if not root.is_dir():
        sub.refused.append(Refusal(str(folder), "not a folder"))
        return sub
    project = project_headers(kernels_dir)
    entries = sorted(root.iterdir(), key=lambda p: p.name)
    reasons: dict[str, str] = {}
    refs: dict[str, list[FileReference]] = {}  # where each readable file names a file
    data: dict[str, bytes] = {}  # each file read once: what is checked is what is hashed and staged
    for path in entries:
        why = _file_problem(path, kernels_dir)
        raw = _read_once(path) if why is None else why
        if isinstance(raw, bytes):
            data[path.name] = raw
            refs[path.name] = file_references(raw.decode("utf-8", errors="replace"))
        else:
            reasons[path.name] = raw
    # A file may include the project's headers and the submission's own headers that are accepted
    # themselves; refusing a header can refuse what includes it, so repeat until nothing changes.
    changed = True
    while changed:
        changed = False
        own = {n for n in refs if n.endswith(".cuh") and n not in reasons}
        for name, named in refs.items():
            if name in reasons:
                continue
            why = next((w for ref in named if (w := reference_problem(ref, own, project))), None)
            if why is not None:
                reasons[name], changed = why, True
    for path in entries:
        name = path.name
        if name in reasons:
            sub.refused.append(Refusal(name, reasons[name]))
            continue
        sub.sha256[name] = hashlib.sha256(data[name]).hexdigest()
        sub.data[name] = data[name]
        if name.endswith(".cu"):
            sub.kernels[name] = kernels_dir / name
        else:
            sub.headers.append(name)
    if not sub.kernels and not sub.refused:
        sub.refused.append(Refusal(str(folder), "no .cu file named like one of the project's kernel files"))
    return sub


STAGED_MARK = ".cudalab-staged"


def stage(sub: Submission, dest: Path) -> Path:
    """Copy ``sub``'s accepted files, and the project headers they may include, to ``dest`` (created,
    and emptied of an earlier copy of this submission); return ``dest``."""
    dest = Path(dest)
    if dest.resolve() == KERNELS_DIR.resolve() or KERNELS_DIR.resolve() in dest.resolve().parents:
        raise CudalabError("a submission is staged outside kernels_cu/ (the reference files are never replaced)")
    if dest.exists():
        if not (dest / STAGED_MARK).is_file():
            raise CudalabError(f"{dest} exists and was not staged by cudalab: choose another output folder")
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    (dest / STAGED_MARK).write_text("a copy of a submission, made by cudalab; rebuilt by each run\n")
    for name in sub.sha256:  # the bytes that were checked, never the folder's file read again
        (dest / name).write_bytes(sub.data[name])
    for header in KERNELS_DIR.glob("*.cuh"):
        if not (dest / header.name).exists():
            shutil.copyfile(header, dest / header.name)
    return dest
