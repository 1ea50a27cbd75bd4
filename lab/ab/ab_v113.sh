#!/usr/bin/env bash
# v113 (lab/LOG.md): dq_spread with dQ in chunks (a chunk's adds ride the next chunk's
# GEMM): d=128 forced to two chunks with dS held (alone, and spread), d=256's four chunks spread.
set -u
out=${OUT:-bench/out}/v113
. lab/ab/ab_lib.sh
r=${1:-8}
C2="dq_chunks=2,dq_ds_held=1"
ab d128 128 "" "default;$C2;$C2,dq_spread=1" "$r"
ab d128s 128 "" "default;$C2;$C2,dq_spread=1" "$r" 16,16,1024
ab d128c 128 --causal "default;$C2;$C2,dq_spread=1" "$r"
ab d256 256 "" "default;dq_spread=1" "$r" 2,8,4096
ab d256c 256 --causal "default;dq_spread=1" "$r" 2,8,4096
