#!/usr/bin/env bash
# v19 (lab/LOG.md, prediction written before any run): the tall d=128 tile (64x128, one
# Q/dO stage, V held, S/dP grid 1x8) that serial_sdp=1 makes spill-free, against the default,
# bwd_main alone, same-host round-robin. Run on the GPU host after setup: bash lab/ab/ab_v19.sh
# (JSON only, 3 files; run `python3 -m pytest -m gpu -k serial_sdp` first: its numerics).
set -u
out=${OUT:-bench/out}/ab19
. lab/ab/ab_lib.sh
tall="tile.tile_m=64,tile.q_stages=1,tile.s_rows=1,tile.exchange_stages=1,serial_sdp=1"
ab d128 128 "" "default;serial_sdp=1;$tall"
ab d128_causal 128 --causal "default;serial_sdp=1;$tall"
ab d96 96 "" "default;serial_sdp=1;$tall"
