"""The chapters of the report: one notebook each, ordered by their number.

A chapter is ``notebooks/NN_name.ipynb``; its id is the file stem, its title
the notebook's first heading. Nothing else registers it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from cudalab.chapter.parameters import Declared, declared_in
from cudalab.core.errors import ChapterNotFound
from cudalab.core.paths import NOTEBOOKS_DIR

_CHAPTER_FILE = re.compile(r"^(\d\d)_[A-Za-z0-9_]+\.ipynb$")
# A chapter's cells tagged so hold its interactive explorer: for JupyterLab only, left out of the
# report, the handouts and the answer keys (a static document has no kernel to drive a widget).
EXPLORE_TAG = "explore"
# Set to 1 in the environment of the kernels a build runs: an explorer there shows nothing.
BATCH_ENV = "CUDALAB_BATCH"


def interactive_only(cell: dict) -> bool:
    """A cell that holds an explorer (tagged ``explore``)."""
    return EXPLORE_TAG in cell.get("metadata", {}).get("tags", [])


@dataclass(frozen=True)
class ChapterInfo:
    id: str
    number: str
    title: str
    path: Path

    def parameter_types(self) -> dict[str, str]:
        """The notebook's parameters and the type each is annotated with (``list[int]``)."""
        return {name: p.type_name for name, p in self.parameters().items()}

    def parameters(self) -> dict[str, Declared]:
        """The notebook's parameters as its ``parameters`` cell declares them: type and default."""
        return _parameters(self.path)


@cache
def _parameters(path: Path) -> dict[str, Declared]:
    for cell in json.loads(path.read_text())["cells"]:
        if cell["cell_type"] == "code" and "parameters" in cell.get("metadata", {}).get("tags", []):
            return declared_in("".join(cell["source"]))
    return {}


def _title(path: Path) -> str:
    for cell in json.loads(path.read_text())["cells"]:
        if cell["cell_type"] == "markdown":
            for line in "".join(cell["source"]).splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return path.stem


def discover(notebooks_dir: Path = NOTEBOOKS_DIR) -> list[ChapterInfo]:
    chapters = []
    for path in sorted(notebooks_dir.glob("*.ipynb")):
        m = _CHAPTER_FILE.match(path.name)
        if m:
            chapters.append(ChapterInfo(id=path.stem, number=m.group(1), title=_title(path), path=path))
    return chapters


def select(only: list[str] | None, notebooks_dir: Path = NOTEBOOKS_DIR) -> list[ChapterInfo]:
    """Chapters named by number (``01``), id or id prefix; all when ``only`` is empty."""
    chapters = discover(notebooks_dir)
    if not only:
        return chapters
    picked = []
    for key in only:
        hits = [c for c in chapters if c.number == key.zfill(2) or c.id == key or c.id.startswith(key)]
        if not hits:
            raise ChapterNotFound(f"unknown chapter {key!r}; chapters: {', '.join(c.id for c in chapters)}")
        picked += [c for c in hits if c not in picked]
    return sorted(picked, key=lambda c: c.id)


def chapter(chapter_id: str, notebooks_dir: Path = NOTEBOOKS_DIR) -> ChapterInfo:
    """The chapter whose notebook is ``notebooks_dir/<chapter_id>.ipynb``."""
    path = notebooks_dir / f"{chapter_id}.ipynb"
    m = _CHAPTER_FILE.match(path.name)
    if not m or not path.is_file():
        raise ChapterNotFound(f"no chapter notebook {path}")
    return ChapterInfo(id=chapter_id, number=m.group(1), title=_title(path), path=path)
