#!/usr/bin/env bash
# v70 (lab/LOG.md): the measured defaults against their runners-up, re-timed on the
# product-build harness (v68). Every default of the bench rows' head dims that an A/B on the old
# `launch` path decided, the close calls of sessions 12-15 first. A default flips only if every
# round of its runner-up is below 1.
set -u
out=${OUT:-bench/out}/v70
. lab/ab/ab_lib.sh
ab d64 64 "" "default;stat_vec=0;trip_step=0;dq_guard=rows;tile.exchange_sync=0;dq_k_held=0" 6
ab d64c 64 --causal "default;trip_step=0;tile.exchange_sync=1;tile.exchange_sync=0" 6
ab d128 128 "" "default;dq_accs=1;dq_guard=rows;tile.exchange_sync=0;tile.exchange_stages=1" 6
ab d128c 128 --causal "default;tile.exchange_stages=1;tile.exchange_sync=0;dq_guard=pad" 6
ab d128s 128 "" "default;dq_accs=1;tile.exchange_sync=0" 6 16,16,1024
ab d256 256 "" "default;tile.s_rows=1;q_rotate=0;interleave=0;tile.reduce_block=0" 6 2,8,4096
