#!/usr/bin/env bash
# v88 (lab/LOG.md): dq_ds_held (dS's dQ fragments held through the four dQ chunks) at
# d=256: causal (dQ grid 2x4) and non-causal (1x8 with ptxas level 3, 2x4 with level 7: the
# held builds that compile spill-free on sm_120a), with level 3 alone as the control.
set -u
out=${OUT:-bench/out}/v88
. lab/ab/ab_lib.sh
mkdir -p "$out"
ab d256c 256 --causal "default;dq_ds_held=1" 8
ab d256 256 "" "default;dq_ds_held=1,reg_usage=3;tile.dq_rows=2,dq_ds_held=1,reg_usage=7;reg_usage=3" 8 2,8,4096
