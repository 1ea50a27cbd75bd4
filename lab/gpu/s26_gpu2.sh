#!/usr/bin/env bash
# Session 26's second device call, part 1: the GPU suite at this commit (v106 adopted).
set -u
OUT=${OUT:-bench/out}; export OUT
timeout 440 python3 -m pytest -m gpu -q -rfE -p no:cacheprovider > $OUT/gpu_suite.log 2>&1
tail -3 $OUT/gpu_suite.log
