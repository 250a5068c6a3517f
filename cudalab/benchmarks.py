"""BENCHMARKS.md, written from the recorded results (never typed by hand).

    python -m cudalab.benchmarks > BENCHMARKS.md      (or: make benchmarks)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Callable

import pandas as pd

from cudalab.paths import RESULTS_DIR
from cudalab.scaling import with_speedups


def _provenance(profile_dir: Path, chapter: str) -> dict:
    return json.loads((profile_dir / chapter / "provenance.json").read_text())


def _block_size(profile_dir: Path) -> str:
    d = profile_dir / "01_block_size"
    res = with_speedups(pd.read_csv(d / "block_sweep.csv"), pd.read_csv(d / "cpu_reference.csv"))
    n = int(res["n"].max())
    top = res[res["n"].eq(n)].sort_values("time_ms")
    lines = [f"Chapter 01, basic Floyd-Warshall kernel at the largest N = {n} "
             f"(median of {int(top['repeats'].min())}+ timed solves; CPU time {top['cpu_time_source'].iloc[0]}):", "",
             "| block | time (s) | interquartile range (s) | speedup vs sequential CPU | check |",
             "|---|---:|---:|---:|---|"]
    for r in top.to_dict("records"):
        speed = f"{r['speedup_vs_cpu']:.1f}x" if r["status"] == "ok" else "not counted"
        lines.append(f"| {r['variant']} | {r['time_ms'] / 1e3:.3f} | {r['time_ms_q1'] / 1e3:.3f} - "
                     f"{r['time_ms_q3'] / 1e3:.3f} | {speed} | {r['status']} vs {r.get('checked_against', '?')} |")
    lines.append(f"\nCPU reference (sequential C, -O2): {top['cpu_time_ms'].iloc[0] / 1e3:.1f} s at N = {n}; "
                 f"all {len(res)} (N, block) points: {res['status'].value_counts().to_dict()}.")
    return "\n".join(lines)


def _capabilities(profile_dir: Path) -> str:
    c = pd.read_csv(profile_dir / "00_gpu_capabilities" / "ceilings.csv").iloc[0]
    bw = pd.read_csv(profile_dir / "00_gpu_capabilities" / "copy_bandwidth.csv")
    big = bw.sort_values("transfer_bytes").groupby("direction").last()["bandwidth_GBps"]
    return (f"Chapter 00: device-to-device copy {c['value']:.0f} GB/s (read + write, {c['transfer_bytes'] / 2**20:.0f} MiB, "
            f"{c['fraction_of_theoretical_peak']:.0%} of theoretical peak); pinned host-to-device "
            f"{big['host_to_device']:.1f} GB/s, device-to-host {big['device_to_host']:.1f} GB/s.")


def _coalescing(profile_dir: Path) -> str:
    d = profile_dir / "02_coalescing"
    vm = pd.read_csv(d / "vecmax_sweep.csv")
    ceil = pd.read_csv(d / "vecmax_ceilings.csv").set_index("ceiling")["bandwidth_GBps"]
    vm = vm[vm["status"].eq("ok")].assign(of_max=lambda f: f["bandwidth_GBps"] / ceil["cupy_max"],
                                          of_copy=lambda f: f["bandwidth_GBps"] / ceil["device_to_device_copy"])
    lines = [f"Chapter 02, vecMax on {int(vm['n'].iloc[0]):,} floats; ceilings in the same run: cupy.max "
             f"{ceil['cupy_max']:.0f} GB/s, device-to-device copy {ceil['device_to_device_copy']:.0f} GB/s (read + write).", "",
             "| kernel | best blocks x threads | GB/s | of cupy.max | of copy | at the lab's 80 x 128 (GB/s) |",
             "|---|---|---:|---:|---:|---:|"]
    for kernel, g in vm.groupby("kernel"):
        b = g.sort_values("time_ms").iloc[0]
        lab = g[g["blocks"].eq(80) & g["threads_per_block"].eq(128)]["bandwidth_GBps"]
        lines.append(f"| {kernel} | {int(b.blocks)} x {int(b.threads_per_block)} | {b.bandwidth_GBps:.0f} | "
                     f"{b.of_max:.1%} | {b.of_copy:.1%} | {lab.iloc[0]:.0f} |" if len(lab) else "|")
    lines += ["", _best_fw(d / "fw_sweep.csv", "Chapter 02 Floyd-Warshall")]
    return "\n".join(lines)


def _best_fw(path: Path, what: str) -> str:
    f = pd.read_csv(path)
    n = int(f["n"].max())
    at = f[f["n"].eq(n)]
    basic = at[at["variant"].eq("basic 16x16")]["time_ms"].iloc[0]
    best = at[at["status"].eq("ok")].sort_values("time_ms").iloc[0]
    return (f"{what} at N = {n}: best {best.variant}, {best.time_ms / 1e3:.3f} s, **{basic / best.time_ms:.2f}x** the basic "
            f"16x16 kernel ({basic / 1e3:.3f} s) in the same run; {int(f['status'].eq('ok').sum())} of {len(f)} points checked ok.")


def _shared_memory(profile_dir: Path) -> str:
    d = profile_dir / "03_shared_memory"
    check = pd.read_csv(d / "correctness.csv")
    flagged = check[check["published"].astype(bool) & check["status"].eq("wrong")]["kernel"].unique()
    return (_best_fw(d / "shared_sweep.csv", "Chapter 03 shared memory") +
            f" As-published kernels flagged wrong by the correctness table: {', '.join(flagged) or 'none'}.")


def _blocking_factor(profile_dir: Path) -> str:
    d = profile_dir / "04_blocking_factor"
    prov = _provenance(profile_dir, "04_blocking_factor")
    ceil = pd.read_csv(d / "add_min_ceiling.csv")
    ceil = ceil[ceil["status"].eq("ok")].sort_values("relaxations_per_s").iloc[-1]
    ladder = pd.read_csv(d / "ladder.csv")
    n = int(ladder["n"].iloc[0])
    basic = ladder[ladder["kernel"].eq("basic")].iloc[0]
    ok = ladder[ladder["status"].eq("ok") & ~ladder["kernel"].eq("basic")]
    best = ok.sort_values("time_ms").iloc[0]
    rate = n**3 / (best.time_ms * 1e-3)
    lines = [f"Chapter 04, blocked Floyd-Warshall at N = {n}, measured on {prov.get('gpu_name')} on {prov.get('date_utc')[:10]} "
             f"(commit `{str(prov.get('git_commit'))[:10]}`), every solve checked against {best.get('checked_against', '?')}:", "",
             f"- int32 add+min ceiling in the same run: {ceil.relaxations_per_s / 1e12:.2f} T relaxations/s ({ceil.instruction}).",
             f"- Best kernel: {best.variant}, {best.time_ms:.1f} ms (interquartile {best.time_ms_q1:.1f} - {best.time_ms_q3:.1f} ms): "
             f"{rate / 1e12:.2f} T relaxations/s, **{rate / ceil.relaxations_per_s:.0%} of the add+min ceiling**.",
             f"- Basic 16x16 per-k kernel of chapter 01 in the same run: {basic.time_ms / 1e3:.3f} s; the best kernel is "
             f"**{basic.time_ms / best.time_ms:.1f}x** faster.", "",
             "| ladder step | time (ms) | speedup over the step before |", "|---|---:|---:|"]
    prev = None
    for r in ladder[~ladder["kernel"].eq("basic")].to_dict("records"):
        gain = f"{prev / r['time_ms']:.2f}x" if prev and r["status"] == "ok" else ""
        lines.append(f"| {r['variant']} | {r['time_ms']:.1f} | {gain} |")
        prev = r["time_ms"]
    return "\n".join(lines)


SUMMARIES: dict[str, Callable[[Path], str]] = {"00_gpu_capabilities": _capabilities, "01_block_size": _block_size,
                                               "02_coalescing": _coalescing, "03_shared_memory": _shared_memory,
                                               "04_blocking_factor": _blocking_factor}


def render(results: Path = RESULTS_DIR) -> str:
    out = ["# Benchmarks", "",
           "Written by `python -m cudalab.benchmarks` from the results recorded under `results/` by "
           "`build_report.py --record` on a real GPU. Every number below comes from those files.", ""]
    for profile_dir in sorted(p for p in results.iterdir() if p.is_dir()):
        rec = json.loads((profile_dir / "recordings.json").read_text())
        chapters = rec["chapters"]
        first = _provenance(profile_dir, next(iter(chapters)))
        out += [f"## Profile `{profile_dir.name}` on {first.get('gpu_name')}", "",
                f"Driver {first.get('driver_version')}, CUDA runtime {first.get('cuda_runtime')}, "
                f"CuPy {first.get('cupy')}.", "",
                "| chapter | recorded (UTC) | commit | chapter run time (s) | recorded by | its wall time (s) | chapters in that build |",
                "|---|---|---|---:|---|---:|---|"]
        for cid, c in chapters.items():
            p = _provenance(profile_dir, cid)
            built = ", ".join(f"{k[:2]} {'ok' if ok else 'failed'}" for k, ok in c["build"].get("chapters_ok", {}).items())
            out.append(f"| {cid} | {p['date_utc']} | `{str(c['git_commit'])[:10]}` | {c['seconds']:.0f} | "
                       f"`{c['build']['command']}` | {c['build']['wall_s']:.0f} | {built} |")
        out.append("")
        for cid in chapters:
            if cid in SUMMARIES:
                out += [SUMMARIES[cid](profile_dir), ""]
    return "\n".join(out).rstrip() + "\n"


if __name__ == "__main__":
    sys.stdout.write(render(Path(sys.argv[1]) if len(sys.argv) > 1 else RESULTS_DIR))
