#!/usr/bin/env bash
# v22 (lab/LOG.md, prediction written before any run): d=128 with the dQ grid 1x8 and K's
# dQ fragments held (32 registers a thread; spill-free on sm_120a only with interleave=0),
# against the default and the two steps alone, bwd_main alone, same-host round-robin.
# Run on the GPU host after setup: bash lab/ab/ab_v22.sh (JSON only, 1 file).
set -u
out=${OUT:-bench/out}/ab22
. lab/ab/ab_lib.sh
ab d128 128 "" "default;interleave=0;tile.dq_rows=1,interleave=0;tile.dq_rows=1,interleave=0,dq_k_held=1"
