"""The recording log and BENCHMARKS.md, both derived from what builds recorded."""

from cudalab.benchmarks import render
from cudalab.build import merge_recordings
from cudalab.paths import RESULTS_DIR, ROOT


def build(chapters, wall=10.0, command="python build_report.py --record"):
    return {"profile": "p", "command": command, "built_utc": "2026-01-01T00:00:00+00:00", "wall_s": wall,
            "chapters": {cid: {"ok": ok, "seconds": 1.0, "provenance": {"git_commit": "abc", "gpu_name": "G"}}
                         for cid, ok in chapters.items()}}


def test_a_failed_chapter_keeps_its_earlier_recording():
    first = merge_recordings({}, build({"00": True, "01": True}, wall=100, command="full"))
    second = merge_recordings(first, build({"00": True, "01": False}, wall=20, command="again"))
    assert second["chapters"]["01"]["build"]["command"] == "full"
    assert second["chapters"]["00"]["build"]["command"] == "again"
    assert second["chapters"]["00"]["build"]["chapters_ok"] == {"00": True, "01": False}


def test_benchmarks_md_is_what_the_generator_writes_from_results():
    text = render(RESULTS_DIR)
    for profile in ("gtx680", "h100"):
        assert f"Profile `{profile}`" in text
    assert "| 16x16 |" in text and "speedup vs sequential CPU" in text
    assert (ROOT / "BENCHMARKS.md").read_text() == text, "run `make benchmarks` after recording"
