#!/usr/bin/env bash
# v90 (lab/LOG.md): the measured-only code choices of the d=128 defaults, re-timed on the
# ptxas schedules adopted after them (v81: level 3 at d=128; v86: level 3 with -O2 causal).
set -u
out=${OUT:-bench/out}/v90
export AB_TIMEOUT=280  # six variants compile for longer than ab_lib's 150 s a group
. lab/ab/ab_lib.sh
mkdir -p "$out"
C="default;dq_accs=2;trip_step=1;stat_vec=1;kv_prefetch=16;dq_guard=pad"
N="default;dq_accs=1;trip_step=1;stat_vec=1;kv_prefetch=0;dq_guard=rows"
ab d128c8 128 --causal "$C" 6 2,16,8192
ab d128c 128 --causal "$C" 6
ab d128 128 "" "$N" 6
ab d128s 128 "" "$N" 6 16,16,1024
