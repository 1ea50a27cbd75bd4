#!/usr/bin/env bash
# v116 (lab/LOG.md): forced warp placements (tile.s_order / dkv_order / dq_order, the
# indices of tile_dsl.warp_grid.placements) against the defaults: the late reader's order
# alone, the same split with other groups, and the other split's unmixed form.
set -u
out=${OUT:-bench/out}/v116
. lab/ab/ab_lib.sh
r=${1:-6}
c=code=default
ab d64 64 "" "default;tile.dkv_order=1,$c;tile.s_order=3,tile.dq_order=3,$c;tile.s_order=4,tile.dq_order=0,tile.dkv_order=0,$c" "$r"
ab d64c 64 --causal "default;tile.s_order=4,tile.dq_order=0,tile.dkv_order=0,$c;tile.s_order=1,tile.dq_order=0,tile.dkv_order=1,$c;tile.dq_order=1,tile.dkv_order=5,$c" "$r"
ab d128 128 "" "default;tile.dq_order=1,$c;tile.s_order=2,tile.dkv_order=5,$c" "$r"
ab d128c 128 --causal "default;tile.dq_order=1,$c;tile.s_order=2,tile.dkv_order=5,$c" "$r"
