#!/usr/bin/env bash
# v74 (lab/LOG.md, ablation: wrong results on purpose): what the causal diagonal trips cost
# (skip=diag_trips: every CTA starts past them) and what their element mask costs (skip=mask).
set -u
out=${OUT:-bench/out}/v74
. lab/ab/ab_lib.sh
mkdir -p "$out"
v="default;skip=diag_trips;skip=mask"
ab d128c 128 --causal "$v" 6
ab d64c 64 --causal "$v" 6
ab d128c8k 128 --causal "$v" 6 2,16,8192
