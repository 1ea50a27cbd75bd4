#!/usr/bin/env bash
# v66 (lab/LOG.md): v13's stage ablations re-run on the v63 defaults (timing only: each
# skip drops one stage's code, results are wrong) at d=64, 128 (4,16,4096) and 256 (2,8,4096).
set -u
out=${OUT:-bench/out}/v66
. lab/ab/ab_lib.sh
V="default;skip=operand_loads;skip=softmax;skip=dq_atomic;skip=dq_gemm;skip=q_loads"
V="$V;skip=operand_loads+softmax+dq_atomic"
ab d64 64 "" "$V" 4
ab d128 128 "" "$V" 4
ab d256 256 "" "$V;skip=mma_sync" 4 2,8,4096
