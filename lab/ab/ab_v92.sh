#!/usr/bin/env bash
# v92 (lab/LOG.md): the split ring at d=256 (plan key do_stages=1 with q_stages=2: Q
# double-buffered, dO and the row statistics on a one-stage ring of their own on V's bytes),
# against the one-stage Q/dO ring of the default; non-causal at the bench row's shape, causal
# at (4,16,4096).
set -u
out=${OUT:-bench/out}/v92
. lab/ab/ab_lib.sh
ab d256 256 "" "default;tile.do_stages=1,tile.q_stages=2" 8 2,8,4096
ab d256c 256 --causal "default;tile.do_stages=1,tile.q_stages=2" 8
