"""Recordings: keyed by GPU, provenance derived (commit, fingerprint), summaries rendered, compared."""

import json
import re
import subprocess

import pandas as pd
import pytest

from cudalab.chapter import catalog, recorded
from cudalab.chapter.recorded import PROVENANCE
from cudalab.core import provenance
from cudalab.core.errors import NoRecordedResults
from cudalab.core.paths import RESULTS_DIR, ROOT
from cudalab.report.benchmarks import README_BEGIN, render, with_readme_table
from cudalab.report.compare.pairwise import compare_recordings, compare_table, to_markdown
from cudalab.report.recordings import merge_recordings

RECORDINGS = recorded.all_recordings()
PROVENANCES = sorted(RESULTS_DIR.glob("*/*/*/provenance.json"))


def build(chapters, wall=10.0, command="python build_report.py --record"):
    return {
        "profile": "p",
        "command": command,
        "built_utc": "2026-01-01T00:00:00+00:00",
        "wall_s": wall,
        "chapters": {
            cid: {"ok": ok, "seconds": 1.0, "provenance": {"git_commit": "abc", "gpu_name": "G"}}
            for cid, ok in chapters.items()
        },
    }


def test_a_failed_chapter_keeps_its_earlier_recording():
    first = merge_recordings({}, build({"00": True, "01": True}, wall=100, command="full"), "G")
    second = merge_recordings(first, build({"00": True, "01": False}, wall=20, command="again"))
    assert second["chapters"]["01"]["build"]["command"] == "full"
    assert second["chapters"]["00"]["build"]["command"] == "again"
    assert second["chapters"]["00"]["build"]["chapters_ok"] == {"00": True, "01": False}
    assert second["gpu_name"] == "G"


def test_recordings_are_keyed_by_gpu_and_profile():
    assert RECORDINGS, "results/ holds recordings"
    for rec in RECORDINGS:
        assert rec.path.relative_to(RESULTS_DIR).parts == (rec.gpu, rec.profile)
        for prov in rec.path.glob("*/provenance.json"):
            p = json.loads(prov.read_text())
            assert recorded.gpu_slug(p["gpu_name"]) == rec.gpu, f"{prov} was measured on {p['gpu_name']}"
            assert p["profile"] == rec.profile


def _make(tmp_path, gpu, profile, when):
    d = tmp_path / gpu / profile
    d.mkdir(parents=True)
    (d / "recordings.json").write_text(
        json.dumps(
            {
                "profile": profile,
                "gpu_name": gpu.upper(),
                "chapters": {"00_x": {"gpu_name": gpu.upper(), "build": {"built_utc": when}}},
            }
        )
    )
    return d


def test_replay_picks_the_named_gpu_or_the_newest_and_says_which(tmp_path):
    _make(tmp_path, "nvidia-h100", "p", "2026-01-01")
    _make(tmp_path, "nvidia-h200", "p", "2026-02-01")
    rec, why = recorded.find("p", tmp_path)
    assert rec.gpu == "nvidia-h200" and "newest of 2" in why and "--from" in why
    assert recorded.find("p", tmp_path, gpu="h100")[0].gpu == "nvidia-h100"
    assert recorded.find("p", tmp_path, gpu="nvidia-h100")[0].gpu == "nvidia-h100"
    with pytest.raises(NoRecordedResults, match="on a GPU matching 'a100'.*recorded: p on nvidia-h100"):
        recorded.find("p", tmp_path, gpu="a100")
    with pytest.raises(NoRecordedResults, match="no recorded results for profile 'q'"):
        recorded.find("q", tmp_path)


def test_gpu_slug():
    assert recorded.gpu_slug("NVIDIA H100 80GB HBM3") == "nvidia-h100-80gb-hbm3"
    assert recorded.gpu_slug("  //  ") == "unknown-gpu"


def _is_shallow() -> bool:
    out = subprocess.run(["git", "rev-parse", "--is-shallow-repository"], cwd=ROOT, capture_output=True, text=True)
    return out.returncode != 0 or out.stdout.strip() == "true"


@pytest.mark.skipif(not (ROOT / ".git").exists() or _is_shallow(), reason="needs the repository's full history")
@pytest.mark.parametrize("prov", PROVENANCES, ids=lambda p: "/".join(p.parts[-4:-1]))
def test_every_recorded_commit_resolves_in_history(prov):
    commit = json.loads(prov.read_text())["git_commit"]
    assert re.fullmatch(r"[0-9a-f]{40}", commit), commit
    proc = subprocess.run(["git", "cat-file", "-e", f"{commit}^{{commit}}"], cwd=ROOT, capture_output=True)
    assert proc.returncode == 0, f"{prov}: commit {commit} is not in this repository's history"


@pytest.mark.parametrize("prov", PROVENANCES, ids=lambda p: "/".join(p.parts[-4:-1]))
def test_every_recording_carries_a_derived_fingerprint_and_its_axes(prov):
    p = json.loads(prov.read_text())
    fp = p.get("source_fingerprint") or {}
    assert set(fp) == {"sha256", "kernels", "package", "notebook", "profile"}, f"{prov}: no source fingerprint"
    assert all(re.fullmatch(r"[0-9a-f]{64}", v) for v in fp.values())
    assert p["commit_from"] in ("git", "source stamp"), p["commit_from"]
    assert p["git_dirty"] is False, f"{prov} was measured from uncommitted source"
    for table in p["tables"]:
        columns = pd.read_csv(prov.parent / f"{table}.csv", nrows=1).columns
        assert set(p["axes"][table]) <= set(columns), (table, p["axes"][table])


def test_fingerprint_changes_with_the_profile_and_notebook(tmp_path):
    nb = tmp_path / "a.ipynb"
    nb.write_text("{}")
    a = provenance.source_fingerprint(nb, {"x": 1})
    assert a == provenance.source_fingerprint(nb, {"x": 1})
    assert a["profile"] != provenance.source_fingerprint(nb, {"x": 2})["profile"]
    nb.write_text("{ }")
    assert (
        a["notebook"] != provenance.source_fingerprint(nb, {"x": 1})["notebook"]
        and a["sha256"] != provenance.source_fingerprint(nb, {"x": 1})["sha256"]
    )


def test_without_git_the_commit_comes_from_a_stamp_that_still_matches(tmp_path, monkeypatch):
    stamp = tmp_path / "stamp.json"
    monkeypatch.setattr(provenance, "SOURCE_STAMP", stamp)
    monkeypatch.setattr(provenance, "git_state", lambda: None)
    assert provenance.commit_state()["git_commit"] == "unknown"
    stamp.write_text(
        json.dumps({"git_commit": "c" * 40, "git_dirty": False, "tree_sha256": provenance.tree_fingerprint()})
    )
    assert provenance.commit_state() == {"git_commit": "c" * 40, "git_dirty": False, "commit_from": "source stamp"}
    # a .git of another commit under a copied tree (as on a GPU node) does not outvote a matching stamp
    monkeypatch.setattr(
        provenance, "git_state", lambda: {"git_commit": "d" * 40, "git_dirty": True, "commit_from": "git"}
    )
    assert provenance.commit_state()["git_commit"] == "c" * 40
    monkeypatch.setattr(provenance, "git_state", lambda: None)
    stamp.write_text(json.dumps({"git_commit": "c" * 40, "git_dirty": False, "tree_sha256": "0" * 64}))
    state = provenance.commit_state()
    assert state["git_dirty"] is True and "changed after stamping" in state["commit_from"]
    monkeypatch.setattr(
        provenance, "git_state", lambda: {"git_commit": "d" * 40, "git_dirty": False, "commit_from": "git"}
    )
    assert provenance.commit_state()["git_commit"] == "d" * 40, "a stale stamp gives way to git"


def test_benchmarks_md_is_rendered_from_the_recorded_summaries():
    text = render(RESULTS_DIR)
    for rec in RECORDINGS:
        assert f"## Profile `{rec.profile}` on {rec.gpu_name}" in text
    assert "no headline summary recorded" not in text, "every recorded chapter records its headlines"
    assert "add+min ceiling" in text and "cupy.max" in text
    assert (ROOT / "BENCHMARKS.md").read_text() == text, "run `make benchmarks` after recording"
    readme = (ROOT / "README.md").read_text()
    assert README_BEGIN in readme and with_readme_table(readme) == readme, "run `make benchmarks` after recording"
    if "H200" in text:
        assert "H200, h200: best" in readme and "H100 80GB HBM3, h100: best" in readme


def test_benchmarks_mark_each_stale_recording_where_its_numbers_appear(tmp_path):
    """A recorded chapter whose sources changed since shows the earlier code's numbers: BENCHMARKS.md
    says so under its headlines and in the side-by-side section, and the README's table marks its
    cell; a chapter recorded from today's sources carries no mark."""
    import shutil

    from cudalab.report.benchmarks import readme_table, stale_chapters

    natives = [r for r in RECORDINGS if r.profile in ("h100", "h200")]
    if len(natives) < 2:
        pytest.skip("needs the h100 and h200 recordings")
    for rec in natives:
        shutil.copytree(rec.path, tmp_path / rec.gpu / rec.profile)
    before = stale_chapters(tmp_path)
    fresh = [
        (rec, prov.parent.name)
        for rec in natives
        for prov in sorted((tmp_path / rec.gpu / rec.profile).glob(f"*/{PROVENANCE}"))
        if f"{rec.gpu}/{rec.profile}/{prov.parent.name}" not in before
    ]
    assert fresh, "some recorded chapter matches today's sources"
    rec, chapter = fresh[-1]
    prov = tmp_path / rec.gpu / rec.profile / chapter / PROVENANCE
    recorded = json.loads(prov.read_text())
    changed = sorted(recorded["source_files"])[0]
    recorded["source_files"][changed] = "0" * 64  # as if that file had changed since the recording
    prov.write_text(json.dumps(recorded))

    after = stale_chapters(tmp_path)
    where = f"{rec.gpu}/{rec.profile}/{chapter}"
    assert set(after) == set(before) | {where} and changed in after[where]
    text = render(tmp_path)
    section = text.split(f"## Profile `{rec.profile}` on {rec.gpu_name}")[1].split("\n## ")[0]
    title = catalog.chapter(chapter).title
    headline_block = section.split(f"**{title}**")[1].split("\n**")[0]
    assert f"**Stale:** {after[where]}" in headline_block
    assert f"*Stale:* {rec.gpu_name} ({rec.profile}) above: {after[where]}" in text
    row = next(line for line in readme_table(tmp_path) if line.startswith(f"| {title} |"))
    assert "(stale)" in row
    others = [f"{r.gpu}/{r.profile}/{c}" for r, c in fresh if f"{r.gpu}/{r.profile}/{c}" != where]
    assert not any(o in after for o in others), "an unchanged recording carries no mark"


def test_compare_labels_by_the_smaller_recorded_spread():
    a = pd.DataFrame(
        {
            "n": [1, 2, 3, 4],
            "time_ms": [10.0, 10.0, 10.0, 10.0],
            "time_ms_q1": [9.5, 9.5, 9.5, 9.9],
            "time_ms_q3": [10.5, 10.5, 10.5, 10.1],
            "status": "ok",
        }
    )
    b = a.assign(time_ms=[10.4, 8.0, 12.0, 10.4], time_ms_q1=[9.0, 7.9, 11.9, 9.0], time_ms_q3=[11.0, 8.1, 12.1, 11.0])
    out = compare_table(a, b, ["n"]).set_index("n")
    assert out["label"].to_dict() == {1: "same", 2: "faster", 3: "slower", 4: "slower"}
    assert compare_table(a, b, ["n"], threshold=0.05).set_index("n").loc[4, "label"] == "same"
    wrong = b.assign(status=["ok", "wrong", "ok", "ok"])
    assert 2 not in set(compare_table(a, wrong, ["n"])["n"]), "a wrong result is never compared"


def test_compare_the_committed_h100_and_gtx680_grids():
    h100 = recorded.find("h100")[0].path
    gtx680 = recorded.find("gtx680")[0].path
    results = compare_recordings(h100, gtx680)
    # joined point by point: the profiles share chapter 04's phase split (N = 5000), not its ladder (N differs)
    assert ("04_blocking_factor", "phase_split") in results and ("00_gpu_capabilities", "copy_bandwidth") in results
    assert ("04_blocking_factor", "ladder") not in results, "a table with no point in common is left out"
    for frame in results.values():
        assert set(frame["label"]) <= {"same", "faster", "slower"} and frame["ratio_b_over_a"].gt(0).all()
    md = to_markdown(results, "h100", "gtx680")
    assert "## 04_blocking_factor / phase_split" in md and "| variant | phase |" in md
