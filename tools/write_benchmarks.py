#!/usr/bin/env python3
"""Write BENCHMARKS.md from the recorded chapter summaries (``make benchmarks``), and renew the
README's table of the GPUs side by side (between its markers) from the same recordings.

python tools/write_benchmarks.py [RESULTS_DIR] > BENCHMARKS.md
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cudalab.core.paths import RESULTS_DIR, ROOT  # noqa: E402
from cudalab.report.benchmarks import render, with_readme_table  # noqa: E402

if __name__ == "__main__":
    results = Path(sys.argv[1]) if len(sys.argv) > 1 else RESULTS_DIR
    readme = ROOT / "README.md"
    text = readme.read_text()
    if (new := with_readme_table(text, results)) != text:
        readme.write_text(new)
    sys.stdout.write(render(results))
