#!/usr/bin/env bash
# v95 (lab/LOG.md): d=256's code choices and grids re-timed on the split-ring default
# (v92/v93), as v93 found a stale choice (one P/dS copy) there: dQ in two chunks, dS held
# through the chunks, the 2x4 dQ grid, no interleaving; causal: dS held, two chunks.
set -u
out=${OUT:-bench/out}/v95
. lab/ab/ab_lib.sh
ab d256 256 "" "default;dq_chunks=2;dq_ds_held=1;tile.dq_rows=2;interleave=0" 6 2,8,4096
ab d256c 256 --causal "default;dq_ds_held=1;dq_chunks=2" 6
