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
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from cudalab.chapter import awaiting, catalog, declarations, parameters, recorded, staleness
from cudalab.chapter.profiles import Profile, open_profile, resolve_profile_name, unknown_profile
from cudalab.chapter.recorded import ANSWERS, PROVENANCE, SCORECARD, SUMMARY
from cudalab.core import gpu, provenance
from cudalab.core.errors import CudalabError, NoGPU, NoRecordedResults, ParameterError
from cudalab.core.files import atomic_write, atomic_write_text
from cudalab.core.paths import BUILD_DIR

if TYPE_CHECKING:  # the occupancy computation (nvcc) is imported only when a chapter asks for it
    from cudalab.core.launch import Launch
    from cudalab.toolchain.occupancy_report import Launches

# Parameters every chapter notebook declares; the others are the chapter's own.
STANDARD_PARAMETERS = ("profile", "mode", "data_dir", "recorded_dir", "progress", "point_time_limit_s")


def resolve_mode(mode: str) -> str:
    if mode not in parameters.MODES:
        raise CudalabError(f"mode must be 'auto', 'measure' or 'replay', got {mode!r}")
    if mode == "auto":
        return "measure" if gpu.gpu_available() else "replay"
    if mode == "measure" and not gpu.gpu_available():
        raise NoGPU("mode='measure' needs a CUDA device and CuPy; none is present here")
    return mode


@dataclass
class Chapter:
    id: str
    profile: Profile
    mode: str
    data_dir: Path
    recorded_dir: Path
    params: dict[str, Any] = field(default_factory=dict)
    notebook: Path | None = None
    # the parameters someone set (papermill or a build injected them, or the parameters cell was
    # edited away from its defaults); None: all of ``params``
    requested: dict[str, Any] | None = None
    # progress bars on long sweeps, and the per-point time limit (seconds; None: none): the
    # notebook's standard parameters ``progress`` and ``point_time_limit_s``, handed to the labs'
    # sweeps as arguments (``lab.progress``, ``lab.timing``)
    progress: bool = True
    point_time_limit_s: float | None = None
    _stale: str | None = field(default=None, repr=False)

    @property
    def out_dir(self) -> Path:
        return self.data_dir / self.id

    @property
    def timing(self) -> dict[str, Any]:
        """``time_gpu``'s options for this chapter's sweeps: its per-point time limit."""
        return {"time_limit_s": self.point_time_limit_s}

    @property
    def provenance(self) -> dict[str, Any]:
        """Who measured this chapter's tables, when, where and with which parameters."""
        return json.loads((self.out_dir / PROVENANCE).read_text())

    def _start(self) -> None:
        self.out_dir.mkdir(parents=True, exist_ok=True)
        atomic_write_text(self.out_dir / SUMMARY, "[]\n")  # this run's headlines, in both modes
        for stale in (SCORECARD, ANSWERS):  # written afresh by this run's notebook, or absent
            (self.out_dir / stale).unlink(missing_ok=True)
        if self.mode == "measure":
            info = {
                **provenance.measurement(),
                "profile": self.profile.name,
                "chapter": self.id,
                "parameters": self.params,
                "source_fingerprint": provenance.source_fingerprint(
                    self.notebook, self.profile.model_dump(mode="json")
                ),
                # each deciding file's sha256 and code digest: a later replay names those whose code
                # changed since (chapter.staleness)
                **(staleness.fingerprints(self.notebook) if self.notebook else {"source_files": {}}),
                "tables": [],
                "axes": {},
            }
            atomic_write_text(self.out_dir / PROVENANCE, json.dumps(info, indent=2, default=str))
        else:
            src = self.recorded_dir / self.id / PROVENANCE
            if not src.is_file():
                raise NoRecordedResults(
                    f"no recorded results for chapter {self.id} of profile {self.profile.name!r} in "
                    f"{self.recorded_dir}; record them on a GPU host with "
                    f"`python build_report.py --gpu {self.profile.name} --record`"
                )
            atomic_write(self.out_dir / PROVENANCE, lambda tmp: shutil.copyfile(src, tmp))

    def table(
        self,
        name: str,
        measure: Callable[[], pd.DataFrame],
        *,
        axes: tuple[str, ...],
        dtype: dict[str, Any] | None = None,
        optional: bool = False,
    ) -> pd.DataFrame | None:
        """The tidy table ``name``: measured now (and saved), or replayed from the recording.

        ``axes`` are the columns that identify a row (what was varied: ``n``, ``variant``, ...);
        they are recorded, so that two recordings can be joined point by point. ``dtype`` pins
        columns whose text must survive the CSV round trip (e.g. "9.0"). ``optional``: a table
        that recordings made before it existed lack; their replay returns None (the notebook
        says so) instead of failing."""
        path = self.out_dir / f"{name}.csv"
        if self.mode == "measure":
            frame = measure()
            missing = [a for a in axes if a not in frame.columns]
            if missing:
                raise CudalabError(
                    f"table {name!r} has no axis column {', '.join(missing)}; its columns: "
                    f"{', '.join(map(str, frame.columns))}"
                )
            atomic_write(path, lambda tmp: frame.to_csv(tmp, index=False))
            info = self.provenance
            info["tables"] = sorted(set(info["tables"]) | {name})
            info.setdefault("axes", {})[name] = list(axes)
            atomic_write_text(self.out_dir / PROVENANCE, json.dumps(info, indent=2, default=str))
            return frame
        src = self.recorded_dir / self.id / f"{name}.csv"
        if not src.is_file() and optional:
            return None
        if not src.is_file():
            raise NoRecordedResults(
                f"table {name!r} of chapter {self.id} was not recorded in {src.parent}; "
                f"record it on a GPU host with `python build_report.py --gpu "
                f"{self.profile.name} --record`"
            )
        atomic_write(path, lambda tmp: shutil.copyfile(src, tmp))
        return pd.read_csv(src, dtype=dtype)

    def precompile(self, launches: Iterable[Launch]) -> None:
        """Compile every kernel build (``Launch.build``: file and options) among ``launches``, as the
        kernel families' ``launches()`` list them, in parallel before the first is timed, when
        measuring, with the compiler reports the occupancy section will read (``compile_ahead``);
        a replay compiles nothing."""
        if self.mode == "measure":
            from cudalab.chapter.occupancy import chapter_gpus, compile_ahead

            compile_ahead(launches, chapter_gpus(self.profile.device, self.provenance))

    def occupancy(
        self, launches: Launches, keys: Sequence[str], *, per_launch: bool = False, after: str = ""
    ) -> pd.DataFrame | None:
        """The chapter's occupancy section: the theoretical occupancy of ``launches`` (``Launch``
        objects, or a function of the compute capability returning them) on the profile's lab GPU
        and on this run's, recorded as the table ``occupancy`` (axes ``gpu`` and ``keys``, the
        labels that name each launch) and shown with which limit binds (each launch's where
        ``per_launch``, else grouped by limit), then ``after``. None where nvcc is missing (it
        says so) or there is no GPU to show."""
        from cudalab.chapter.occupancy import chapter_gpus, occupancy_section

        return occupancy_section(
            launches,
            chapter_gpus(self.profile.device, self.provenance),
            keys,
            per_launch=per_launch,
            after=after,
            table=self.table,
        )

    def tables(
        self,
        names: dict[str, tuple[str, ...]],
        measure: Callable[[], tuple[pd.DataFrame, ...]],
        optional: tuple[str, ...] = (),
    ) -> tuple[pd.DataFrame | None, ...]:
        """Several tables that one measurement produces together (e.g. GPU and CPU timings);
        ``names`` maps each table's name to its axes, in the order ``measure`` returns them;
        those in ``optional`` are None in the replay of a recording that lacks them (``table``)."""
        produced: dict[str, pd.DataFrame] = {}
        if self.mode == "measure":
            frames = measure()
            if len(frames) != len(names):
                raise CudalabError(f"measurement returned {len(frames)} tables for names {list(names)}")
            produced = dict(zip(names, frames))
        return tuple(
            self.table(name, lambda name=name: produced[name], axes=axes, optional=name in optional)
            for name, axes in names.items()
        )

    # ---- headline numbers, as data

    def headline(
        self, key: str, value: Any, unit: str, text: str, *, table: str = "", rows: dict[str, Any] | None = None
    ) -> None:
        """Record one headline number of this chapter in ``summary.json``: its value and unit, a
        one-line sentence saying it, and the table and rows (axis values) it came from.

        Called by the notebook where it computes the number for its "What we saw", in measure
        and replay alike; ``BENCHMARKS.md`` and comparisons read the recorded summaries."""
        path = self.out_dir / SUMMARY
        entries = [e for e in json.loads(path.read_text()) if e["key"] != key] if path.is_file() else []
        entries.append(
            {
                "key": key,
                "value": _plain(value),
                "unit": unit,
                "text": text,
                "table": table,
                "rows": {k: _plain(v) for k, v in (rows or {}).items()},
            }
        )
        atomic_write_text(path, json.dumps(entries, indent=2) + "\n")

    def scorecard(
        self,
        *,
        best: str,
        baseline: str = "",
        speedup: float | None = None,
        ceiling: str = "",
        fraction: float | None = None,
        lab: str = "",
        lab_speedup: float | None = None,
    ) -> None:
        """This chapter's row of the report's summary page, in measure and replay alike.

        ``best``: the best correct configuration and its figure, in words; ``speedup`` over
        ``baseline`` (the lab's baseline kernel, measured in this run); ``fraction`` of
        ``ceiling`` (a ceiling measured in the same run); ``lab``: the lab's own figure for the
        same comparison, in words naming its source, and ``lab_speedup`` its value. A figure
        the chapter has no measure for is left out, and the summary says so."""
        entry = {
            "best": best,
            "baseline": baseline,
            "speedup_x": _plain(speedup),
            "ceiling": ceiling,
            "fraction_of_ceiling": _plain(fraction),
            "lab": lab,
            "lab_speedup_x": _plain(lab_speedup),
            "stale": self.stale,  # replay: the sources changed since the recording, in words
        }
        atomic_write_text(self.out_dir / SCORECARD, json.dumps(entry, indent=2) + "\n")

    def answer(self, number: int, text: str) -> None:
        """The model answer to discussion question ``number`` (1-based, in the order of the
        notebook's cell tagged ``questions``), written from this run's data: the instructor's
        answer key (``build_report.py --answers``) prints it; the student handout never does."""
        path = self.out_dir / ANSWERS
        answers = json.loads(path.read_text()) if path.is_file() else {}
        answers[str(int(number))] = text
        atomic_write_text(path, json.dumps(answers, indent=2) + "\n")

    def ceilings(self) -> dict[str, float]:
        """The ceilings the chapters before this one declared (``declarations``: chapter 00's
        ``dram_Bps``, ``dram_read_Bps``, ``dram_read_fast_Bps``, ``add_min_per_s``), read from
        their tables in this build (measure: this run's data folder) or in the recording replayed.
        Empty where no chapter that offers them was part of the run. In a Dask build, where chapter
        00 measures beside this chapter, this waits for it to end (``chapter.awaiting``)."""
        folder = self.data_dir if self.mode == "measure" else self.recorded_dir
        found: dict[str, float] = {}
        for chapter_id in declarations.offering_ceilings():
            if chapter_id != self.id:
                if self.mode == "measure":  # a Dask build: that chapter may still be measuring beside this one
                    awaiting.wait_for(chapter_id)
                found.update(declarations.of(chapter_id).read_ceilings(folder / chapter_id))
        return found

    @property
    def summary(self) -> list[dict[str, Any]]:
        """The headlines recorded so far in this run."""
        path = self.out_dir / SUMMARY
        return json.loads(path.read_text()) if path.is_file() else []

    # ---- the lab's side of the comparison

    def published_table(self, name: str | None = None) -> pd.DataFrame | None:
        """A lab's published numbers for this chapter as a tidy frame (``attrs``: source, gpu,
        note, label), or None; ``name`` picks one where the chapter draws on several labs."""
        pub = self.profile.chapter(self.id).published_table(name)
        if pub is None:
            return None
        frame = pd.DataFrame(pub.values())
        # Profile text goes into Markdown and HTML: escaped, so a profile cannot inject markup.
        frame.attrs.update(
            source=_text(pub.source),
            gpu=_text(pub.gpu),
            note=_text(pub.note),
            lab=_text(pub.lab),
            label=_text(f"{pub.gpu} (published, {pub.source})"),
        )
        return frame

    def cited(
        self, column: str, *, table: str | None = None, fmt: str = "{:g}", scale: float = 1.0, **coordinates: Any
    ) -> str:
        """A published number for the notebook's prose, rendered from the profile (never typed):
        the value of ``column`` in the row at ``coordinates``, formatted, underlined with dots, with
        the lab's own words on hover. The references section at the end of the report lists the
        labs and, per chapter, the values used and what was inferred."""
        import html

        pub = self.profile.chapter(self.id).published_table(table)
        if pub is None:
            raise CudalabError(f"profile {self.profile.name!r} publishes no table {table or ''} for chapter {self.id}")
        hits = [
            c
            for c in pub.citations()
            if c["column"] == column and all(c["coordinates"].get(k) == v for k, v in coordinates.items())
        ]
        if len(hits) != 1:
            raise CudalabError(f"{len(hits)} published values of {column} at {coordinates} in chapter {self.id}")
        c = hits[0]
        inferred = "".join(f"; {k} inferred: {why}" for k, why in c["inferred"].items())
        title = html.escape(f"lab {c['lab']}, {c['where']}: \u201c{c['quote']}\u201d{inferred}", quote=True)
        return f'<span class="cudalab-cited" title="{title}">{fmt.format(c["value"] * scale)}</span>'

    @property
    def lab_gpu(self) -> str:
        """The lab GPU this profile sets beside the present one, as its profile names it."""
        return _text(self.profile.device.name) if self.profile.device else "no lab GPU (this profile names none)"

    @property
    def lab_gpu_source(self) -> str:
        """Where the profile's lab published its GPU's numbers (escaped for Markdown)."""
        return _text(self.profile.device.source) if self.profile.device else ""

    @property
    def published(self) -> pd.DataFrame | None:
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

    @property
    def stale(self) -> str:
        """In replay: what changed in the sources that decide this chapter's data since it was
        recorded ("recorded before kernels_cu/x.cu changed"), or that nobody can tell; empty where
        the recording matches today's sources, and when measuring. Computed once per chapter."""
        if self.mode != "replay" or self.notebook is None:
            return ""
        if self._stale is None:
            self._stale = staleness.staleness(self.provenance, self.notebook).sentence()
        return self._stale

    @property
    def not_shown(self) -> list[str]:
        """In replay: each requested parameter whose recorded value differs (what was asked for
        cannot take effect; the recording is shown). A notebook run with its own defaults
        requested nothing, and is told of nothing."""
        wanted = self.params if self.requested is None else self.requested
        return recorded.not_shown(self.out_dir, wanted) if self.mode == "replay" else []

    def banner(self):
        """A Markdown note on where this chapter's numbers come from (and, in replay, which
        requested parameters it cannot show)."""
        from IPython.display import Markdown

        p = self.provenance
        who = (
            f"{p.get('gpu_name')} (compute capability {p.get('compute_capability')}, driver "
            f"{p.get('driver_version')}, CUDA {p.get('cuda_runtime')}, CuPy {p.get('cupy')})"
        )
        commit = f"`{str(p.get('git_commit'))[:10]}`" + (" (uncommitted changes)" if p.get("git_dirty") else "")
        if self.mode == "measure":
            text = f"**Data: measured now** on {who}, {p.get('date_utc')}, commit {commit}."
        else:
            text = (
                f"**Data: replayed.** No CUDA device here, so this chapter shows the results that this "
                f"pipeline recorded on {who} on {p.get('date_utc')}, commit {commit}."
            )
        lab = self.lab_gpu
        if self.stale:
            text += (
                f"  \n> **Recording vs. today's code:** {_text(self.stale)}. The code listed here is "
                "today's; re-record on the GPU named above (`make check-recordings` lists every stale recording)."
            )
        note = ""
        if self.not_shown:
            note = (
                "  \n> **Not shown as requested:** "
                + "; ".join(self.not_shown)
                + ". A replay shows the recorded grid; measure on a GPU to see the requested one."
            )
        return Markdown(f"> {text}  \n> Profile `{_text(self.profile.name)}`; lab GPU: {lab}.{note}")


def _text(value: str) -> str:
    """Profile text made safe for Markdown and HTML: <, > and & escaped (quotes kept, for legends)."""
    import html

    return html.escape(str(value), quote=False)


def _plain(value: Any) -> Any:
    """A JSON-ready scalar (NumPy numbers become Python ones; NaN becomes None)."""
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and value != value:
        return None
    return value


def checked_parameters(chapter_id: str, namespace: dict[str, Any]) -> dict[str, Any]:
    """The chapter's parameters from ``namespace``, each checked against its declaration and
    converted to its declared type, in ``namespace`` too (so the cells that follow see a list of
    ints where papermill's ``-p`` gave its text). A name papermill injected that the notebook does
    not declare, a wrong type, a broken rule (``cudalab.chapter.parameters``) or an unknown
    profile: one ParameterError naming every problem, before any work."""
    declared = catalog.chapter(chapter_id).parameters()
    missing = [p for p in declared if p not in namespace]
    if missing:
        raise CudalabError(f"chapter {chapter_id}: run its parameters cell first ({', '.join(missing)} undefined)")
    given = {p: namespace[p] for p in parameters.injected_names(namespace) if p in namespace}
    values, problems = parameters.check({**given, **{p: namespace[p] for p in declared}}, declared, chapter=chapter_id)
    if "profile" in values:
        problems += [p for p in [unknown_profile(values["profile"])] if p]
    if problems:
        raise ParameterError("\n".join(problems))
    namespace.update(values)
    return values


def _requested(params: dict[str, Any], declared: dict[str, Any], injected: set[str]) -> dict[str, Any]:
    """The parameters someone set: injected (a build, ``papermill -p``), or unlike the notebook's
    own default (its parameters cell edited). Defaults nobody set are not requests."""
    import ast

    def default(name: str) -> Any:
        try:
            return ast.literal_eval(declared[name].default)
        except (KeyError, ValueError, SyntaxError):
            return _UNKNOWN

    return {k: v for k, v in params.items() if k in injected or v != default(k)}


_UNKNOWN = object()  # a default that cannot be read back: every value counts as set


def open_chapter(chapter_id: str, namespace: dict[str, Any]) -> Chapter:
    """Open a chapter for its notebook: ``lab = open_chapter("01_block_size", globals())``.

    The names of the chapter's parameters come from its notebook's ``parameters`` cell, their
    values from ``namespace`` (the notebook's globals, after papermill injected its values),
    checked and converted before any work (``checked_parameters``); every one is recorded in the
    provenance. ``profile`` is a name or YAML path (loaded and
    validated here), or the resolved profile file a build wrote (read as the build validated it)."""
    values = checked_parameters(chapter_id, namespace)
    info = catalog.chapter(chapter_id)
    mode = resolve_mode(values.get("mode", "auto"))
    name = resolve_profile_name(values.get("profile", "auto"))
    prof = open_profile(name, gpu_max_threads=gpu.attributes()["MaxThreadsPerBlock"] if mode == "measure" else None)
    data = Path(values.get("data_dir") or BUILD_DIR / "lab" / prof.name / "data")
    recorded_dir = values.get("recorded_dir") or ""
    if not recorded_dir and mode == "replay":
        recorded_dir = str(recorded.find(prof.name)[0].path)
    params = {k: v for k, v in values.items() if k not in STANDARD_PARAMETERS}
    requested = _requested(params, info.parameters(), set(parameters.injected_names(namespace)))
    limit = values.get("point_time_limit_s")
    chapter = Chapter(
        chapter_id,
        prof,
        mode,
        data,
        Path(recorded_dir),
        params,
        info.path,
        requested,
        progress=bool(values.get("progress", True)),
        point_time_limit_s=float(limit) if limit and limit > 0 else None,
    )
    chapter._start()
    return chapter
