#!/usr/bin/env bash
# v77 (lab/LOG.md): L2 eviction priorities on bwd_main's bulk copies (code choice
# l2_hints: 1 dK/dV stores evict-first, 2 also K/V loads, 3 also Q/dO loads evict-last), and
# v76's dkdv_store ablation again beside them at d=64 (16,16,1024).
set -u
out=${OUT:-bench/out}/v77
. lab/ab/ab_lib.sh
mkdir -p "$out"
ab d64s 64 "" "default;l2_hints=1;l2_hints=2;l2_hints=3;skip=dkdv_store" 6 16,16,1024
ab d128s 128 "" "default;l2_hints=1;l2_hints=2;l2_hints=3" 6 16,16,1024
ab d64 64 "" "default;l2_hints=1;l2_hints=3" 6
ab d128 128 "" "default;l2_hints=1;l2_hints=3" 6
ab d64c 64 --causal "default;l2_hints=3" 6
ab d256 256 "" "default;l2_hints=3" 6 2,8,4096
