#!/usr/bin/env bash
# v45: what the adopted tail-split build costs on whole tiles (its uncut 3-D grid against the
# plain kernel), the number frost.sdpa.grid charges as SPLIT_BUILD_COST.
set -u
out=${OUT:-bench/out}/ab45
. lab/ab/ab_lib.sh
ab d128 128 "" "tail_split=0;tail_split=1,split_sms=0" 10 4,16,4096
ab d64 64 "" "tail_split=0;tail_split=1,split_sms=0" 10 4,16,4096
ab d96 96 "" "tail_split=0;tail_split=1,split_sms=0" 10 4,16,4096
