#!/usr/bin/env bash
# v36 (lab/LOG.md, prediction written before the run): the code defaults of
# frost/templates/bwd_main/code.py re-checked at d=32..128 on today's kernels, as v30 did at
# d >= 160: each variant flips one code choice on the default plan. bwd_main alone,
# non-causal, same-host round-robin, 6 rounds. GPU host, after setup: bash lab/ab/ab_v36.sh
set -u
out=${OUT:-bench/out}/ab36
. lab/ab/ab_lib.sh
v="default;interleave=1;dq_vec=4;lookahead=1;p_store=st32;exp2_poly=1"
for d in 32 64 96 128; do ab d$d $d "" "$v" 6; done
