"""The notebook's handle on its chapter: measure here, or replay what was recorded.

A chapter notebook opens its chapter once, then asks for each table by name
with the function that measures it. On a GPU the function runs and the tidy
table is saved with its provenance; without one, the table recorded by this
same pipeline on a GPU (``results/<profile>/<chapter>/``) is loaded instead
and the chapter says so. The notebook's story is the same either way.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

import pandas as pd

from cudalab import gpu
from cudalab.paths import BUILD_DIR, RESULTS_DIR
from cudalab.profiles import Profile, load_profile, profile_for_gpu

DEFAULT_REPLAY_PROFILE = "gtx680"
PROVENANCE = "provenance.json"


class NoRecordedResults(FileNotFoundError):
    """Replay was asked for a table that no GPU run recorded."""


def resolve_profile_name(profile: str) -> str:
    """``auto`` means the present GPU's profile, or the lab's own profile for replay."""
    if profile != "auto":
        return profile
    name = gpu.gpu_name()
    return profile_for_gpu(name) if name else DEFAULT_REPLAY_PROFILE


def resolve_mode(mode: str) -> str:
    if mode not in ("auto", "measure", "replay"):
        raise ValueError(f"mode must be 'auto', 'measure' or 'replay', got {mode!r}")
    if mode == "auto":
        return "measure" if gpu.gpu_available() else "replay"
    if mode == "measure" and not gpu.gpu_available():
        raise RuntimeError("mode='measure' needs a CUDA device and CuPy; none is present here")
    return mode


@dataclass
class Chapter:
    id: str
    profile: Profile
    mode: str
    data_dir: Path
    recorded_dir: Path
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def out_dir(self) -> Path:
        return self.data_dir / self.id

    @property
    def provenance(self) -> dict[str, Any]:
        """Who measured this chapter's tables, when, where and with which parameters."""
        return json.loads((self.out_dir / PROVENANCE).read_text())

    def _start(self) -> None:
        self.out_dir.mkdir(parents=True, exist_ok=True)
        if self.mode == "measure":
            info = {**gpu.provenance(), "profile": self.profile.name, "chapter": self.id,
                    "parameters": self.params, "tables": []}
            (self.out_dir / PROVENANCE).write_text(json.dumps(info, indent=2, default=str))
        else:
            src = self.recorded_dir / self.id / PROVENANCE
            if not src.is_file():
                raise NoRecordedResults(
                    f"no recorded results for chapter {self.id} of profile {self.profile.name!r} in "
                    f"{self.recorded_dir}; record them on a GPU host with "
                    f"`python build_report.py --gpu {self.profile.name} --record`")
            shutil.copyfile(src, self.out_dir / PROVENANCE)

    def table(self, name: str, measure: Callable[[], pd.DataFrame], dtype: Optional[dict[str, Any]] = None) -> pd.DataFrame:
        """The tidy table ``name``: measured now (and saved), or replayed from the recording.

        ``dtype`` pins columns whose text must survive the CSV round trip (e.g. "9.0")."""
        path = self.out_dir / f"{name}.csv"
        if self.mode == "measure":
            frame = measure()
            frame.to_csv(path, index=False)
            info = self.provenance
            info["tables"] = sorted(set(info["tables"]) | {name})
            (self.out_dir / PROVENANCE).write_text(json.dumps(info, indent=2, default=str))
            return frame
        src = self.recorded_dir / self.id / f"{name}.csv"
        if not src.is_file():
            raise NoRecordedResults(f"table {name!r} of chapter {self.id} was not recorded in {src.parent}; "
                                    f"record it on a GPU host with `python build_report.py --gpu "
                                    f"{self.profile.name} --record`")
        shutil.copyfile(src, path)
        return pd.read_csv(src, dtype=dtype)

    def tables(self, names: tuple[str, ...], measure: Callable[[], tuple[pd.DataFrame, ...]]) -> tuple[pd.DataFrame, ...]:
        """Several tables that one measurement produces together (e.g. GPU and CPU timings)."""
        produced: dict[str, pd.DataFrame] = {}
        if self.mode == "measure":
            frames = measure()
            if len(frames) != len(names):
                raise ValueError(f"measurement returned {len(frames)} tables for names {names}")
            produced = dict(zip(names, frames))
        return tuple(self.table(name, lambda name=name: produced[name]) for name in names)

    # ---- the lab's side of the comparison

    def published_table(self, name: Optional[str] = None) -> Optional[pd.DataFrame]:
        """A lab's published numbers for this chapter as a tidy frame (``attrs``: source, gpu,
        note, label), or None; ``name`` picks one where the chapter draws on several labs."""
        pub = self.profile.chapter(self.id).published_table(name)
        if pub is None:
            return None
        frame = pd.DataFrame(pub.rows)
        frame.attrs.update(source=pub.source, gpu=pub.gpu, note=pub.note,
                           label=f"{pub.gpu} (published, {pub.source})")
        return frame

    @property
    def published(self) -> Optional[pd.DataFrame]:
        """The chapter's (single) published table."""
        return self.published_table()

    @property
    def published_label(self) -> str:
        frame = self.published
        return frame.attrs["label"] if frame is not None else ""

    @property
    def gpu_label(self) -> str:
        """The GPU these tables were measured on, as a legend label."""
        name = self.provenance.get("gpu_name") or "this GPU"
        return f"{name} (measured)" if self.mode == "measure" else f"{name} (recorded)"

    def banner(self):
        """A Markdown note on where this chapter's numbers come from."""
        from IPython.display import Markdown

        p = self.provenance
        who = (f"{p.get('gpu_name')} (compute capability {p.get('compute_capability')}, driver "
               f"{p.get('driver_version')}, CUDA {p.get('cuda_runtime')}, CuPy {p.get('cupy')})")
        commit = f"`{str(p.get('git_commit'))[:10]}`" + (" (uncommitted changes)" if p.get("git_dirty") else "")
        if self.mode == "measure":
            text = f"**Data: measured now** on {who}, {p.get('date_utc')}, commit {commit}."
        else:
            text = (f"**Data: replayed.** No CUDA device here, so this chapter shows the results that this "
                    f"pipeline recorded on {who} on {p.get('date_utc')}, commit {commit}.")
        lab = self.profile.device.name if self.profile.device else "none"
        return Markdown(f"> {text}  \n> Profile `{self.profile.name}`; lab GPU: {lab}.")


def open_chapter(chapter_id: str, profile: str = "auto", mode: str = "auto", data_dir: str = "",
                 recorded_dir: str = "", params: Optional[dict[str, Any]] = None) -> Chapter:
    """Open a chapter for its notebook; see the module docstring."""
    mode = resolve_mode(mode)
    name = resolve_profile_name(profile)
    prof = load_profile(name, gpu_max_threads=gpu.attributes()["MaxThreadsPerBlock"] if mode == "measure" else None)
    data = Path(data_dir) if data_dir else BUILD_DIR / "lab" / prof.name / "data"
    recorded = Path(recorded_dir) if recorded_dir else RESULTS_DIR / prof.name
    chapter = Chapter(chapter_id, prof, mode, data, recorded, dict(params or {}))
    chapter._start()
    return chapter
