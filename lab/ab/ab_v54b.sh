#!/usr/bin/env bash
# v54 run 2 (lab/LOG.md): dq_guard x dq_accs per bench row, and the head dims run 1 left out.
set -u
out=${OUT:-bench/out}/ab54b
. lab/ab/ab_lib.sh
ab d128 128 "" "default;dq_accs=2;dq_accs=2,dq_guard=rows" 6
ab d128c 128 --causal "default;dq_guard=rows;dq_guard=rows,dq_accs=2" 6
ab d32 32 "" "default;dq_accs=2" 6
ab d32c 32 --causal "default;dq_accs=2;dq_guard=rows" 6
ab d96 96 "" "default;dq_guard=rows;dq_accs=2" 6
ab d160 160 "" "default;dq_guard=rows;dq_accs=2" 6
ab d192 192 "" "default;dq_guard=rows;dq_accs=2" 6
ab d128s 128 "" "default;dq_accs=2" 6 16,16,1024
ab d128l 128 --causal "default;dq_guard=rows" 6 2,16,8192
