#!/usr/bin/env bash
# The device calls of 2026-12-05, stored in lab/results/s41 (after `bash .gpu/tools/setup-remote`): usage
#   bash lab/gpu/s41_gpu.sh COMMIT split|suite|chain
# split: the split-K GPU tests and v134's gemm_rowsum bench; suite: the GPU tests outside
# test_bwd_main.py; chain: the SDPA chain bench (bench/sdpa_bwd.py). Results under $OUT.
set -u
. "$(dirname "$0")/gpu_prologue.sh"
case ${2:?} in
split)
  timeout 300 python3 -m pytest -m gpu -q -p no:cacheprovider -rfE \
    tests/templates/test_gemm_rowsum_split.py tests/templates/test_gemm_rowsum.py \
    tests/test_run.py tests/test_bench_scripts.py > "$out/gpu_split_tests.log" 2>&1
  grep -E "FAILED|ERROR" "$out/gpu_split_tests.log" | head; tail -1 "$out/gpu_split_tests.log"
  timeout 280 python3 bench/gemm_rowsum.py --commit "$commit" --out "$out/gemm" \
    --peers frost,frost_model,torch --rounds 5 --shape 1024,1024,32768 \
    --shape 1024,2048,16384 --shape 2048,1024,16384 --shape 512,512,65536 \
    --shape 3072,3072,16384 --shape 2432,1792,16384 --shape 4096,4096,4096 \
    > "$out/gemm.txt" 2>&1
  grep -v Warn "$out/gemm.txt" | tail -12 ;;
suite|chain)
  exec bash "$(dirname "$0")/s42_gpu.sh" "$commit" "$2" ;;
esac
