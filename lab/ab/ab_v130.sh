#!/usr/bin/env bash
# v130 (lab/LOG.md): at d=64 (F and T), serial_sdp=1 (S, then P, then dP: P's exp2 free
# to overlap dP's MMAs; never timed at d=64) and the ATOM dQ workspace (tile.reduce_block=-1;
# v106 at d=64 predates the rotated walk and ptxas level 7), alone and together, all spill-free
# on sm_90a and sm_120a (lab/spill_grid.py: 168 registers, 0 B).
# Usage: COMMIT=sha OUT=dir bash lab/ab/ab_v130.sh
set -u
out=${OUT:-bench/out}/v130
. lab/ab/ab_lib.sh
v="default;serial_sdp=1;tile.reduce_block=-1,code=default;serial_sdp=1,tile.reduce_block=-1,code=default"
AB_TIMEOUT=240 ab d64 64 "" "$v" 8
AB_TIMEOUT=240 ab d64c 64 --causal "$v" 8
