#!/usr/bin/env bash
# v122 (lab/LOG.md): ptxas' schedule of v121's non-causal d=128 build (trip walk stepped,
# no K/V prefetch) re-screened: register-usage level (its three schedules on sm_90a: 0-3, 4-5,
# 6-10), -O2/-O3 and stat_vec, then the best three re-timed at (4,16,4096) and (16,16,1024), in
# one device call.
set -u
out=${OUT:-bench/out}/v122
. lab/ab/ab_lib.sh
grid="reg_usage=3|5|7,ptxas_opt=2|3,stat_vec=0|1"
v=$(python3 lab/variant_grid.py --grid "$grid" --dims 128) || exit 1
SCREEN_TIMEOUT=${SCREEN_TIMEOUT:-300} screen_best d128 128 "" "$v" 3 || exit 1
AB_TIMEOUT=200 ab d128 128 "" "$best" 10
AB_TIMEOUT=200 ab d128s 128 "" "$best" 10 16,16,1024
