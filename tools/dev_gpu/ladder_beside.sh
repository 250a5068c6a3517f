#!/usr/bin/env bash
# Chapter 04's ladder alone and beside a neighbour on the other GPU (ladder_beside.py's question),
# each ladder in a process of its own with an empty CuPy kernel cache, except "alone, warm cache".
#   OUT=/tmp/out tools/dev_gpu/ladder_beside.sh      (2 GPUs; about 3 minutes)
set -uo pipefail
cd "$(dirname "$0")/../.."
export PYTHONPATH=${PYTHONPATH:-$PWD} PYTHONUNBUFFERED=1 OUT=${OUT:-/tmp/out}
P="python3 tools/dev_gpu/ladder_beside.py"
fresh() { rm -rf "/tmp/lb-$1"; mkdir -p "/tmp/lb-$1"; echo "/tmp/lb-$1"; }
lscpu | grep -E '^(CPU\(s\)|Model name|Thread)'
CUDA_VISIBLE_DEVICES=0 CUPY_CACHE_DIR=$(fresh alone) $P ladder alone
CUDA_VISIBLE_DEVICES=0 CUPY_CACHE_DIR=/tmp/lb-alone $P ladder alone_warm_cache
CUDA_VISIBLE_DEVICES=1 CUPY_CACHE_DIR=$(fresh read) $P read 45 & pid=$!
sleep 8
CUDA_VISIBLE_DEVICES=0 CUPY_CACHE_DIR=$(fresh beside_read) $P ladder beside_read
wait $pid
CUDA_VISIBLE_DEVICES=1 CUPY_CACHE_DIR=$(fresh compile) CUDALAB_CACHE_DIR=/tmp/lb-compile $P compile & pid=$!
sleep 3
CUDA_VISIBLE_DEVICES=0 CUPY_CACHE_DIR=$(fresh beside_compile) $P ladder beside_compile
wait $pid
