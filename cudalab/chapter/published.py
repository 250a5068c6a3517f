"""Setting measured numbers beside a lab's published ones, as one tidy frame."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd


def beside_published(
    measured: pd.DataFrame,
    published: pd.DataFrame | None,
    *,
    on: str,
    value: str,
    measured_label: str,
    published_label: str,
    key_label: Callable[[object], str] = str,
) -> pd.DataFrame:
    """``value`` per ``on`` at the largest measured n (ok results only) and at the published n.

    Each source's label names its n, since the lab's largest n and ours may differ.
    """
    rows = []
    ok = measured[measured["status"].eq("ok")]
    if len(ok):
        n = int(ok["n"].max())
        for r in ok[ok["n"].eq(n)].to_dict("records"):
            rows.append({"key": r[on], value: r[value], "source": f"{measured_label}, N={n}", "n": n})
    if published is not None and value in published and on in published:
        for r in published.dropna(subset=[value]).to_dict("records"):
            rows.append(
                {"key": r[on], value: r[value], "source": f"{published_label}, N={int(r['n'])}", "n": int(r["n"])}
            )
    frame = pd.DataFrame(rows, columns=["key", value, "source", "n"])
    frame.insert(0, on, frame.pop("key"))
    frame[on] = frame[on].map(key_label)
    return frame
