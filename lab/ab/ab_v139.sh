#!/usr/bin/env bash
# v139 (lab/LOG.md): where today's bwd_main time goes, on every bench row's default
# (timing-only `skip=` builds: each drops one stage's code, the results are wrong). v66 measured
# three stages at three rows on the v63 kernels (2026-12-01), timed through BwdMainKernel.launch; this
# times the builds frost.sdpa launches (PDL on) at the six kernels the seven bench rows run
# ((2,16,8192,128,T) runs (4,16,4096,128,T)'s kernel), five GEMM-side stages and the softmax.
# Usage: OUT=dir bash lab/ab/ab_v139.sh   (GPU host, after setup)
set -u
out=${OUT:-bench/out}/v139
. lab/ab/ab_lib.sh
v="default;skip=operand_loads;skip=softmax;skip=dq_atomic;skip=dq_gemm;skip=dkdv_gemm;skip=dp_gemm"
v="$v;skip=operand_loads+softmax+dq_atomic"
AB_TIMEOUT=${AB_TIMEOUT:-120} ab_bench_rows "$v" 4
