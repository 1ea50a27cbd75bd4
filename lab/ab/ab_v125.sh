#!/usr/bin/env bash
# v125 (lab/LOG.md): v124's winning pair (rotated q walk + ptxas level 7) was never tried at
# d=128: v121 screened the walk at level 3, v122 the levels on the linear walk. A screen of the
# walk, the level, -O and the trip step at d=128 (non-causal and causal), its best three re-timed
# on bwd_main and the re-time's best checked on the whole call, as lab/ab/ab_v124.sh.
# Usage: COMMIT=sha OUT=dir bash lab/ab/ab_v125.sh [d128|d128c|both]
set -u
out=${OUT:-bench/out}/v125
. lab/ab/ab_lib.sh
grid="q_rotate=0|1,reg_usage=3|5|7,ptxas_opt=2|3,trip_step=0|1"
screen_rows "${1:-both}" 128 "$grid" d128::4,16,4096,128 d128c:--causal:4,16,4096,128,c
