#!/usr/bin/env bash
# v18 (lab/LOG.md): two runner-ups that beat their default in v17's re-check, measured
# again with more rounds before adopting: V held at d=64 and one P/dS copy at d=256.
# Run on the GPU host after setup: bash lab/ab/ab_v18.sh   (writes JSON only: 4 files)
set -u
out=${OUT:-bench/out}/ab18
. lab/ab/ab_lib.sh
ab d64 64 "" "default;tile.v_in_regs=1" 10
ab d64_causal 64 --causal "default;tile.v_in_regs=1" 10
ab d256 256 "" "default;tile.exchange_stages=1" 10
ab d256_causal 256 --causal "default;tile.exchange_stages=1" 10
