#!/usr/bin/env bash
# v115 (lab/LOG.md): exchange_sync rule 4 -- each exchange group the two MMA warps of one
# SM sub-partition (d=128: S/dP warps in bit order 4, dK/dV column-major) -- against the d=128
# defaults (rule 1: groups [2j, 2j+1], mixed), the other code choices as the default's.
set -u
out=${OUT:-bench/out}/v115
. lab/ab/ab_lib.sh
r=${1:-8}
v="default;tile.exchange_sync=4,code=default"
ab d128 128 "" "$v" "$r"
ab d128c 128 --causal "$v" "$r"
ab d128s 128 "" "$v" "$r" 16,16,1024
