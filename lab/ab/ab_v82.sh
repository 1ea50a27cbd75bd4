#!/usr/bin/env bash
# v82 (lab/LOG.md): ptxas -O2 / -O1 (code choice ptxas_opt) on the bench rows' defaults
# (d=128 non-causal's default carries v81's reg_usage=3, and so do its variants).
set -u
out=${OUT:-bench/out}/v82
. lab/ab/ab_lib.sh
mkdir -p "$out"
ab_bench_rows "default;ptxas_opt=2;ptxas_opt=1" 6
