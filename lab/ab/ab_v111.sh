#!/usr/bin/env bash
# v111 (lab/LOG.md; ran at aa2d2a1, where the choice was named dq_defer and carried
# split 1's adds into the next trip; since then only split 2's form stays, as dq_spread): dq_defer=1 (the dQ adds spread over a later GEMM's k-steps: the next
# trip's S/dP under exchange split 1, the same trip's dV/dK under split 2) against the default
# burst right after dQ's GEMM, on the bench rows of d=64 and d=128; causal d=128 also without
# the row checks (dq_guard=pad: no branch inside the S/dP GEMM).
set -u
out=${OUT:-bench/out}/v111
. lab/ab/ab_lib.sh
r=${1:-8}
part=${2:-all}  # a: the d=64 rows and d=128; b: the rest (one device call each)
if [ "$part" != b ]; then
ab d64 64 "" "default;dq_defer=1" "$r"
ab d64c 64 --causal "default;dq_defer=1" "$r"
ab d128 128 "" "default;dq_defer=1" "$r"
fi
[ "$part" = a ] && exit 0
ab d128s 128 "" "default;dq_defer=1" "$r" 16,16,1024
ab d128c 128 --causal "default;dq_defer=1;dq_defer=1,dq_guard=pad" "$r"
ab d128c8k 128 --causal "default;dq_defer=1;dq_defer=1,dq_guard=pad" "$r" 2,16,8192
