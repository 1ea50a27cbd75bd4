#!/usr/bin/env bash
# v94 (lab/LOG.md): ptxas level 3 (reg_usage=3) on d=256's default after v93 (split ring,
# two P/dS copies), non-causal at the bench row's shape and causal at (4,16,4096); one P/dS copy
# non-causal as the control of v93's adoption.
set -u
out=${OUT:-bench/out}/v94
. lab/ab/ab_lib.sh
ab d256 256 "" "default;reg_usage=3;tile.exchange_stages=1" 8 2,8,4096
ab d256c 256 --causal "default;reg_usage=3" 6
