#!/usr/bin/env bash
# The device calls of 2026-12-05, stored in lab/results/s42 (after `bash .gpu/tools/setup-remote`): usage
#   bash lab/gpu/s42_gpu.sh COMMIT split|suite|chain
# split: the split-K GPU tests, v135's per-call times of forced split plans against the unsplit
# picks (lab/split_kernels.py) and the gemm_rowsum bench at v134's shapes; suite: the GPU
# tests outside test_bwd_main.py; chain: the SDPA chain bench (bench/sdpa_bwd.py). Under $OUT.
set -u
. "$(dirname "$0")/gpu_prologue.sh"
case ${2:?} in
split)
  timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider -rfE \
    tests/templates/test_gemm_rowsum_split.py tests/templates/test_gemm_rowsum.py \
    tests/test_run.py tests/test_bench_scripts.py > "$out/gpu_split_tests.log" 2>&1
  grep -E "FAILED|ERROR" "$out/gpu_split_tests.log" | head; tail -1 "$out/gpu_split_tests.log"
  # (each shape: the forced split, then the unsplit plan the model picks there)
  sk() { timeout 60 python3 lab/split_kernels.py "$@" 2>&1 | grep -v Warn; }
  { sk 1024,2048,16384 split_k=2 -- tile_n=128
    sk 2048,1024,16384 split_k=2 -- tile_n=128
    sk 3072,3072,16384 split_k=4 -- tile_k=64
    sk 1024,1024,32768 split_k=4 -- tile_n=128
    sk 2432,1792,16384 split_k=8 -- tile_k=64; } > "$out/split_kernels.txt"
  grep "call" "$out/split_kernels.txt"
  timeout 260 python3 bench/gemm_rowsum.py --commit "$commit" --out "$out/gemm" \
    --peers frost,frost_model,torch --rounds 3 --shape 1024,1024,32768 \
    --shape 1024,2048,16384 --shape 2048,1024,16384 --shape 512,512,65536 \
    --shape 3072,3072,16384 --shape 2432,1792,16384 --shape 4096,4096,4096 \
    --shape 768,768,49152 --shape 1024,1536,24576 > "$out/gemm.txt" 2>&1
  grep -v Warn "$out/gemm.txt" | tail -16 ;;
suite)
  timeout 560 python3 -m pytest -m gpu -q -p no:cacheprovider -rfE \
    --ignore=tests/templates/test_bwd_main.py > "$out/gpu_suite.log" 2>&1
  grep -E "FAILED|ERROR" "$out/gpu_suite.log" | head; tail -1 "$out/gpu_suite.log" ;;
chain)
  timeout 400 python3 bench/sdpa_bwd.py --commit "$commit" --warmup 3 --out "$out/chain" \
    > "$out/chain.txt" 2>&1
  grep -v Warn "$out/chain.txt" | tail -10 ;;
esac
