#!/usr/bin/env bash
# v124 (lab/LOG.md): d=64's code choices screened in combination (as v120/v121 did at
# d=128; d=64 never was), non-causal and causal: trip walk, q rotation, dQ accumulators, stat
# vectors and ptxas' schedule (its three register-usage schedules, -O2/-O3). Each screen's best
# three are re-timed on bwd_main, and the re-time's best is checked on the whole call
# (bench/chain_ab.py), in one device call. Usage: COMMIT=sha OUT=dir bash lab/ab/ab_v124.sh [d64|d64c]
set -u
out=${OUT:-bench/out}/v124
. lab/ab/ab_lib.sh
grid="trip_step=0|1,q_rotate=0|1,dq_accs=1|2,stat_vec=0|1,reg_usage=3|5|7,ptxas_opt=2|3"
screen_rows "${1:-both}" 64 "$grid" d64::4,16,4096,64 d64c:--causal:4,16,4096,64,c
