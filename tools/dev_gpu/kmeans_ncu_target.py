"""The k-means run the Nsight Compute probes profile (kmeans_ncu.sh, kmeans_stalls.sh): the tensor
variant to convergence at N = 4,194,304, D = 32 and the K given, on generated blobs.

    python3 tools/dev_gpu/kmeans_ncu_target.py K
"""

import sys

from cudalab.labs.kmeans import gpu

N, D, SEED = 4194304, 32, 2016
K = int(sys.argv[1])
problem = gpu.Problem(gpu.blobs_on_device(N, D, K, SEED), K)
run = gpu.run_to_convergence(problem, "tensor", loop_on="host")
print(f"K = {K}: {run['iterations']} iterations", file=sys.stderr)
