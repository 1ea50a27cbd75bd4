#!/usr/bin/env bash
# v33 (lab/LOG.md, prediction written before any run): v32 found the d=160/192 pick
# stale by 9-12 %, so the other measured picks (v2 sweep, d=32..128) against the spill-free
# alternatives of lab/results/v32/feasible_tiles_sm120a.json that differ most from them:
# 64x64 with two Q/dO stages, and 32x64 with two stages and two P/dS copies. bwd_main alone,
# non-causal, same-host round-robin, 6 rounds. Run on the GPU host after setup:
# bash lab/ab/ab_v33.sh (JSON only, 4 files; ~2 min with compiles).
set -u
out=${OUT:-bench/out}/ab33
. lab/ab/ab_lib.sh
t6464="tile.tile_m=64,tile.tile_n=64,tile.q_stages=2"
t3264="tile.tile_m=32,tile.tile_n=64,tile.q_stages=2,tile.exchange_stages=2"
ab d32 32 "" "default;$t6464,tile.exchange_stages=2;$t3264" 6
ab d64 64 "" "default;$t6464,tile.exchange_stages=2;$t3264" 6
ab d96 96 "" "default;$t6464,tile.exchange_stages=1;$t3264" 6
ab d128 128 "" "default;$t6464,tile.exchange_stages=1;$t3264" 6
