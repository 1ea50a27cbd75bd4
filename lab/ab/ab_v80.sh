#!/usr/bin/env bash
# v80 (lab/LOG.md): ptxas --register-usage-level (code choice reg_usage) on the bench rows'
# defaults. The PTX is the same; ptxas gives three trip-loop schedules over 0..10 on sm_90a:
# {0..3}, {4, 5} (5 is its default) and {6..10}, so 3 and 6 stand for the other two.
set -u
out=${OUT:-bench/out}/v80
. lab/ab/ab_lib.sh
mkdir -p "$out"
ab_bench_rows "default;reg_usage=3;reg_usage=6" 6
