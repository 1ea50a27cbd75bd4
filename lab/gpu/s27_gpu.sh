#!/usr/bin/env bash
# The device call of 2026-12-02 (lab/results/s27): dq_convert's ATOM row-pair reads (numerics, whole API at the ATOM
# rows d=160/256), then v108: the whole chain, ATOM against the 8x8 blocks (logs under $OUT).
set -u
OUT=${OUT:-bench/out}; export OUT
commit=${1:?usage: bash lab/gpu/s27_gpu.sh COMMIT}
timeout 200 python3 -m pytest -m gpu -q -rfE -p no:cacheprovider \
  tests/templates/test_dq_convert.py tests/sdpa/test_backward_gpu.py > $OUT/gpu_dqc.log 2>&1
grep -E "FAILED|ERROR" $OUT/gpu_dqc.log | head; tail -1 $OUT/gpu_dqc.log
mkdir -p $OUT/v108
timeout 330 python3 bench/chain_ab.py --commit "$commit" --out $OUT/v108 --rounds 8 --iters 10 \
  --shapes 4,16,4096,128 16,16,1024,128 --variants "default;reduce_block=-1" > $OUT/v108.log 2>&1
mkdir -p $OUT/v108b
timeout 200 python3 bench/chain_ab.py --commit "$commit" --out $OUT/v108b --rounds 8 --iters 10 \
  --shapes 2,8,4096,256 --variants "default;reduce_block=none" >> $OUT/v108.log 2>&1
grep -vi warn $OUT/v108.log | tail -12
