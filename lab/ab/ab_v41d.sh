#!/usr/bin/env bash
# v41 guard (lab/LOG.md): the adopted heavy-first order against the linear one
# (lpt_heads=1) at causal shapes other than the bench rows.
set -u
out=${OUT:-bench/out}/ab41d
. lab/ab/ab_lib.sh
ab d128c_16x1024 128 --causal "default;lpt_heads=1" 6 16,16,1024
ab d128c_1x16k 128 --causal "default;lpt_heads=1" 4 1,16,16384
ab d64c_8x2048 64 --causal "default;lpt_heads=1" 6 8,16,2048
ab d256c_2x4096 256 --causal "default;lpt_heads=1" 6 2,8,4096
ab d192c_1x8192 192 --causal "default;lpt_heads=1" 4 1,8,8192
