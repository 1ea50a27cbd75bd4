#!/usr/bin/env bash
# v129 (lab/LOG.md): d=256's trip-shape choices in combination, screened only where they
# compile spill-free with PDL on sm_90a, sm_120a and sm_121a (SPILL_ARCHS: lab/spill_grid.py
# on the host first): do_early, dq_ds_held, l2_hints, interleave (each timed alone or in pairs:
# v4/v28, v77, v95/v96, v102/v103). Best three re-timed, the best checked on the call.
# Usage: COMMIT=sha OUT=dir bash lab/ab/ab_v129.sh
set -u
out=${OUT:-bench/out}/v129
. lab/ab/ab_lib.sh
grid="do_early=0|1|2,dq_ds_held=0|1,l2_hints=0|1|3,interleave=0|1"
SPILL_ARCHS=sm_90a,sm_120a,sm_121a screen_row d256 256 "" "$grid" 2,8,4096,256 2,8,4096
