#!/usr/bin/env bash
# v126 (lab/LOG.md): v124's screen at non-causal d=256, the row furthest from 1.3x: the
# q walk, ptxas' level and -O, and the trip step in combination (d=256's choices were timed
# alone or in pairs: v58, v80, v94, v102/v103), best three re-timed, the best checked on the call.
# Usage: COMMIT=sha OUT=dir bash lab/ab/ab_v126.sh
set -u
out=${OUT:-bench/out}/v126
. lab/ab/ab_lib.sh
grid="q_rotate=0|1,reg_usage=3|5|7,ptxas_opt=2|3,trip_step=0|1"
screen_row d256 256 "" "$grid" 2,8,4096,256 2,8,4096
