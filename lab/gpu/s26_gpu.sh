#!/usr/bin/env bash
# The device call of 2026-12-02 (lab/results/s26): the ATOM workspace's GPU numerics, then v106's A/B (logs under $OUT).
set -u
OUT=${OUT:-bench/out}; export OUT
timeout 240 python3 -m pytest -m gpu -q -rfE -p no:cacheprovider -k "atom" \
  tests/templates/test_bwd_main.py tests/templates/test_dq_convert.py > $OUT/gpu_atom.log 2>&1
tail -3 $OUT/gpu_atom.log
timeout 330 bash lab/ab/ab_v106.sh 5 > $OUT/v106.log 2>&1
grep -E "^#|default|reduce_block" $OUT/v106.log
