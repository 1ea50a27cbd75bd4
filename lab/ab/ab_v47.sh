#!/usr/bin/env bash
# v47 (lab/LOG.md): what keeping the MMA warps in step costs, by the timing-only ablation
# skip=mma_sync (no per-trip barrier around the P/dS stores), alone and with skip=softmax.
set -u
out=${OUT:-bench/out}/ab47
. lab/ab/ab_lib.sh
# (ran at 1930fa1, when the barrier plan was the default: tile.exchange_sync=0 keeps it so)
x=tile.exchange_sync=0
v="$x;$x,skip=mma_sync;$x,skip=softmax;$x,skip=softmax+mma_sync"
ab d128 128 "" "$v" 6
ab d64 64 "" "$v" 6
ab d128c 128 --causal "$v" 6
ab d256 256 "" "$v" 6 2,8,4096
