#!/usr/bin/env bash
# The device call of 2026-12-02 (lab/results/s25): v104b, v105, then the GPU suite at this commit (logs under $OUT).
set -u
OUT=${OUT:-bench/out}; export OUT
timeout 120 bash lab/ab/ab_v104b.sh > $OUT/v104b.log 2>&1
timeout 200 bash lab/ab/ab_v105.sh > $OUT/v105.log 2>&1
grep -E "^#|default|q_rotate|skip=" $OUT/v104b.log $OUT/v105.log
timeout 420 python3 -m pytest -m gpu -q -rfE -p no:cacheprovider > $OUT/gpu_suite.log 2>&1
tail -3 $OUT/gpu_suite.log
