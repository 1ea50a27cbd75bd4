#!/usr/bin/env bash
# The first GPU call of 2026-12-01 (lab/results/s15): the full GPU suite at HEAD, then fresh Nsight Compute stall
# samples of the two rows furthest from 1.3x (d=64 and d=256 non-causal defaults).
set -u
. /tmp/frost-gpu/env.sh
mkdir -p "$OUT/s15"
timeout 330 python3 -m pytest -m gpu -q -rfE -p no:cacheprovider > "$OUT/s15/gpu_suite.log" 2>&1
tail -3 "$OUT/s15/gpu_suite.log"
DIM=64 SHAPE=4,16,4096 bash lab/gpu/profile_ncu.sh s15/ncu_d64 default
DIM=256 SHAPE=2,8,4096 bash lab/gpu/profile_ncu.sh s15/ncu_d256 default
