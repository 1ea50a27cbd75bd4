#!/usr/bin/env bash
# v44, the cut where the model gains most: 1,600 KV tiles on 132 SMs (12.1 waves: the bench
# grid's wave fraction on a 170-SM RTX 5090).
set -u
out=${OUT:-bench/out}/ab44d
. lab/ab/ab_lib.sh
ab d128 128 "" "tail_split=0;tail_split=1" 8 1,50,4096
ab d64 64 "" "tail_split=0;tail_split=1" 8 1,50,4096
ab d128b 128 "" "tail_split=0;tail_split=1" 8 2,25,4096
