"""Which recorded blocked kernel a solve of V vertices runs (labs.fw.blocked.choice, apsp's default)."""

from __future__ import annotations

import pandas as pd
import pytest

from cudalab.labs.fw.blocked import choice
from cudalab.labs.fw.blocked.kernels import KernelSpec


def row(n, bf, ms, kernel="min-plus", status="ok", dpx=True):
    return {"n": n, "kernel": kernel, "block_factor": bf, "time_ms": ms, "status": status, "dpx": dpx, "tile": 8}


# shaped like the h100 recording: BF 512 the fastest at 16,384, BF 64 at 3,072 (the ladder's N)
ROWS = pd.DataFrame(
    [
        row(3072, 64, 3.25),
        row(3072, 256, 3.48),
        row(3072, 512, 3.42),
        row(16384, 64, 309.4),
        row(16384, 256, 281.5),
        row(16384, 512, 277.9),
        {"n": 3072, "kernel": None, "block_factor": 32, "time_ms": 8.9, "status": "ok"},  # a ladder step
    ]
)


def test_the_fastest_at_the_largest_n_runs_a_graph_of_that_size():
    picked = choice.choose(ROWS, 16384)
    assert picked.spec == KernelSpec("minplus", 512, True, 8)
    assert (picked.from_n, picked.measured_ms, picked.expected_ms) == (16384, 277.9, 277.9)


def test_padding_to_a_deep_round_can_cost_more_than_the_round_saves():
    """V = 12,000: BF 512 pads to 12,288, BF 256 to 12,032 (7.4% fewer relaxations)."""
    ranked = choice.candidates(ROWS, 12000)
    assert [s.bf for s in ranked["spec"]] == [256, 512, 64]
    assert ranked["expected_ms"].iloc[0] == pytest.approx(281.5 * (12032 / 16384) ** 3)
    assert ranked["expected_ms"].iloc[1] == pytest.approx(277.9 * (12288 / 16384) ** 3)
    assert "V = 12,000" in choice.choose(ROWS, 12000).reason() and "12,032" in choice.choose(ROWS, 12000).reason()


def test_a_small_graph_is_judged_at_the_nearest_recorded_n():
    picked = choice.choose(ROWS, 1000)
    assert (picked.spec.bf, picked.from_n) == (64, 3072)


def test_kernels_are_compared_at_one_n_never_a_small_ns_time_beside_a_large_ns_scaled_down():
    """BF 512 without DPX, timed only at 16,384, would scale to 0.02 ms at V = 1,000 and win."""
    rows = pd.concat([ROWS, pd.DataFrame([row(16384, 512, 326.0, dpx=False)])])
    ranked = choice.candidates(rows, 1000)
    assert set(ranked["n"]) == {3072} and ranked["spec"].iloc[0].as_text() == "minplus:64"


def test_a_wrong_or_skipped_time_never_chooses_and_the_next_recorded_n_stands_in():
    wrong = ROWS.assign(status=["wrong" if n == 3072 else s for n, s in zip(ROWS["n"], ROWS["status"])])
    rows = pd.concat([wrong, pd.DataFrame([row(8192, 64, float("nan"), status="skipped")])])
    ranked = choice.candidates(rows, 1000)
    assert set(ranked["status"]) == {"ok"} and set(ranked["n"]) == {16384}, "no correct time at 3,072 or 8,192"
    ok_at_3072 = pd.concat([rows, pd.DataFrame([row(3072, 256, 3.5)])])
    assert [s.bf for s in choice.candidates(ok_at_3072, 1000)["spec"]] == [256]


def test_no_correct_blocked_time_chooses_nothing_and_a_graph_needs_a_vertex():
    assert choice.choose(ROWS[ROWS["kernel"].isna()], 1000) is None
    assert choice.choose(pd.DataFrame(), 1000) is None
    assert choice.choose(ROWS.drop(columns=["kernel"]), 1000) is None
    with pytest.raises(ValueError, match="at least one vertex"):
        choice.choose(ROWS, 0)


def test_without_dpx_is_a_kernel_of_its_own():
    rows = pd.DataFrame([row(8192, 256, 44.5, dpx=False), row(8192, 256, 36.1)])
    assert [s.as_text() for s in choice.candidates(rows, 8192)["spec"]] == ["minplus:256", "minplus:256:nodpx"]


def test_apsp_reads_the_recorded_tables_of_the_present_gpus_profile():
    from cudalab.apsp import recorded_kernel_for

    text, why = recorded_kernel_for("NVIDIA H100 80GB HBM3", 12000)
    spec = KernelSpec.parse(text)
    assert spec.kind in ("minplus", "registers", "shared")
    assert why.startswith("of chapter 04's kernels, the fastest expected at V = 12,000")
    assert "04_blocking_factor" in why


def test_apsp_falls_back_to_the_chapters_best_where_its_tables_time_no_kernel(tmp_path, monkeypatch):
    from cudalab import apsp
    from cudalab.core.errors import NoRecordedResults

    folder = tmp_path / "results" / "some-gpu" / "h100" / "04_blocking_factor"
    folder.mkdir(parents=True)
    monkeypatch.setattr(apsp, "_recorded_chapter", lambda gpu: folder)
    with pytest.raises(NoRecordedResults, match="records no best_kernel"):
        apsp.recorded_kernel_for("any", 1000)
    (folder / "summary.json").write_text('[{"key": "best_kernel", "value": "minplus:256"}]')
    pd.DataFrame([row(3072, 64, 3.2, status="wrong")]).to_csv(folder / "ladder.csv", index=False)
    text, why = apsp.recorded_kernel_for("any", 1000)
    assert text == "minplus:256" and why == "chapter 04's best, recorded in some-gpu/h100/04_blocking_factor"
