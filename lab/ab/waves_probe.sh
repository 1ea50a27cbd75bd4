#!/usr/bin/env bash
# Wave-quantization probe (lab/LOG.md v41): d=128 non-causal bwd_main at grids of
# 2048 CTAs (15.5 waves of 132 SMs), 1056/2112 (8/16 exactly) and 1088 (8.2).
set -u
out=${OUT:-bench/out}/waves
. lab/ab/ab_lib.sh
for sh in 4,16,4096 1,33,4096 2,33,4096 1,34,4096 1,66,4096; do
  ab "d128_${sh//,/x}" 128 "" "default" 4 "$sh"
done
