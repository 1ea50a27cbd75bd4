#!/usr/bin/env bash
# v38 (lab/LOG.md, prediction written before the run): the code defaults on the v32 tiles
# of d=160/192 (32x64, two Q/dO stages, V held): v30 re-checked them on the older 64x64 tiles.
# bwd_main alone, non-causal, same-host round-robin, 6 rounds. GPU host, after setup.
set -u
out=${OUT:-bench/out}/ab38
. lab/ab/ab_lib.sh
v="default;interleave=1;dq_vec=4;lookahead=1;p_store=st32"
for d in 160 192; do ab d$d $d "" "$v" 6; done
