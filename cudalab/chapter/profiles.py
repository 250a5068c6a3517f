"""GPU profiles: the sweep grid, the lab GPU's spec and the lab's published numbers.

A profile is a YAML file in ``params/`` (or anywhere, given by path). It is
validated completely before any GPU work starts, so a typo costs seconds, not
a half-finished sweep. Chapter parameters are checked against the parameters
cell of the chapter's notebook: the notebook is the single definition of what
a chapter accepts, so adding a chapter needs no change here.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin

import yaml
from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, ValidationError, field_validator, model_validator

from cudalab.chapter import catalog, parameters
from cudalab.chapter.parameters import Declared
from cudalab.core import gpu
from cudalab.core.errors import ProfileError
from cudalab.core.files import atomic_write_text
from cudalab.core.paths import PARAMS_DIR

Scalar = int | float | str | bool | None


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class DeviceSpec(_Strict):
    """The lab GPU as its report published it (deviceQuery / bandwidthTest), each number cited."""

    name: str
    source: str = Field(description="where these numbers were published")
    lab: str | None = Field(default=None, description="the lab report's number in shared/labs, e.g. '000'")
    compute_capability: str | None = None
    multiprocessors: int | None = None
    cuda_cores_per_multiprocessor: int | None = None
    gpu_clock_MHz: float | None = None
    memory_clock_MHz: float | None = None
    memory_bus_width_bits: int | None = None
    global_memory_MiB: float | None = None
    l2_cache_bytes: int | None = None
    constant_memory_bytes: int | None = None
    shared_memory_per_block_bytes: int | None = None
    registers_per_block: int | None = None
    warp_size: int | None = None
    max_threads_per_block: int | None = None
    max_threads_per_multiprocessor: int | None = None
    cite: dict[str, str] = Field(default_factory=dict, description="field -> the lab's own words for it")
    inferred: dict[str, str] = Field(
        default_factory=dict,
        description="field -> where a number the lab did not print comes from "
        "(the vendor's published spec for that GPU)",
    )

    @model_validator(mode="after")
    def _every_number_cited(self) -> DeviceSpec:
        given = [
            k
            for k, v in self.model_dump(exclude={"name", "source", "lab", "cite", "inferred"}).items()
            if v is not None
        ]
        missing = [k for k in given if not self.cite.get(k) and not (self.inferred.get(k) or "").strip()]
        if missing:
            raise ValueError(
                f"no citation (cite: the lab's own words, or inferred: the published source "
                f"it comes from) for {', '.join(missing)}"
            )
        both = [k for k in self.inferred if k in self.cite]
        if both:
            raise ValueError(f"{', '.join(both)}: cited from the lab and inferred at once; keep one")
        stray = [k for k in list(self.cite) + list(self.inferred) if k not in given]
        if stray:
            raise ValueError(f"cite/inferred name {', '.join(stray)}, which the spec does not give")
        if any(k in self.cite for k in given) and not self.lab:
            raise ValueError("cited numbers need 'lab', the lab report they come from")
        return self

    def fp32_peak_GFLOPs(self) -> float | None:
        """FP32 lanes x 2 flops (one FMA) x SMs x clock, where the spec gives all three."""
        if self.multiprocessors and self.cuda_cores_per_multiprocessor and self.gpu_clock_MHz:
            return 2 * self.multiprocessors * self.cuda_cores_per_multiprocessor * self.gpu_clock_MHz / 1e3
        return None


class SizedFor(_Strict):
    """The GPU a profile's grid is sized for (``gpu:``), which may be another than the lab GPU it
    cites (``device``): h100 compares with the lab's GTX 680 and is sized for an H100. Without a
    GPU, a student's kernel is compiled for its architecture (``--gpu h100`` builds for sm_90)."""

    name: str
    compute_capability: str = Field(description='major.minor, as the occupancy rules know it (e.g. "9.0")')

    @field_validator("compute_capability")
    @classmethod
    def _known(cls, value: str) -> str:
        from cudalab.core.occupancy import cc_key

        try:
            return cc_key(value)
        except ProfileError as exc:
            raise ValueError(str(exc)) from None


RESERVED = ("cite", "inferred")


class Published(_Strict):
    """Numbers a lab report published, as a tidy table, every value cited.

    ``coordinates`` are the columns that say where a value sits (N, block, kernel, ...); every
    other column of a row is a published value and needs ``cite``: the lab's own words or table
    line for it (one string for the whole row, or a mapping from column to quote). ``inferred``,
    for the whole table or one row, names each coordinate (or ``gpu``, ``units``) that the lab did
    not state, with the reason we assumed it; anything not listed was stated by the lab."""

    source: str
    gpu: str
    lab: str = Field(description="the lab report's number in shared/labs, e.g. '000'")
    where: str = Field(description="the section or table of the lab report")
    coordinates: list[str]
    note: str = ""
    inferred: dict[str, str] = Field(default_factory=dict)
    beside: list[str] = Field(
        default_factory=list,
        description="measured tables it sits beside though some coordinates are not their columns "
        "(a step's name): there it joins on the coordinates they share",
    )
    measures: dict[str, str] = Field(
        default_factory=dict,
        description="published column -> the measured column it sits beside where the names differ "
        "(lab 004's time_s is a whole run: total_s, shown as our total_ms)",
    )
    rows: list[dict[str, Any]] = Field(default_factory=list)

    @model_validator(mode="after")
    def _every_value_cited(self) -> Published:
        problems = []
        for i, row in enumerate(self.rows):
            bad = [
                k
                for k, v in row.items()
                if k not in RESERVED and not (v is None or isinstance(v, (int, float, str, bool)))
            ]
            if bad:
                problems.append(f"rows[{i}]: {', '.join(bad)} must be a number, text or null")
            absent = [c for c in self.coordinates if c not in row]
            if absent:
                problems.append(
                    f"rows[{i}]: no {', '.join(absent)} (every row gives each coordinate: "
                    f"{', '.join(self.coordinates)}; null where the lab did not say)"
                )
            values = [k for k, v in row.items() if k not in RESERVED and k not in self.coordinates and v is not None]
            cite = row.get("cite")
            cited = (
                set(values)
                if isinstance(cite, str) and cite.strip()
                else {k for k, q in cite.items() if isinstance(q, str) and q.strip()}
                if isinstance(cite, dict)
                else set()
            )
            missing = [k for k in values if k not in cited]
            if missing:
                problems.append(
                    f"rows[{i}]: {', '.join(missing)} without a citation (cite: the lab's own words or table line)"
                )
            unknown = [
                k for k in (row.get("inferred") or {}) if k not in self.coordinates and k not in ("gpu", "units")
            ]
            if unknown:
                problems.append(
                    f"rows[{i}].inferred: {', '.join(unknown)} is not a coordinate of this table "
                    f"({', '.join(self.coordinates)}) nor gpu or units"
                )
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def values(self) -> list[dict[str, Any]]:
        """The rows without their citations: what a table or plot uses."""
        return [{k: v for k, v in row.items() if k not in RESERVED} for row in self.rows]

    def citations(self) -> list[dict[str, Any]]:
        """One entry per published value: column, value, coordinates, quote, and what was inferred."""
        out = []
        for row in self.rows:
            cite, inferred = row.get("cite"), {**self.inferred, **(row.get("inferred") or {})}
            coords = {c: row.get(c) for c in self.coordinates if c in row}
            for k, v in row.items():
                if k in RESERVED or k in self.coordinates or v is None:
                    continue
                quote = cite if isinstance(cite, str) else cite.get(k, "")
                out.append(
                    {
                        "column": k,
                        "value": v,
                        "coordinates": coords,
                        "quote": quote,
                        "inferred": inferred,
                        "lab": self.lab,
                        "where": self.where,
                    }
                )
        return out


class LabReference(_Strict):
    """A lab report cited by a profile, as the references section names it."""

    file: str = Field(description="its file in shared/labs")
    course: str
    title: str
    gpu: str = Field(description="the GPU as the lab names it")


ONE_TABLE, TABLES_BY_NAME = "(one table)", "(tables by name)"


def _published_form(value: Any) -> str:
    """Which form a chapter's ``published`` takes: one table (a mapping with a table's own keys)
    or several by name. Deciding it first makes a mistake in a table one error, not one error per
    key for the form it is not."""
    if isinstance(value, Published) or (isinstance(value, Mapping) and set(value) & set(Published.model_fields)):
        return ONE_TABLE
    return TABLES_BY_NAME


class ChapterConfig(_Strict):
    params: dict[str, Any] = Field(default_factory=dict)
    quick: dict[str, Any] = Field(default_factory=dict, description="overrides for --quick")
    # One published table, or several by name where a chapter draws on more than one lab.
    published: (
        Annotated[
            Annotated[Published, Tag(ONE_TABLE)] | Annotated[dict[str, Published], Tag(TABLES_BY_NAME)],
            Discriminator(_published_form),
        ]
        | None
    ) = None

    def published_table(self, name: str | None = None) -> Published | None:
        if isinstance(self.published, dict):
            if name is None:
                raise ProfileError(f"this chapter has several published tables: {', '.join(self.published)}")
            return self.published.get(name)
        return self.published if name is None else None


class Profile(_Strict):
    name: str
    description: str = ""
    match: list[str] = Field(default_factory=list, description="substrings of a GPU name that pick this profile")
    extends: str | None = None
    device: DeviceSpec | None = None
    gpu: SizedFor | None = Field(default=None, description="the GPU this profile's grid is sized for")
    references: dict[str, LabReference] = Field(default_factory=dict, description="lab number -> the lab report")
    chapters: dict[str, ChapterConfig] = Field(default_factory=dict)

    def chapter(self, chapter_id: str) -> ChapterConfig:
        return self.chapters.get(chapter_id, ChapterConfig())

    def sized_for(self) -> SizedFor | None:
        """The GPU a kernel is compiled for where none is present: the one the profile is sized for
        (``gpu``), else, for a profile that names none (one of a user's own), its lab GPU where its
        compute capability is a major.minor the occupancy rules know; None where neither."""
        if self.gpu is not None:
            return self.gpu
        if self.device is not None and self.device.compute_capability:
            try:
                return SizedFor(name=self.device.name, compute_capability=self.device.compute_capability)
            except ValidationError:
                return None
        return None

    def chapter_params(self, chapter_id: str, quick: bool = False) -> dict[str, Any]:
        cfg = self.chapter(chapter_id)
        params = dict(cfg.params)
        if quick:
            params.update(cfg.quick)
        return params


# Parameters that shape a thread block, recognised by name so that a new chapter needs no code
# here: "..._threads" / "threads_per_block" count threads, "..._edges" / "block_sizes" are the
# edge of a square block.
_SQUARE = ("a square block of {v}x{v} threads", lambda v: v * v)
_LINEAR = ("a block of {v} threads", lambda v: v)


def launch_shape(name: str) -> tuple[str, Callable[[int], int]] | None:
    if name == "block_sizes" or name.endswith("_edges"):
        return _SQUARE
    if name == "threads_per_block" or name.endswith("_threads"):
        return _LINEAR
    return None


def available_profiles(params_dir: Path = PARAMS_DIR) -> list[str]:
    return sorted(p.stem for p in params_dir.glob("*.yaml"))


def _resolve_path(name_or_path: str, params_dir: Path) -> Path:
    candidate = Path(name_or_path)
    if candidate.suffix in (".yaml", ".yml") or candidate.exists():
        if candidate.is_dir():
            raise ProfileError(f"{candidate} is a folder; give a profile's YAML file or name")
        if not candidate.is_file():
            raise ProfileError(f"profile file not found: {candidate}")
        return candidate
    path = params_dir / f"{name_or_path}.yaml"
    if not path.is_file():
        names = ", ".join(available_profiles(params_dir)) or "(none)"
        raise ProfileError(
            f"unknown profile {name_or_path!r}; available profiles: {names} (or give a path to a YAML file)"
        )
    return path


# libyaml's parser where PyYAML was built with it (the wheels are): the same documents and objects as
# yaml.safe_load, about ten times faster on a profile's published tables (a staleness check of every
# recording reads a profile per recording).
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_SAFE_LOADER)
    except yaml.YAMLError as exc:
        raise ProfileError(f"{path}: not valid YAML: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise ProfileError(f"{path}: not UTF-8 text (byte {exc.start}); a profile is a YAML file") from None
    except OSError as exc:
        raise ProfileError(f"{path}: cannot be read ({exc.strerror})") from None
    if not isinstance(data, dict):
        raise ProfileError(f"{path}: a profile is a YAML mapping, got {type(data).__name__}")
    return data


def _atomic(key: str, value: Any) -> bool:
    """A device spec or a published table describes one thing: replaced whole, never blended."""
    return key == "device" or (isinstance(value, dict) and "rows" in value)


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """Deep-merge mappings; lists, scalars, devices and published tables in ``over`` replace
    those in ``base``."""
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict) and not _atomic(key, value):
            out[key] = _merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _with_chapter_files(path: Path, data: dict[str, Any]) -> dict[str, Any]:
    """The profile with the chapters that declare their data in files of their own beside it:
    ``params/<profile>/<chapter id>.yaml`` holds what ``chapters.<chapter id>`` would (``params``,
    ``quick``, ``published``), so a new chapter adds its grid for a profile without editing it. A
    chapter in both places is an error naming both."""
    folder = path.with_suffix("")
    if not folder.is_dir():
        return data
    chapters = dict(data.get("chapters") or {})
    for part in sorted(folder.glob("*.yaml")):
        if part.stem in chapters:
            raise ProfileError(f"{part}: chapter {part.stem} is also under chapters: in {path}; keep one of the two")
        chapters[part.stem] = _read_yaml(part)
    return {**data, "chapters": chapters}


def _raw_profile(name_or_path: str, params_dir: Path, seen: tuple[str, ...] = ()) -> tuple[Path, dict[str, Any]]:
    path = _resolve_path(name_or_path, params_dir)
    data = _with_chapter_files(path, _read_yaml(path))
    parent = data.get("extends")
    if parent:
        if parent in seen:
            raise ProfileError(f"{path}: 'extends' forms a cycle: {' -> '.join(seen + (parent,))}")
        _, base = _raw_profile(str(parent), params_dir, seen + (str(parent),))
        base.pop("match", None)  # matching a GPU name is never inherited
        data = _merge(base, data)
    return path, data


def _members(annotation: Any) -> list[Any]:
    """The types an annotation allows: each member of a union (``X | None``), itself otherwise; a
    member tagged for a discriminated union stays ``Annotated`` (pydantic names it by its tag)."""
    origin = get_origin(annotation)
    if origin in (Union, UnionType):
        return [m for a in get_args(annotation) for m in _members(a)]
    if origin is Annotated:
        inner, *meta = get_args(annotation)
        return [annotation] if any(isinstance(m, Tag) for m in meta) else _members(inner)
    return [annotation]


def _untagged(kind: Any, tag: str | None = None) -> Any:
    """A tagged member's type (where ``tag`` is given, only if it is that member's), else ``kind``."""
    if get_origin(kind) is Annotated:
        inner, *meta = get_args(kind)
        tags = [m.tag for m in meta if isinstance(m, Tag)]
        return inner if tag is None or tag in tags else None
    return kind if tag is None else None


def keys_at(loc: tuple, model: type[BaseModel] | None = None) -> list[str]:
    """The keys a profile may hold at the mapping where pydantic found an unknown key (``loc``, the
    unknown key last), in the order the models declare them; none where the place has no fixed keys.
    A dictionary's key, a list's index or a union member's tag in ``loc`` is stepped through."""
    kinds: list[Any] = [model or Profile]
    for part in loc[:-1]:
        members = [m for k in kinds for m in _members(k)]
        tagged = [t for m in members if (t := _untagged(m, str(part))) is not None]
        if tagged:  # pydantic named the member of a discriminated union it validated
            kinds = tagged
            continue
        step: list[Any] = []
        for kind in (_untagged(m) for m in members):
            if isinstance(kind, type) and issubclass(kind, BaseModel) and part in kind.model_fields:
                step.append(kind.model_fields[part].annotation)
            elif get_origin(kind) in (dict, list):
                step.append(get_args(kind)[-1])
        kinds = step
    keys: dict[str, None] = {}
    for kind in (_untagged(m) for k in kinds for m in _members(k)):
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            keys.update(dict.fromkeys(kind.model_fields))
    return list(keys)


def _format_validation(path: Path, exc: ValidationError) -> str:
    lines = [f"{path}: invalid profile"]
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"])
        kind = err["type"]
        if kind == "extra_forbidden":
            keys = keys_at(tuple(err["loc"]))
            lines.append(f"  {where}: unknown key" + (f" (the keys here: {', '.join(keys)})" if keys else ""))
        else:
            lines.append(f"  {where}: {err['msg']} (got {err.get('input')!r})")
    return "\n".join(lines)


def declared(accepted: Mapping[str, str | Declared]) -> dict[str, Declared]:
    """A notebook's parameters as ``Declared``, given as such or as {name: type name}."""
    return {k: v if isinstance(v, Declared) else Declared(k, v) for k, v in accepted.items()}


def check_launch_shapes(where: str, params: dict[str, Any], limits: dict[str, int]) -> list[str]:
    """Problems with block shapes that exceed a thread limit ({limit's owner: threads})."""
    problems = []
    for key, values in params.items():
        shape = launch_shape(key)
        if shape is None:
            continue
        what, threads_of = shape
        for v in values if isinstance(values, list) else [values]:
            if not isinstance(v, int) or v <= 0:
                problems.append(f"{where}.{key}: {v!r} is not a positive integer")
                continue
            for owner, limit in limits.items():
                if threads_of(v) > limit:
                    problems.append(
                        f"{where}.{key}: {what.format(v=v)} = {threads_of(v)} threads "
                        f"exceeds {owner}'s limit of {limit} threads per block"
                    )
    return problems


def load_profile(
    name_or_path: str,
    *,
    params_dir: Path = PARAMS_DIR,
    gpu_max_threads: int | None = None,
    notebooks: Mapping[str, Mapping[str, str | Declared]] | None = None,
) -> Profile:
    """Load and fully validate a profile by name (``params/NAME.yaml``) or path.

    ``gpu_max_threads`` is the present GPU's threads-per-block limit, if a GPU
    is present; ``notebooks`` maps chapter ids to their accepted parameters, as ``Declared`` or
    {name: type name} (defaults to inspecting ``notebooks/``). Chapter parameters follow the rules
    of ``cudalab.chapter.parameters``, as in a notebook; text that parses as the declared type is
    stored as that type.
    """
    path, data = _raw_profile(name_or_path, params_dir)
    if path.parent.resolve() != params_dir.resolve() and "name" not in _read_yaml(path):
        data["name"] = path.stem  # a user's profile is named after its file, never after the profile it extends
    try:
        profile = Profile.model_validate(data)
    except ValidationError as exc:
        raise ProfileError(_format_validation(path, exc)) from None
    if notebooks is None:
        notebooks = {c.id: c.parameters() for c in catalog.discover()}
    limits: dict[str, int] = {}
    if profile.device and profile.device.max_threads_per_block:
        limits[f"the profile's device ({profile.device.name})"] = profile.device.max_threads_per_block
    if gpu_max_threads:
        limits["the present GPU"] = gpu_max_threads
    problems = []
    for chapter_id, cfg in profile.chapters.items():
        if chapter_id not in notebooks:
            problems.append(f"chapters.{chapter_id}: no such chapter; chapters: {', '.join(sorted(notebooks))}")
            continue
        for section in ("params", "quick"):
            values = getattr(cfg, section)
            where = f"chapters.{chapter_id}.{section}"
            typed, found = parameters.check(values, declared(notebooks[chapter_id]), where=where)
            values.update(typed)  # text that parses as the declared type is kept as that type
            problems += found + check_launch_shapes(where, typed, limits)
    if problems:
        raise ProfileError(f"{path}: invalid profile\n  " + "\n  ".join(problems))
    return profile


# The build resolves and validates its profile once and hands every chapter notebook this file
# (its path as the notebook's ``profile`` parameter): a notebook then reads the profile as the build
# checked it, rather than reading the YAML and checking it against all notebooks again.
RESOLVED = "profile.json"
RESOLVED_FORMAT = "cudalab resolved profile 1"


def _digest(content: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()


def write_resolved(profile: Profile, path: Path, *, source: str, gpu_max_threads: int | None = None) -> Path:
    """Write ``profile``, loaded and validated by ``load_profile``, as a resolved profile file:
    its name, where it came from (``source``: a name or YAML path), the GPU thread limit it was
    checked against, its content with every ``extends`` merged in, and that content's sha256."""
    content = profile.model_dump(mode="json")
    document = {
        "format": RESOLVED_FORMAT,
        "name": profile.name,
        "source": source,
        "gpu_max_threads": gpu_max_threads,
        "sha256": _digest(content),
        "profile": content,
    }
    return atomic_write_text(path, json.dumps(document, indent=2) + "\n")


def _resolved_document(name_or_path: str) -> dict[str, Any] | None:
    """The resolved profile file that ``name_or_path`` names, or None for a profile name or a YAML file."""
    path = Path(name_or_path)
    if path.suffix != ".json" or not path.is_file():
        return None
    try:
        document = json.loads(path.read_text())
    except json.JSONDecodeError:
        return None  # a profile written in YAML's JSON subset: loaded as a YAML file
    return document if isinstance(document, dict) and document.get("format") == RESOLVED_FORMAT else None


def read_resolved(path: Path, *, gpu_max_threads: int | None = None) -> Profile:
    """The profile in a resolved profile file, trusted as ``write_resolved`` wrote it when its
    content still matches its sha256. ``gpu_max_threads``: the present GPU's threads-per-block
    limit; block shapes are checked against it here unless the file was checked against it."""
    document = _resolved_document(str(path))
    if document is None:
        raise ProfileError(f"{path}: not a resolved profile file (a build writes one as {RESOLVED})")
    return _trusted(path, document, gpu_max_threads)


def _trusted(path: Path, document: dict[str, Any], gpu_max_threads: int | None) -> Profile:
    if _digest(document["profile"]) != document["sha256"]:
        raise ProfileError(
            f"{path}: changed since the build wrote it (its sha256 no longer matches); "
            f"build again, or give the profile's name or YAML file"
        )
    try:
        profile = Profile.model_validate(document["profile"])
    except ValidationError as exc:
        raise ProfileError(_format_validation(path, exc)) from None
    if gpu_max_threads and gpu_max_threads != document.get("gpu_max_threads"):
        problems = [
            problem
            for chapter_id, cfg in profile.chapters.items()
            for section in ("params", "quick")
            for problem in check_launch_shapes(
                f"chapters.{chapter_id}.{section}", getattr(cfg, section), {"the present GPU": gpu_max_threads}
            )
        ]
        if problems:
            raise ProfileError(f"{path}: invalid profile\n  " + "\n  ".join(problems))
    return profile


def open_profile(name_or_path: str, *, gpu_max_threads: int | None = None) -> Profile:
    """The profile a chapter notebook was given: the build's resolved profile file (read as the
    build validated it), or a name or YAML path (a notebook run alone: loaded and validated here)."""
    document = _resolved_document(name_or_path)
    if document is None:
        return load_profile(name_or_path, gpu_max_threads=gpu_max_threads)
    return _trusted(Path(name_or_path), document, gpu_max_threads)


def unknown_profile(name_or_path: str, params_dir: Path = PARAMS_DIR) -> str | None:
    """The ``profile`` parameter's problem where it names no profile (a chapter checks it before
    any work, as its other parameters), or None: ``auto``, a profile name, a YAML file or the
    resolved profile file of a build are all fine."""
    if name_or_path == "auto" or _resolved_document(name_or_path) is not None:
        return None
    try:
        _resolve_path(name_or_path, params_dir)
    except ProfileError:
        names = available_profiles(params_dir)
        return parameters.problem(
            "profile",
            repr(name_or_path),
            f"'auto', a profile name ({', '.join(names)}) or the path of a profile's YAML file",
            f"with papermill: -p profile {'gtx680' if 'gtx680' in names else 'auto'}",
        )
    return None


def profile_for_gpu(gpu_name: str, params_dir: Path = PARAMS_DIR) -> str:
    """The profile whose ``match`` names the GPU, else ``generic``."""
    for name in available_profiles(params_dir):
        data = _read_yaml(params_dir / f"{name}.yaml")
        if any(s.lower() in gpu_name.lower() for s in data.get("match") or []):
            return name
    return "generic"


DEFAULT_REPLAY_PROFILE = "gtx680"


def resolve_profile_name(profile: str) -> str:
    """The profile a build or a notebook asked for: ``auto`` means the present GPU's profile
    (``profile_for_gpu``), or, without a GPU, the lab's own (``DEFAULT_REPLAY_PROFILE``), for replay."""
    if profile != "auto":
        return profile
    name = gpu.gpu_name()
    return profile_for_gpu(name) if name else DEFAULT_REPLAY_PROFILE
