#!/usr/bin/env bash
# The second device call of 2026-12-02 (lab/results/s27): dq_guard="row_once" on the GPU (numerics), then v109's A/B.
set -u
OUT=${OUT:-bench/out}; export OUT
timeout 200 python3 -m pytest -m gpu -q -rfE -p no:cacheprovider -k "row_once" \
  tests/templates/test_bwd_main.py > $OUT/gpu_row_once.log 2>&1
grep -E "FAILED|ERROR" $OUT/gpu_row_once.log | head; tail -1 $OUT/gpu_row_once.log
timeout 330 bash lab/ab/ab_v109.sh 10 > $OUT/v109.log 2>&1
grep -E "^#|default|row_once" $OUT/v109.log
