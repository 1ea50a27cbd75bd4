#!/usr/bin/env bash
# v34 (lab/LOG.md, prediction written before the run): the d=64 pick (64x128, two Q/dO
# stages, V in smem, one P/dS copy) against the two spill-free V-held forms of the 128-wide KV
# tile from lab/results/v32/feasible_tiles_sm120a.json: 32x128 with two stages and two P/dS
# copies (the d=96/128 pick's shape), and 64x128 with one stage. bwd_main alone, non-causal,
# same-host round-robin, 6 rounds. GPU host, after setup: bash lab/ab/ab_v34.sh
set -u
out=${OUT:-bench/out}/ab34
. lab/ab/ab_lib.sh
ab d64 64 "" "default;tile.tile_m=32,tile.q_stages=2,tile.exchange_stages=2,tile.v_in_regs=1;tile.q_stages=1,tile.v_in_regs=1" 6
ab d32 32 "" "default;tile.tile_m=32,tile.q_stages=2,tile.exchange_stages=2" 6
ab d64c 64 --causal "default;tile.tile_m=32,tile.q_stages=2,tile.exchange_stages=2,tile.v_in_regs=1;tile.q_stages=1,tile.v_in_regs=1" 6
