"""The k-means passes the Nsight Compute probes profile (kmeans_ncu.sh, kmeans_stalls.sh): five
iterations of the tensor variant at N = 4,194,304, D = 32 and the K given, on generated blobs;
with a BUILD (kmeans_builds.py's syntax; KMEANS_SOURCE, the source it copies), that build of the
pass instead of the chapter's.

    python3 tools/dev_gpu/kmeans_ncu_target.py K [BUILD]
"""

import sys
import tempfile
from pathlib import Path

from cudalab.labs.kmeans import gpu

sys.path.insert(0, str(Path(__file__).resolve().parent))
import kmeans_builds  # noqa: E402  (beside this script, not a package)

N, D, SEED, ITERATIONS = 4194304, 32, 2016, 5
K = int(sys.argv[1])
build = sys.argv[2] if len(sys.argv) > 2 else "default"
with tempfile.TemporaryDirectory() as tmp, kmeans_builds.planned(build):
    file = kmeans_builds.copies([build], Path(tmp))[build] if build != "default" else None
    runner = gpu.Runner(gpu.Problem(gpu.blobs_on_device(N, D, K, SEED), K), "tensor", file)
    for _ in range(ITERATIONS):
        runner.step()
    runner.result()
print(f"K = {K}, {build}: {ITERATIONS} iterations", file=sys.stderr)
