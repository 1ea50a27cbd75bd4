#!/usr/bin/env bash
# v82 (bench/RESULTS.md): ptxas -O2 / -O1 (code choice ptxas_opt) on the bench rows' defaults
# (d=128 non-causal's default carries v81's reg_usage=3, and so do its variants).
set -u
out=${OUT:-bench/out}/v82
. bench/ab_lib.sh
mkdir -p "$out"
V="default;ptxas_opt=2;ptxas_opt=1"
ab d64 64 "" "$V" 6
ab d64c 64 --causal "$V" 6
ab d128 128 "" "$V" 6
ab d128c 128 --causal "$V" 6
ab d128s 128 "" "$V" 6 16,16,1024
ab d256 256 "" "$V" 6 2,8,4096
