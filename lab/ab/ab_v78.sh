#!/usr/bin/env bash
# v78 (lab/LOG.md): the producer warp issues the dK/dV TMA stores (dkdv_issuer=producer)
# against the default (MMA thread 0 issues them), beside v76's dkdv_store ablation.
# HISTORICAL: the code choice dkdv_issuer became the plan option store_warp (lab/ab/ab_v78b.sh);
# this script no longer runs.
set -u
out=${OUT:-bench/out}/v78
. lab/ab/ab_lib.sh
mkdir -p "$out"
ab d64 64 "" "default;dkdv_issuer=producer;skip=dkdv_store" 6
ab d64s 64 "" "default;dkdv_issuer=producer" 6 16,16,1024
ab d64c 64 --causal "default;dkdv_issuer=producer" 6
ab d128s 128 "" "default;dkdv_issuer=producer" 6 16,16,1024
ab d128 128 "" "default;dkdv_issuer=producer" 6
ab d128c 128 --causal "default;dkdv_issuer=producer" 6
ab d256 256 "" "default;dkdv_issuer=producer" 6 2,8,4096
