#!/usr/bin/env bash
# v128 (lab/LOG.md): v124's d=64 screen again, now that bench/bwd_main_ab.py builds with
# PDL as frost.sdpa ships (v127): at non-causal d=64 the shipped default's q-tile loop differs
# from the no-PDL build v124 ranked. Same grid, best three re-timed, the best checked on the call.
# Usage: COMMIT=sha OUT=dir bash lab/ab/ab_v128.sh [d64|d64c]
set -u
out=${OUT:-bench/out}/v128
. lab/ab/ab_lib.sh
grid="trip_step=0|1,q_rotate=0|1,dq_accs=1|2,stat_vec=0|1,reg_usage=3|5|7,ptxas_opt=2|3"
screen_rows "${1:-d64}" 64 "$grid" d64::4,16,4096,64 d64c:--causal:4,16,4096,64,c
