"""The order a Dask build submits its chapters in (issue 45, item 2): longest first by the last
recorded build of the profile, another profile's record where it has none, and a chapter no
record names first."""

from __future__ import annotations

import json

from cudalab.report import order


def _record(folder, name: str, profile: str, gpu: str, date: str, seconds: dict[str, float], label: str = "cold"):
    (folder / "build_times").mkdir(exist_ok=True)
    record = {
        "profile": profile,
        "machine": {"gpu_name": gpu},
        "date_utc": date,
        "builds": {label: {"chapter_seconds": seconds}},
    }
    (folder / "build_times" / f"{name}.json").write_text(json.dumps(record))


def test_the_profiles_own_newest_gpu_record_decides_and_longest_goes_first(tmp_path):
    _record(tmp_path, "a", "h100", "NVIDIA H100", "2026-11-01", {"01": 10.0, "02": 50.0, "03": 30.0})
    _record(tmp_path, "b", "h100", "NVIDIA H100", "2026-11-20", {"01": 40.0, "02": 20.0, "03": 30.0})
    _record(tmp_path, "c", "h100", "none", "2026-11-25", {"01": 1.0, "02": 99.0, "03": 2.0})  # no GPU: a replay
    _record(tmp_path, "d", "gtx680", "NVIDIA H100", "2026-11-26", {"01": 1.0, "02": 2.0, "03": 3.0})
    seconds = order.recorded_seconds("h100", tmp_path)
    assert seconds == {"01": 40.0, "02": 20.0, "03": 30.0}
    assert order.longest_first(["01", "02", "03", "04"], seconds) == ["04", "01", "03", "02"]


def test_a_profile_without_a_record_takes_another_profiles_and_none_keeps_chapter_order(tmp_path):
    _record(tmp_path, "d", "gtx680", "NVIDIA H100", "2026-11-26", {"01": 1.0, "02": 2.0})
    assert order.longest_first(["01", "02"], order.recorded_seconds("rtx2080", tmp_path)) == ["02", "01"]
    assert order.recorded_seconds("h100", tmp_path / "nothing") == {}
    assert order.longest_first(["01", "02", "03"], {}) == ["01", "02", "03"]
