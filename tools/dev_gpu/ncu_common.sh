# Sourced by the Nsight Compute probes of tools/dev_gpu (kmeans_ncu.sh, matmul_ncu.sh): where ncu is,
# and a summary of the metrics a probe names from ncu's `--csv --page details` output.
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
OUT=${OUT:-build/dev_gpu}  # where a probe writes, under a folder of its name
PY=${PYTHON:-python3}      # the Python that runs the profiled target

# ncu_summary CSV LOG 'Metric A|Metric B|...': "metric = value unit" per named metric, or the
# probe's log tail where ncu wrote none (it failed, or found no such kernel).
ncu_summary() {
  grep -E "\"($3)\"" "$1" | awk -F'","' '{print $(NF-2) " = " $NF " " $(NF-1)}' | tr -d '"' || tail -5 "$2"
}
