#!/usr/bin/env bash
# v120 (lab/LOG.md): a screen of code-choice combinations at causal d=128 (each knob was
# timed alone before, never together), then its best three re-timed against the default at
# (4,16,4096) and (2,16,8192), in one device call.
set -u
out=${OUT:-bench/out}/v120
. lab/ab/ab_lib.sh
grid="trip_step=0|1,stat_vec=0|1,q_rotate=0|1,dq_accs=1|2,kv_prefetch=0|16,l2_hints=0|3"
v=$(python3 lab/variant_grid.py --grid "$grid" --dims 128 --causal) || exit 1
screen_best d128c 128 --causal "$v" 3 || exit 1
ab d128c 128 --causal "$best" 8
ab d128l 128 --causal "$best" 6 2,16,8192
