#!/usr/bin/env bash
# v35 (lab/LOG.md, prediction written before the run): dQ staged in smem with one TMA
# reduce-add per trip (plan key stage_reductions, v8) re-measured where v8 never ran it: d=32
# and d=64, whose registers have room for interleaving on top (v8 ran interleave 0 at d=96/128,
# before the blocked dQ workspace). bwd_main alone, same-host round-robin, 6 rounds.
# GPU host, after setup: bash lab/ab/ab_v35.sh
set -u
out=${OUT:-bench/out}/ab35
. lab/ab/ab_lib.sh
st="tile.stage_reductions=1"
ab d64 64 "" "default;$st;$st,interleave=1;$st,interleave=2" 6
ab d64c 64 --causal "default;$st,interleave=2" 6
ab d32 32 "" "default;$st,tile.exchange_stages=1;$st,tile.exchange_stages=1,interleave=2" 6
