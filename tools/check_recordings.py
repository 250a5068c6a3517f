#!/usr/bin/env python3
"""List every recording older than the sources that decide its data; exit 1 if there is one.

    python tools/check_recordings.py          (make check-recordings)

Run it after changing kernels, notebooks or the package, before committing. Each recorded chapter
(results/<gpu>/<profile>/<chapter>/) is compared with today's sources that decide its data: its
notebook's code cells (not the explorer, questions or answers), the cudalab modules they import,
the kernels and headers those name. A recording that keeps per-file digests (source_files in its
provenance.json) is compared file by file; an older one through git, against the commit it names;
where neither can tell, it says so. A recording made with other parameters than its profile now
gives (params/*.yaml edited since) is stale too. One line per stale chapter: gpu/profile/chapter:
the changed files and parameters. A stale recording must be re-recorded on the GPU its profile names
(python build_report.py --gpu PROFILE --record on that GPU). Exit status: 0 when every recording
is current, 1 when one is stale.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cudalab.chapter.staleness import stale_recordings  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n", 2)[2],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--results", type=Path, default=None, help="the recordings' folder (default: results/)")
    args = p.parse_args(argv)
    stale = stale_recordings(args.results)
    for s in stale:
        print(s.line())
    print(f"{len(stale)} stale recorded chapter(s)" if stale else "every recording matches today's sources")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
