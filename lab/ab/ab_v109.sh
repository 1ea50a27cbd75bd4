#!/usr/bin/env bash
# v109 (lab/LOG.md): dq_guard="row_once" (each row a lane adds checked once, around all
# of that row's dQ atomics) against the default's "rows" (each atomic checked on its own), on
# causal d=128 (8x8 blocks; at d=256 the compiler already merges ATOM's same-row checks).
set -u
out=${OUT:-bench/out}/v109
. lab/ab/ab_lib.sh
r=${1:-8}
ab d128c 128 --causal "default;dq_guard=row_once" "$r"
ab d128c8k 128 --causal "default;dq_guard=row_once" "$r" 2,16,8192
