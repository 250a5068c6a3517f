"""The mutants of ``tests/data/mutants/*.yaml``: mistakes a student could make in the files the
handouts give, and the cheats public kernel graders met, each as edits of today's reference file.
``materialize`` writes them as a class (one folder per mutant, and an unchanged copy of each file
a mutant edits, named ``copy_<file>``) for the grader to grade."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from cudalab.core.paths import KERNELS_DIR

MUTANTS_DIR = Path(__file__).resolve().parent / "data" / "mutants"


@dataclass(frozen=True)
class Mutant:
    name: str
    file: str
    mistake: str
    edits: tuple[tuple[str, str], ...]

    def source(self) -> str:
        """The reference file with this mutant's edits; a ``ValueError`` where an edit's text does not
        occur exactly once (the reference moved on: the mutant must be rewritten, never skipped)."""
        text = (KERNELS_DIR / self.file).read_text()
        for find, replace in self.edits:
            count = text.count(find)
            if count != 1:
                raise ValueError(f"{self.name}: {find[:60]!r} occurs {count} times in {self.file}, not once")
            text = text.replace(find, replace)
        return text


def load() -> list[Mutant]:
    """Every mutant, in file order."""
    out = []
    for path in sorted(MUTANTS_DIR.glob("*.yaml")):
        for m in yaml.safe_load(path.read_text()):
            edits = tuple((e["find"], e["replace"]) for e in m["edits"])
            out.append(Mutant(m["name"], m["file"], m["mistake"], edits))
    return out


def copy_name(file: str) -> str:
    """The folder of the unchanged copy of ``file`` in the class."""
    return "copy_" + file.replace(".", "_")


def materialize(dest: Path, mutants: list[Mutant] | None = None) -> Path:
    """The class: a folder per mutant holding its file, and one per edited file holding it unchanged."""
    mutants = load() if mutants is None else mutants
    for m in mutants:
        (dest / m.name).mkdir(parents=True)
        (dest / m.name / m.file).write_text(m.source())
    for file in sorted({m.file for m in mutants}):
        (dest / copy_name(file)).mkdir(parents=True)
        (dest / copy_name(file) / file).write_text((KERNELS_DIR / file).read_text())
    return dest
