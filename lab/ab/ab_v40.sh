#!/usr/bin/env bash
# v40 (lab/LOG.md, prediction written before the run): at d=128 the dQ warp grid 1x8
# (plan option dq_rows=1) with the default interleaving (v22 measured it only with interleave
# 0, where it beat the 2x4 grid by 1.8 %), and the rotated q walk at d=64/128 (v14 measured it
# there before the blocked dQ workspace). bwd_main alone, round-robin, 6 rounds.
set -u
out=${OUT:-bench/out}/ab40
. lab/ab/ab_lib.sh
ab d128 128 "" "default;tile.dq_rows=1;q_rotate=1" 6
ab d128c 128 --causal "default;tile.dq_rows=1" 6
ab d64 64 "" "default;q_rotate=1" 6
