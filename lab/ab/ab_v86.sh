#!/usr/bin/env bash
# v86 (lab/LOG.md): re-check of v84's (reg_usage 3, -O2) at causal d=128, 10 rounds, on
# both causal d=128 bench rows.
set -u
out=${OUT:-bench/out}/v86
. lab/ab/ab_lib.sh
mkdir -p "$out"
ab d128c 128 --causal "default;reg_usage=3,ptxas_opt=2" 10
ab d128c8k 128 --causal "default;reg_usage=3,ptxas_opt=2" 10 2,16,8192
