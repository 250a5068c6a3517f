#!/usr/bin/env python3
"""Write BENCHMARKS.md from the recorded chapter summaries (``make benchmarks``).

python tools/write_benchmarks.py [RESULTS_DIR] > BENCHMARKS.md
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cudalab.core.paths import RESULTS_DIR  # noqa: E402
from cudalab.report.benchmarks import render  # noqa: E402

if __name__ == "__main__":
    sys.stdout.write(render(Path(sys.argv[1]) if len(sys.argv) > 1 else RESULTS_DIR))
