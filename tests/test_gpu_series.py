"""A student's file across chapter 04's whole sweep, measured on the GPU present (issue 67 item 1):
``build_report.py --kernels`` with a copy of ``fw_blocked.cu`` that is wrong at BF 16 only. Every
blocking factor the file builds for on this GPU is a point of the series, measured beside the
reference in the same run; the wrong point is flagged, never timed into the verdict's speed, and
the whole file's verdict is wrong. The gtx680 profile's quick grid (n = 1000) keeps it to a minute
or two: the path is the same at the H200's own sizes, which ``tools/bench_build.py --yours`` times."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys

import pandas as pd
import pytest

from cudalab.core.paths import KERNELS_DIR, ROOT

pytestmark = pytest.mark.gpu

CHAPTER = "04_blocking_factor"
PHASE1_LOOP = "for (int k = 0; k < BF; ++k) {"


def _wrong_at_bf16(text: str) -> str:
    """Phase 1 skips its last pivot vertex at BF 16 only: right at every other blocking factor."""
    assert PHASE1_LOOP in text
    return text.replace(PHASE1_LOOP, "for (int k = 0; k < BF - (BF == 16); ++k) {", 1)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    base = tmp_path_factory.mktemp("gpu-series")
    mine = base / "mine"
    mine.mkdir()
    (mine / "fw_blocked.cu").write_text(_wrong_at_bf16((KERNELS_DIR / "fw_blocked.cu").read_text()))
    out = base / "out"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "build_report.py"), "--kernels", str(mine), "--only", "04", "--format", "html",
         "--gpu", "gtx680", "--quick",
         "--seed", "1234", "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    print(proc.stdout[-3000:], proc.stderr[-3000:])
    sha = hashlib.sha256((mine / "fw_blocked.cu").read_bytes()).hexdigest()
    return proc, out, sha


def test_the_series_covers_every_blocking_factor_the_file_builds_for(built):
    proc, out, sha = built
    whole = pd.read_csv(out / "data" / CHAPTER / "yours_sweep.csv")
    ladder = whole[whole["table"].eq("ladder") & whole["series"].eq(f"yours {sha[:8]}")]
    steps = pd.read_csv(out / "data" / CHAPTER / "ladder.csv")["variant"]
    assert set(ladder["variant"]) == set(steps[steps.str.match(r"[4-7]\. ")]), "each ladder step built from the file"
    sweep = whole[whole["table"].ne("ladder")]
    mine = sweep[sweep["series"].eq(f"yours {sha[:8]}")]
    assert len(mine) and set(sweep["series"]) == {"reference", f"yours {sha[:8]}"}
    assert set(mine["block_factor"].astype(int)) >= {8, 16, 32, 64}
    # every point of the chapter's own table that launches fw_blocked.cu, at each n it measured
    table = pd.read_csv(out / "data" / CHAPTER / "blocking_factor_sweep.csv")
    swept = mine[mine["from_sweep"]]  # the graded point (n = 3000) besides
    assert set(swept["n"].astype(int)) == set(table["n"].astype(int))
    # the reference measured at the same points, in the same run
    assert set(sweep[sweep["series"].eq("reference")]["point"]) == set(mine["point"])


def test_the_wrong_point_is_flagged_and_the_others_timed(built):
    proc, out, sha = built
    sweep = pd.read_csv(out / "data" / CHAPTER / "yours_sweep.csv")
    mine = sweep[sweep["series"].str.startswith("yours")]
    ladder = mine[mine["table"].eq("ladder")]  # BF 32 and 64: right, at the reference's speed
    assert len(ladder) and ladder["status"].eq("ok").all() and ladder["speed_vs_reference"].between(0.8, 1.25).all()
    mine = mine[mine["table"].ne("ladder")]
    at16 = mine[mine["block_factor"].astype(int).eq(16)]  # caught on the sparse graph, not on GenMatrix
    assert len(at16) and not at16["status"].eq("ok").any()
    others = mine[mine["block_factor"].astype(int).ne(16)]
    assert others["status"].eq("ok").all() and others["time_ms"].gt(0).all()
    # the right points run at the reference's speed (the same source)
    assert others["speed_vs_reference"].between(0.8, 1.25).all(), others[["point", "speed_vs_reference"]]


def test_the_files_verdict_is_wrong_and_the_seed_is_printed(built):
    proc, out, sha = built
    assert proc.returncode == 1  # a file wrong at a point
    assert re.search(r"your fw_blocked\.cu in 04_blocking_factor: wrong", proc.stdout + proc.stderr)
    verdicts = json.loads((out / "data" / CHAPTER / "yours_verdicts.json").read_text())
    assert "wrong" in json.dumps(verdicts)
    assert "1234" in (out / "report.html").read_text()  # the check seed, with the report
    assert f"yours {sha[:8]}" in (out / "report.html").read_text()
