"""Provenance, derived and never typed: who measured, on what, with which source.

Every recording names the GPU and software that measured it, the git commit of the code, and a
fingerprint of the source that produced it (kernel files, package, notebook, profile), all
computed here at run time. Where the tree travels to a GPU node (without ``.git``, or with a
``.git`` of another commit under the copied tree), the commit comes from the stamp that
``tools/stamp_source.py`` (run by ``make wheelhouse``) wrote from git before the tree left; the
stamp also holds the tree's fingerprint, so it is believed only for that exact source, and a tree
edited after stamping is reported as dirty rather than credited to the stamped commit.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import platform
import socket
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from cudalab.core.errors import CudalabError
from cudalab.core.gpu import cupy_or_none, gpu_name
from cudalab.core.paths import KERNELS_DIR, NOTEBOOKS_DIR, PACKAGE_DIR, PARAMS_DIR, ROOT, SCRATCH_DIR, SOURCE_STAMP

_SOURCE_SUFFIXES = {".py", ".c", ".cu", ".cuh", ".h", ".j2", ".json", ".ipynb", ".yaml", ".yml"}
# What can change a measurement; the dirty flag looks at these folders only (not results/ or tests/).
_TRACKED_SOURCE = ("kernels_cu", "cudalab", "notebooks", "params")


def _files(folder: Path) -> list[Path]:
    return sorted(
        p
        for p in folder.rglob("*")
        if p.is_file()
        and p.suffix in _SOURCE_SUFFIXES
        and "__pycache__" not in p.parts
        and ".ipynb_checkpoints" not in p.parts
        and not p.is_relative_to(SCRATCH_DIR)
    )


def hash_files(paths: Iterable[Path], root: Path = ROOT) -> str:
    """sha256 over each file's path (relative to ``root``) and bytes, in the given order."""
    h = hashlib.sha256()
    for path in paths:
        rel = path.resolve().relative_to(root.resolve()) if path.resolve().is_relative_to(root.resolve()) else path.name
        h.update(str(rel).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def tree_fingerprint() -> str:
    """sha256 of everything that can change a measurement: kernels, package, notebooks, profiles."""
    return hash_files([p for d in (KERNELS_DIR, PACKAGE_DIR, NOTEBOOKS_DIR, PARAMS_DIR) for p in _files(d)])


def source_fingerprint(notebook: Path | None, profile: dict[str, Any] | None) -> dict[str, str]:
    """The fingerprint of what produced one chapter's recording: sha256 of the kernel files, the
    package, the chapter's notebook and its resolved profile, and of the four together."""
    parts = {
        "kernels": hash_files(_files(KERNELS_DIR)),
        "package": hash_files(_files(PACKAGE_DIR)),
        "notebook": hash_files([notebook]) if notebook else hashlib.sha256(b"").hexdigest(),
        "profile": hashlib.sha256(json.dumps(profile, sort_keys=True, default=str).encode()).hexdigest(),
    }
    return {"sha256": hashlib.sha256("".join(parts[k] for k in sorted(parts)).encode()).hexdigest(), **parts}


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=10, check=True).stdout


def git_state() -> dict[str, Any] | None:
    """(commit, dirty) from git, or None where there is no repository (or no git)."""
    if not (ROOT / ".git").exists():
        return None
    try:
        commit = _git("rev-parse", "HEAD").strip()
        dirty = bool(_git("status", "--porcelain", "--untracked-files=no", "--", *_TRACKED_SOURCE).strip())
    except (OSError, subprocess.SubprocessError):
        return None
    return {"git_commit": commit, "git_dirty": dirty, "commit_from": "git"}


def write_stamp(path: Path = SOURCE_STAMP) -> dict[str, Any]:
    """Write the source stamp (commit and tree fingerprint, from git) that travels with the tree
    to a GPU node without ``.git``; returns it. Raises ``CudalabError`` outside a git checkout."""
    state = git_state()
    if state is None:
        raise CudalabError(f"{ROOT} is not a git checkout: there is no commit to stamp")
    stamp = {
        "git_commit": state["git_commit"],
        "git_dirty": state["git_dirty"],
        "tree_sha256": tree_fingerprint(),
        "stamped_utc": _now(),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(stamp, indent=2) + "\n")
    return stamp


def commit_state() -> dict[str, Any]:
    """The commit that produced this run.

    The source stamp wins where it matches the tree exactly: it was written from git for this
    very source, and a GPU node may hold a ``.git`` of some other commit under a copied tree.
    Otherwise git where ``.git`` exists; otherwise the stamp's commit marked dirty (the tree was
    edited after stamping); otherwise unknown."""
    stamp = json.loads(SOURCE_STAMP.read_text()) if SOURCE_STAMP.is_file() else None
    same = stamp is not None and stamp.get("tree_sha256") == tree_fingerprint()
    if same:
        return {
            "git_commit": stamp["git_commit"],
            "git_dirty": bool(stamp.get("git_dirty")),
            "commit_from": "source stamp",
        }
    state = git_state()
    if state is not None:
        return state
    if stamp is not None:
        return {
            "git_commit": stamp["git_commit"],
            "git_dirty": True,
            "commit_from": "source stamp; the tree changed after stamping",
        }
    return {"git_commit": "unknown", "git_dirty": None, "commit_from": "no git and no source stamp"}


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def _nvidia_smi(query: str, device: str | None = None) -> str | None:
    """One field of nvidia-smi's report: of ``device`` (an index, UUID or PCI bus id) or the first GPU."""
    try:
        out = subprocess.run(
            ["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader", *([f"--id={device}"] if device else [])],
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
        ).stdout
        return out.strip().splitlines()[0].strip() if out.strip() else None
    except Exception:  # no nvidia-smi: the field stays empty
        return None


def _uuid_text(raw: Any) -> str | None:
    """A CUDA device UUID as nvidia-smi prints it (``GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx``),
    from the 16 bytes CUDA reports; None where they are absent."""
    if isinstance(raw, str):
        raw = raw.encode("latin-1")
    if not isinstance(raw, bytes | bytearray) or len(raw) < 16:
        return None
    h = bytes(raw[:16]).hex()
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def gpu_uuid(props: dict[str, Any]) -> str | None:
    """The UUID of the device whose properties ``props`` are: from CUDA's own report where CuPy
    passes it on, else nvidia-smi asked by the device's PCI bus id (nvidia-smi ignores
    ``CUDA_VISIBLE_DEVICES``, so its "first GPU" could be another worker's)."""
    found = _uuid_text(props.get("uuid"))
    if found:
        return found
    if all(k in props for k in ("pciDomainID", "pciBusID", "pciDeviceID")):
        bus = f"{props['pciDomainID']:08x}:{props['pciBusID']:02x}:{props['pciDeviceID']:02x}.0"
        return _nvidia_smi("uuid", bus)
    return None


def _version(v: int) -> str:
    return f"{v // 1000}.{(v % 1000) // 10}"


def measurement() -> dict[str, Any]:
    """Who measured: GPU (name and UUID: which card, where chapters run on several), driver, CUDA
    and CuPy versions, host, date and commit. ``cuda_visible_devices`` is the process's device
    mask as a Dask worker (``dask_cuda``) or a scheduler set it, None where unset; ``cpus_usable``
    the cores the process may run on, fewer than the host's ``cpu_count`` where it is pinned
    (``taskset``, a cgroup, a ``dask_cuda`` worker: a local build's tasks undo that pin for the
    chapter, ``report.cluster``)."""
    import numpy

    info: dict[str, Any] = {
        "date_utc": _now(),
        "hostname": socket.gethostname(),
        "cpu_count": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "python": platform.python_version(),
        "numpy": numpy.__version__,
    }
    info.update(commit_state())
    cp = cupy_or_none()
    if cp is None:
        info["gpu_name"] = None
        return info
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    info.update(
        {
            "gpu_name": gpu_name(),
            "gpu_uuid": gpu_uuid(props),
            "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
            "compute_capability": f"{props['major']}.{props['minor']}",
            "gpu_memory_MiB": round(props["totalGlobalMem"] / 2**20),
            "driver_version": _nvidia_smi("driver_version"),
            "cuda_driver_api": _version(cp.cuda.runtime.driverGetVersion()),
            "cuda_runtime": _version(cp.cuda.runtime.runtimeGetVersion()),
            "cupy": cp.__version__,
        }
    )
    return info
