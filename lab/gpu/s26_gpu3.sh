#!/usr/bin/env bash
# The second device call of 2026-12-02, part 2 (lab/results/s26): v107's re-check, then the chain bench (needs the
# peers' wheels, carried in part 1). $1: the commit.
set -u
OUT=${OUT:-bench/out}; export OUT
timeout 120 bash lab/ab/ab_v107.sh > $OUT/v107.log 2>&1
grep -E "^#|default|reduce_block" $OUT/v107.log
FLASH_ATTENTION_ARCH=120 timeout 200 python3 bench/sdpa_bwd.py --commit "$1" --warmup 3 \
  --out $OUT/chain > $OUT/chain.log 2>&1
grep -E "^#|^[0-9]+,|host" $OUT/chain.log
