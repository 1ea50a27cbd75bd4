#!/usr/bin/env bash
# v52 follow-up: interleave=0 at d=128 non-causal under exchange_sync, confirmed on the two
# non-causal d=128 bench shapes with more rounds.
set -u
out=${OUT:-bench/out}/ab52b
. lab/ab/ab_lib.sh
ab d128 128 "" "default;interleave=0" 10
ab d128s 128 "" "default;interleave=0" 10 16,16,1024
