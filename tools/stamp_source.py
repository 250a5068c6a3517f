#!/usr/bin/env python3
"""Write the source stamp that travels with the tree to a GPU node without .git.

    python tools/stamp_source.py [PATH]        (default: wheelhouse/source-stamp.json)

The stamp holds the commit and dirty flag read from git here, and the fingerprint of the tree
(kernels, package, notebooks, profiles). On the node, recordings take their commit from it only
while the tree still has that fingerprint; an edited tree is recorded as dirty. ``make wheelhouse``
runs this; run it again after each commit before sending the tree.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cudalab.core.errors import CudalabError  # noqa: E402
from cudalab.core.paths import SOURCE_STAMP  # noqa: E402
from cudalab.core.provenance import write_stamp  # noqa: E402

if __name__ == "__main__":
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else SOURCE_STAMP
    try:
        stamp = write_stamp(path)
    except CudalabError as exc:
        sys.exit(f"error: {exc}")
    print(f"{path}: {json.dumps(stamp)}")
    if stamp["git_dirty"]:
        print("warning: the tree has uncommitted changes; recordings made from it will say so", file=sys.stderr)
