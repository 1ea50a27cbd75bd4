#!/usr/bin/env bash
# v39 (lab/LOG.md, prediction written before the run): deeper Q/dO rings where they fit
# the 101,376 B budget: d=64 with three stages (100,408 B), d=32 and d=96 with three or four
# stages and one P/dS copy. bwd_main alone, same-host round-robin, 6 rounds. Numerics first:
# python3 -m pytest -m gpu -k deeper_q_ring. GPU host, after setup: bash lab/ab/ab_v39.sh
set -u
out=${OUT:-bench/out}/ab39
. lab/ab/ab_lib.sh
ab d64 64 "" "default;tile.q_stages=3" 6
ab d64c 64 --causal "default;tile.q_stages=3" 6
ab d32 32 "" "default;tile.q_stages=3,tile.exchange_stages=1;tile.q_stages=4,tile.exchange_stages=1" 6
ab d96 96 "" "default;tile.q_stages=3,tile.exchange_stages=1" 6
