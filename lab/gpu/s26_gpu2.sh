#!/usr/bin/env bash
# The second device call of 2026-12-02, part 1 (lab/results/s26): the GPU suite at this commit (v106 adopted).
set -u
OUT=${OUT:-bench/out}; export OUT
timeout 440 python3 -m pytest -m gpu -q -rfE -p no:cacheprovider > $OUT/gpu_suite.log 2>&1
tail -3 $OUT/gpu_suite.log
