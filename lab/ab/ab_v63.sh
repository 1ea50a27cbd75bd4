#!/usr/bin/env bash
# v63 (lab/LOG.md): each MMA thread's lse/delta rows in consecutive smem slots, read as
# vectors (stat_vec=1), against scalar loads per row (the v62 code).
set -u
out=${OUT:-bench/out}/ab63
. lab/ab/ab_lib.sh
ab d128 128 "" "default;stat_vec=1" 8
ab d128c 128 --causal "default;stat_vec=1" 8
ab d128s 128 "" "default;stat_vec=1" 6 16,16,1024
ab d64 64 "" "default;stat_vec=1" 8
ab d64c 64 --causal "default;stat_vec=1" 8
ab d32 32 "" "default;stat_vec=1" 6
ab d256 256 "" "default;stat_vec=1" 6 2,8,4096
