#!/usr/bin/env bash
# v81 (lab/LOG.md): v80's reg_usage=3 at d=128 non-causal re-timed with 10 rounds.
set -u
out=${OUT:-bench/out}/v81
. lab/ab/ab_lib.sh
mkdir -p "$out"
ab d128 128 "" "default;reg_usage=3" 10
ab d128s 128 "" "default;reg_usage=3" 10 16,16,1024
