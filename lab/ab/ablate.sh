#!/usr/bin/env bash
# Where bwd_main's trip time goes at the current defaults: timing-only ablations
# (BwdMainKernel(skip=...); THE RESULTS ARE WRONG, only the time counts), bwd_main alone,
# same-host round-robin, non-causal d=64/128/256. RESULTS.md v13 has the first such table.
# Run on the GPU host after setup: bash lab/ab/ablate.sh (JSON only, 3 files).
set -u
out=${OUT:-bench/out}/ablate
. lab/ab/ab_lib.sh
v="default;skip=operand_loads;skip=softmax;skip=dq_atomic;skip=operand_loads+softmax+dq_atomic"
v="$v;skip=dp_gemm+dkdv_gemm+dq_gemm"
for d in 64 128 256; do ab d$d $d "" "$v" 6; done
