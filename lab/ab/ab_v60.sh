#!/usr/bin/env bash
# v60 (lab/LOG.md): d=256 on a 64x32 tile (64 q rows a trip, 32 KV rows a CTA; one
# Q/dO stage, S grid 4x2) against the default 32x64, with dQ in 4, 2 or 1 chunks, K's dQ
# fragments held, interleave level 2.
set -u
out=${OUT:-bench/out}/ab60
. lab/ab/ab_lib.sh
T="tile.tile_m=64,tile.tile_n=32,tile.q_stages=1,tile.s_rows=4"
ab d256 256 "" "default;$T;$T,dq_chunks=2;$T,dq_chunks=1;$T,dq_chunks=1,dq_k_held=1;$T,dq_chunks=1,interleave=2" 6 2,8,4096
ab d256c 256 --causal "default;$T;$T,dq_chunks=1;$T,dq_chunks=1,dq_k_held=1" 6
