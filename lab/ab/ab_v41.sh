#!/usr/bin/env bash
# v41 (lab/LOG.md): the heavy-first CTA order (code choice lpt_heads) on the causal rows
# of the chain bench, against the linear block order (lpt_heads=1, the default).
set -u
out=${OUT:-bench/out}/ab41
. lab/ab/ab_lib.sh
ab d128c 128 --causal "default;lpt_heads=0;lpt_heads=8" 6
ab d64c 64 --causal "default;lpt_heads=0;lpt_heads=8" 6
ab d128c8k 128 --causal "default;lpt_heads=0;lpt_heads=8" 6 2,16,8192
ab d128rot 128 "" "default;q_rotate=1" 10
