#!/usr/bin/env bash
# v54 (lab/LOG.md): the dQ atomics without a row check (dq_guard=pad, the new default)
# against the row check (dq_guard=rows, the v53 code), and dQ in two accumulators (dq_accs=2).
set -u
out=${OUT:-bench/out}/ab54
. lab/ab/ab_lib.sh
ab d128 128 "" "default;dq_guard=rows;dq_accs=2" 6
ab d128c 128 --causal "default;dq_guard=rows;dq_accs=2" 6
ab d64 64 "" "default;dq_guard=rows;dq_accs=2" 6
ab d64c 64 --causal "default;dq_guard=rows;dq_accs=2" 6
ab d32 32 "" "default;dq_guard=rows;dq_accs=2" 6
ab d256 256 "" "default;dq_guard=rows" 6
