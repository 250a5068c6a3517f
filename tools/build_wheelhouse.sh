#!/usr/bin/env bash
# Build an offline wheelhouse of what a GPU node lacks, for a node without internet.
#
#   tools/build_wheelhouse.sh [DIR] [PYTHON_VERSION]      (default: wheelhouse/ for Python 3.12)
#
# GPU nodes usually have CUDA, CuPy, numpy, pandas, matplotlib and seaborn already (ours do), but not the
# Jupyter stack that papermill and nbconvert need. pip resolves the dependencies of requirements-gpu-node.txt
# for the node's Python and manylinux x86_64 and downloads binary wheels only. Carry DIR to the node, then:
#
#   python3 -m pip install --no-index --find-links DIR --target /tmp/site -r requirements-gpu-node.txt
#   export PYTHONPATH=/tmp/site:$PWD
#   python3 -m pip install --no-index --no-deps --upgrade --target /tmp/site DIR/dask/*.whl
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-wheelhouse}
py=${2:-3.12}
rm -rf "$dir" && mkdir -p "$dir"
platforms=()
for tag in manylinux_2_39_x86_64 manylinux_2_35_x86_64 manylinux_2_34_x86_64 manylinux_2_31_x86_64 manylinux_2_28_x86_64 \
           manylinux_2_27_x86_64 manylinux_2_24_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux1_x86_64 any; do
  platforms+=(--platform "$tag")
done
python3 -m pip download --quiet --only-binary=:all: --implementation cp --python-version "$py" \
  "${platforms[@]}" -d "$dir" -r requirements-gpu-node.txt
# Dask for build_report.py --workers (requirements-dask-node.txt), in a folder of its own, installed with
# --no-deps: its closure includes numpy, pandas and matplotlib's dependencies, which the node has already
# (a second copy on PYTHONPATH would shadow the node's); they are dropped here (34 MB the node never uses).
python3 -m pip download --quiet --only-binary=:all: --implementation cp --python-version "$py" \
  "${platforms[@]}" -d "$dir/dask" -r requirements-dask-node.txt
rm -f "$dir"/dask/{numpy,pandas,pillow,contourpy,python_dateutil,tzdata}-*.whl
echo "wheelhouse: $(ls "$dir"/*.whl "$dir"/dask/*.whl | wc -l) wheels, $(du -sh "$dir" | cut -f1) in $dir"
