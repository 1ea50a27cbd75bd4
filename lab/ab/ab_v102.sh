#!/usr/bin/env bash
# v102 (lab/LOG.md): ptxas level 3 on d=256's v96 default, whose sm_90a build (the
# H200's) issues 41 % of its HMMAs within 3 instructions of their ldmatrix and spills 20 B;
# level 3 gives 10 % and no spill (lab/sass_mix.py --operand-distance, v101a).
set -u
out=${OUT:-bench/out}/v102
. lab/ab/ab_lib.sh
ab d256 256 "" "default;reg_usage=3;reg_usage=3,do_early=1" 10 2,8,4096
ab d256c 256 --causal "default;reg_usage=3" 6
