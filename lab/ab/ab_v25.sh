#!/usr/bin/env bash
# v25 (lab/LOG.md, prediction written before any run): two CTAs per SM at d=64 (4 MMA
# warps each, 64x64 tile, one Q/dO stage, 42 KB smem, 128 launch registers) against the
# default one-CTA plan; bwd_main alone, same-host round-robin.
# Run on the GPU host after setup: bash lab/ab/ab_v25.sh (JSON only, 2 files).
set -u
out=${OUT:-bench/out}/ab25
. lab/ab/ab_lib.sh
two="tile.num_mma_warps=4,tile.tile_m=64,tile.tile_n=64,tile.q_stages=1,tile.ctas_per_sm=2"
ab d64 64 "" "default;$two;$two,dq_k_held=0" 6
ab d64_causal 64 --causal "default;$two" 6
