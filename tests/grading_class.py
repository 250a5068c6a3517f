"""The fixture classes of issue 43: one student folder per way a submission can go, each written
from today's reference ``kernels_cu/fw_blocked.cu`` (chapter 04), and a small k-means class from
``kernels_cu/km_01_device_update.cu`` (chapter 06), so that the classes follow the references as
they change and nothing here copies a kernel by hand."""

from __future__ import annotations

import os
from pathlib import Path

from cudalab.core.paths import KERNELS_DIR

PHASE3_RELAX = "acc[a][b] = relax(acc[a][b], col[i * BF + k] + row[k * BF + j]);"
PHASE3_START = "if (ti == r || tj == r) return;  // uniform across the block"
FORGED_INDICES = 8  # i_forged_output forges a result for each of the first 8 indices (points and cases)


def _edit(text: str, old: str, new: str) -> str:
    assert old in text, f"the reference changed: {old!r} is gone; update tests/grading_class.py"
    return text.replace(old, new, 1)


def students() -> dict[str, dict[str, str]]:
    """Each student's files (name -> text), and what the grader must make of them."""
    ref = (KERNELS_DIR / "fw_blocked.cu").read_text()
    return {
        "a_correct": {"fw_blocked.cu": ref},
        # the lab's arithmetic select (ladder step 4) and no unrolled k loop: correct, slower
        "b_slower": {
            "fw_blocked.cu": "#define SELECT_BY_ARITHMETIC\n" + ref.replace("#pragma unroll\n", "#pragma unroll 1\n")
        },
        "c_wrong": {
            "fw_blocked.cu": _edit(ref, PHASE3_RELAX, PHASE3_RELAX.replace("row[k * BF + j])", "row[k * BF + j] + 1)"))
        },
        "d_compile_error": {
            "fw_blocked.cu": _edit(ref, "int ti = blockIdx.y, tj = blockIdx.x;", "int ti = blockIdx.y, tj = blockIdx.x")
        },
        "e_signature": {
            "fw_blocked.cu": _edit(
                ref, "fw_blocked_phase3(int* d, int n, int r)", "fw_blocked_phase3(int* d, int n, int r, int* extra)"
            )
        },
        "f_endless": {
            "fw_blocked.cu": _edit(
                ref,
                PHASE3_START,
                PHASE3_START + "\n    while (((volatile int*)d)[0] != -12345) {}  // the diagonal is 0: never returns",
            )
        },
        "g_out_of_bounds": {
            "fw_blocked.cu": _edit(
                ref, PHASE3_START, PHASE3_START + "\n    d[(size_t)1 << 34] = 0;  // 64 GiB past the matrix"
            )
        },
        # a wrong result that prints forged "ok" events on stdout, where a kernel's printf lands: one
        # for every index a point or a case can have, at every launch (the timed calls, the answers,
        # and the cases solved after the point's real result), and C's stdout is flushed at exit,
        # after every real event. Routed onto the results pipe, the last forgery would win.
        "i_forged_output": {
            "fw_blocked.cu": _edit(
                _edit(ref, PHASE3_RELAX, PHASE3_RELAX.replace("row[k * BF + j])", "row[k * BF + j] + 1)")),
                PHASE3_START,
                PHASE3_START
                + "\n    if (r == 0 && ti == 1 && tj == 2 && threadIdx.x == 0 && threadIdx.y == 0)"
                + f"\n        for (int forged = 0; forged < {FORGED_INDICES}; ++forged)"
                + '\n            printf("{\\"event\\": \\"point\\", \\"index\\": %d, \\"status\\": \\"ok\\", '
                + '\\"reason\\": \\"\\", \\"time_ms\\": 0.001}\\n", forged);',
            )
        },
        "h_forbidden": {
            "fw_blocked.cu": '#include "/etc/passwd"\n' + ref,
            "fw_shared_tile.cu": '#include "../../secret.cuh"\n' + ref,
            "notes.txt": "my notes\n",
            "..\\fw_basic_2d.cu": ref,
        },
    }


KM_AVERAGE = "if (size > 0) centres[i] = sums[i] / size;"


def kmeans_students() -> dict[str, dict[str, str]]:
    """Lab 004 step b's file: the reference, and an update that divides by one member too many
    (right first assignment, wrong centres, so wrong from the second iteration on)."""
    ref = (KERNELS_DIR / "km_01_device_update.cu").read_text()
    return {
        "km_correct": {"km_01_device_update.cu": ref},
        "km_wrong_update": {
            "km_01_device_update.cu": _edit(ref, KM_AVERAGE, "if (size > 0) centres[i] = sums[i] / (size + 1);")
        },
    }


def _write(dest: Path, students: dict[str, dict[str, str]]) -> Path:
    for student, files in students.items():
        folder = dest / student
        folder.mkdir(parents=True)
        for name, text in files.items():
            (folder / name).write_text(text)
    return dest


def make_class(dest: Path) -> Path:
    """Write the class into ``dest`` (one folder per student, plus a link to a file of the machine
    in ``h_forbidden``) and return ``dest``."""
    _write(dest, students())
    os.symlink("/etc/hostname", dest / "h_forbidden" / "fw_coalesced.cu")
    return dest


def make_kmeans_class(dest: Path) -> Path:
    """Write the k-means class into ``dest`` and return ``dest``."""
    return _write(dest, kmeans_students())
