#!/usr/bin/env bash
# v89 (lab/LOG.md): persistent CTAs (code choice persistent=132, the H200's SM count) on
# the non-causal rows; d=128 needs the plan's store_warp for them, so store_warp alone is the
# control there (v78 measured it 1.011-1.017 slower).
set -u
out=${OUT:-bench/out}/v89
. lab/ab/ab_lib.sh
mkdir -p "$out"
ab d128s 128 "" "default;tile.store_warp=1;tile.store_warp=1,persistent=132" 8 16,16,1024
ab d128 128 "" "default;tile.store_warp=1;tile.store_warp=1,persistent=132" 6
ab d64 64 "" "default;persistent=132" 6
