"""What a comparison report compares: recordings of GPUs, or a profile's published numbers.

``build_report.py --compare A B [C ...]`` names its sources in three ways: a folder under
``results/`` (``results/<gpu>/<profile>``, or ``<gpu>/<profile>`` relative to it), part of a GPU's
name as ``--from`` takes it (the recording of the profile on that GPU), or ``lab`` (the profile's
published numbers). ``resolve`` turns them into ``Source`` objects and refuses, with one sentence
each, a source that does not exist, a single source, the same recording twice and sources with no
chapter in common, before anything is written.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from cudalab.chapter import catalog, recorded
from cudalab.chapter.profiles import Profile, load_profile
from cudalab.chapter.recorded import PROVENANCE, RECORDINGS, SCORECARD, SUMMARY
from cudalab.core.errors import CudalabError, NoRecordedResults

LAB = "lab"


@dataclass
class Source:
    """One side of a comparison: a recording (``path``) or a profile's published numbers."""

    label: str  # as every table, figure and sentence of the report names it
    kind: str  # "recording" or "lab"
    profile: str
    path: Path | None = None
    gpu_name: str = ""
    published_profile: Profile | None = field(default=None, repr=False)

    @property
    def is_lab(self) -> bool:
        return self.kind == LAB

    def chapters(self) -> list[str]:
        """The chapters this source has numbers for, by id."""
        if self.is_lab:
            prof = self.published_profile
            return [c.id for c in catalog.discover() if prof is not None and _published_tables(prof, c.id)]
        return sorted(p.parent.name for p in self.path.glob(f"*/{PROVENANCE}"))

    def axes(self, chapter: str) -> dict[str, list[str]]:
        """Each recorded table's axis columns (a recording's provenance; none for the lab)."""
        if self.is_lab:
            return {}
        path = self.path / chapter / PROVENANCE
        return json.loads(path.read_text()).get("axes", {}) if path.is_file() else {}

    def table(self, chapter: str, name: str) -> pd.DataFrame | None:
        """A recorded table, or None where this source did not record it."""
        if self.is_lab:
            return None
        path = self.path / chapter / f"{name}.csv"
        return pd.read_csv(path, low_memory=False) if path.is_file() else None

    def headlines(self, chapter: str) -> list[dict[str, Any]]:
        """The chapter's recorded headlines (``summary.json``); none for the lab."""
        if self.is_lab:
            return []
        path = self.path / chapter / SUMMARY
        return json.loads(path.read_text()) if path.is_file() else []

    def scorecard(self, chapter: str) -> dict[str, Any]:
        """The chapter's recorded summary row (``scorecard.json``), or {}."""
        if self.is_lab:
            return {}
        path = self.path / chapter / SCORECARD
        return json.loads(path.read_text()) if path.is_file() else {}

    def shown(self, chapter: str) -> str:
        """How the chapter's pages name this source: a recording by its label; the lab by the labs
        and GPUs of the chapter's own published tables ("lab 001, NTHU course cluster GPU (not
        named) (published)"), since each chapter draws on its own lab."""
        if not self.is_lab:
            return self.label
        seen = []
        for frame in self.published(chapter).values():
            lab = frame.attrs.get("where", "").split(",")[0]
            entry = f"{lab}, {frame.attrs.get('gpu', '')}".strip(", ")
            if entry not in seen:
                seen.append(entry)
        return f"{'; '.join(seen)} (published)" if seen else self.label

    def published(self, chapter: str) -> dict[str, pd.DataFrame]:
        """The lab's published tables of the chapter (the lab source only), by name."""
        if not self.is_lab or self.published_profile is None:
            return {}
        return _published_tables(self.published_profile, chapter)


def _published_tables(prof: Profile, chapter: str) -> dict[str, pd.DataFrame]:
    """The profile's published tables of a chapter, as frames (``attrs``: coordinates, where)."""
    cfg = prof.chapter(chapter)
    tables = cfg.published if isinstance(cfg.published, dict) else {"": cfg.published} if cfg.published else {}
    out = {}
    for name, table in tables.items():
        frame = pd.DataFrame(table.values())
        if len(frame):
            frame.attrs.update(
                coordinates=list(table.coordinates), where=f"lab {table.lab}, {table.where}", gpu=table.gpu
            )
            out[name or "published"] = frame
    return out


def _short_gpu(name: str) -> str:
    """'NVIDIA H100 80GB HBM3' -> 'H100 80GB HBM3'; 'NVIDIA GeForce GTX 680' -> 'GeForce GTX 680'."""
    return name.removeprefix("NVIDIA ").strip() or name


def recording_source(path: Path) -> Source:
    """A recording folder (``results/<gpu>/<profile>``) as a side of a comparison, labelled as the
    comparison report labels it: 'H100 80GB HBM3, h100'."""
    rec = recorded._read(path)  # noqa: SLF001 - the one reader of recordings.json
    return Source(f"{_short_gpu(rec.gpu_name)}, {rec.profile}", "recording", rec.profile, path.resolve(), rec.gpu_name)


def _as_folder(text: str, results: Path, profile: str | None) -> Path | None:
    """The recording folder ``text`` names (itself, or under ``results``), or None if it names none.
    A GPU's folder (``results/<gpu>``) names its recording of ``profile``."""
    if "/" in text and not any(c.is_dir() for c in (Path(text), results / text)):
        raise NoRecordedResults(f"no recording at {text} (nor at {results / text})")
    for candidate in (Path(text), results / text):
        if not candidate.is_dir():
            continue
        if (candidate / RECORDINGS).is_file() or any(candidate.glob(f"*/{PROVENANCE}")):
            return candidate
        if profile and (candidate / profile / RECORDINGS).is_file():
            return candidate / profile
        raise NoRecordedResults(
            f"{text} is a folder but no recording"
            + (f" (and holds no recording of profile {profile!r})" if profile else "")
            + "; give results/<gpu>/<profile>"
        )
    return None


def resolve(names: list[str], results: Path, profile: str | None) -> list[Source]:
    """The sources named, in order, each checked; ``profile`` is the one that ``lab`` and a GPU's
    name refer to (``--gpu``), else that of the first folder named, else the default profile."""
    if len(names) < 2:
        raise CudalabError(f"--compare needs at least two recordings to compare, got {len(names)}: {' '.join(names)}")
    folders: dict[str, Path] = {}
    for text in names:
        if text != LAB and (folder := _as_folder(text, results, profile)) is not None:
            folders[text] = folder
    if profile is None:
        first = next(iter(folders.values()), None)
        profile = recording_source(first).profile if first is not None else "gtx680"
    sources = []
    for text in names:
        if text == LAB:
            prof = load_profile(profile)
            gpu = prof.device.name if prof.device else "the lab GPU"
            sources.append(Source(f"{gpu} (published, {profile})", LAB, profile, published_profile=prof))
        elif text in folders:
            sources.append(recording_source(folders[text]))
        else:
            rec, _ = recorded.find(profile, results, text)  # raises, naming what is recorded
            sources.append(recording_source(rec.path))
    seen: set[str] = set()
    for s in sources:
        key = str(s.path) if s.path else f"lab:{s.profile}"
        if key in seen:
            raise CudalabError(f"--compare names the same source twice ({s.label}); name two different ones")
        seen.add(key)
    labels = [s.label for s in sources]
    for s in sources:  # two recordings of one GPU and profile in different folders stay apart
        if labels.count(s.label) > 1 and s.path is not None:
            s.label = f"{s.label} ({s.path.name})"
    if not common_chapters(sources):
        have = "; ".join(f"{s.label}: {', '.join(s.chapters()) or 'none'}" for s in sources)
        raise CudalabError(f"the sources have no chapter in common ({have})")
    return sources


def common_chapters(sources: list[Source]) -> list[str]:
    """The chapters every source has numbers for, in the book's order."""
    sets = [set(s.chapters()) for s in sources]
    both = set.intersection(*sets) if sets else set()
    return [c.id for c in catalog.discover() if c.id in both]
