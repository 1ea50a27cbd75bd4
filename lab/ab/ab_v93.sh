#!/usr/bin/env bash
# v93 (lab/LOG.md): on v92's split-ring d=256 default, the choices the split ring's smem
# reopens or its sm_90a spill could change: two P/dS copies non-causal (they fit on V's bytes
# next to dO now), ptxas level 3 (the H200 build spills 76 B); causal: one P/dS copy.
set -u
out=${OUT:-bench/out}/v93
. lab/ab/ab_lib.sh
ab d256 256 "" "default;tile.do_stages=0,tile.q_stages=1;tile.exchange_stages=2;reg_usage=3" 8 2,8,4096
ab d256c 256 --causal "default;tile.do_stages=0,tile.q_stages=1;tile.exchange_stages=1" 6
