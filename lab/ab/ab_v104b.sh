#!/usr/bin/env bash
# v104b (lab/LOG.md): lab/ab/ab_v104.sh's d=64 groups again, after dq_half's fix (the d=128
# groups of the first run already split the rows right).
set -u
out=${OUT:-bench/out}/v104b
. lab/ab/ab_lib.sh
v="default;skip=dq_half;skip=dq_atomic"
ab d64 64 "" "$v" 8
ab d64c 64 --causal "$v" 6
