#!/usr/bin/env bash
# v91 (lab/LOG.md): d=64's measured-only code choices re-timed on today's d=64 defaults
# (non-causal: store_warp since v78/v79, after they were timed).
set -u
out=${OUT:-bench/out}/v91
export AB_TIMEOUT=280  # six variants compile for longer than ab_lib's 150 s a group
. lab/ab/ab_lib.sh
mkdir -p "$out"
ab d64 64 "" "default;dq_accs=2;trip_step=0;stat_vec=0;kv_prefetch=16;dq_guard=rows" 6
ab d64c 64 --causal "default;dq_accs=2;trip_step=0;stat_vec=1;kv_prefetch=16;dq_guard=rows" 6
