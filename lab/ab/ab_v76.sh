#!/usr/bin/env bash
# v76 (lab/LOG.md, ablation: wrong results on purpose): which part of v71's fixed cost a
# CTA is the K/V load (skip=kv_load) and which the dK/dV TMA store (skip=dkdv_store).
set -u
out=${OUT:-bench/out}/v76
. lab/ab/ab_lib.sh
mkdir -p "$out"
v="default;skip=kv_load;skip=dkdv_store;skip=dkdv_store+kv_load"
ab d128s 128 "" "$v" 6 16,16,1024
ab d64s 64 "" "$v" 6 16,16,1024
