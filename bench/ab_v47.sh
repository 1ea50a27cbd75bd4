#!/usr/bin/env bash
# v47 (bench/RESULTS.md): what keeping the MMA warps in step costs, by the timing-only ablation
# skip=mma_sync (no per-trip barrier around the P/dS stores), alone and with skip=softmax.
set -u
out=${OUT:-bench/out}/ab47
. bench/ab_lib.sh
v="default;skip=mma_sync;skip=softmax;skip=softmax+mma_sync"
ab d128 128 "" "$v" 6
ab d64 64 "" "$v" 6
ab d128c 128 --causal "$v" 6
ab d256 256 "" "$v" 6 2,8,4096
