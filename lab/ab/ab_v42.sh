#!/usr/bin/env bash
# v42 (lab/LOG.md): what the Q/dO ring's refills cost, by the timing-only ablation
# skip=q_loads (each ring stage loaded once), at the bench's head dims.
set -u
out=${OUT:-bench/out}/ab42
. lab/ab/ab_lib.sh
ab d256 256 "" "default;skip=q_loads" 6 2,8,4096
ab d256c 256 --causal "default;skip=q_loads" 6
ab d128 128 "" "default;skip=q_loads" 6
ab d64 64 "" "default;skip=q_loads" 6
