#!/usr/bin/env bash
# v104 (bench/RESULTS.md, ablation: wrong results on purpose): the ceiling of a 2-CTA cluster that
# adds the two kv tiles' dQ partials in shared memory before one atomic (skip=dq_half: each
# warp adds only the rows its kv-tile parity picks), beside no atomics at all (skip=dq_atomic).
set -u
out=${OUT:-bench/out}/v104
. bench/ab_lib.sh
v="default;skip=dq_half;skip=dq_atomic"
ab d64 64 "" "$v" 8
ab d64c 64 --causal "$v" 8
ab d128 128 "" "$v" 6
ab d128c 128 --causal "$v" 6
