#!/usr/bin/env bash
# v101 (lab/LOG.md, ablation: wrong results on purpose): what the exchange_sync defaults'
# cross-group waits cost (skip=x_waits) against what twice the dQ atomics cost
# (skip=dq_atomic2), with no atomics (skip=dq_atomic) beside them; the bound a decoupled design
# (two half-CTAs on their own kv halves, dQ as two partials) would have to beat.
set -u
out=${OUT:-bench/out}/v101
. lab/ab/ab_lib.sh
v="default;skip=x_waits;skip=dq_atomic2;skip=dq_atomic"
ab d64 64 "" "$v" 6
ab d64c 64 --causal "$v" 6
ab d128 128 "" "$v" 6
ab d128c 128 --causal "$v" 6
