#!/usr/bin/env bash
# v65 (lab/LOG.md): the dQ row check once a trip (dq_guard=tile) against the defaults:
# d=256 and causal d=128 (row check per atomic), d=64/128 (pad), and the tile mode's GPU tests.
set -u
out=${OUT:-bench/out}/v65
. lab/ab/ab_lib.sh
mkdir -p "$out"
timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider -k "dq_guard" \
  tests/templates/test_bwd_main.py 2>&1 | tail -2 | tee "$out/gpu_tests.log"
ab d256 256 "" "default;dq_guard=tile" 8 2,8,4096
ab d256c 256 --causal "default;dq_guard=tile" 8
ab d128c 128 --causal "default;dq_guard=tile;dq_guard=pad" 8
ab d128 128 "" "default;dq_guard=tile" 6
ab d64 64 "" "default;dq_guard=tile" 6
