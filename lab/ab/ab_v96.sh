#!/usr/bin/env bash
# v96 (lab/LOG.md): non-causal d=256 on the causal row's 2x4 dQ grid with dS held
# through the dQ chunks (v95's causal win), against the default 1x8 grid; the grid alone too.
set -u
out=${OUT:-bench/out}/v96
. lab/ab/ab_lib.sh
ab d256 256 "" "default;tile.dq_rows=2,dq_ds_held=1;tile.dq_rows=2" 8 2,8,4096
