#!/usr/bin/env bash
# The last device call but one of 2026-12-02 (lab/results/s27): v110 (bench/chain_ab.py after its review mends: the
# ATOM rows' chain against the 8x8 blocks at d=160 and causal d=256), then the GPU suite's
# first half at the final code.
set -u
OUT=${OUT:-bench/out}; export OUT
commit=${1:?usage: bash lab/gpu/s27_gpu3.sh COMMIT}
mkdir -p $OUT/v110
timeout 150 python3 bench/chain_ab.py --commit "$commit" --out $OUT/v110 --rounds 8 --iters 10 \
  --shapes 4,16,4096,160 4,16,4096,256,c --variants "default;reduce_block=none" > $OUT/v110.log 2>&1
grep -vi warn $OUT/v110.log | tail -7
bash lab/gpu/on_gpu.sh "$commit" tests1
