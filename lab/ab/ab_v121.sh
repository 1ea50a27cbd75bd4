#!/usr/bin/env bash
# v121 (lab/LOG.md): four of v120's knobs screened at non-causal d=128 (the device budget
# left 15 combinations; stat_vec and l2_hints moved nothing in v120), its best three re-timed
# at (4,16,4096) and (16,16,1024), in one device call.
set -u
out=${OUT:-bench/out}/v121
. lab/ab/ab_lib.sh
grid="trip_step=0|1,q_rotate=0|1,dq_accs=1|2,kv_prefetch=0|16"
v=$(python3 lab/variant_grid.py --grid "$grid" --dims 128) || exit 1
screen_best d128 128 "" "$v" 3 || exit 1
ab d128 128 "" "$best" 6
ab d128s 128 "" "$best" 6 16,16,1024
