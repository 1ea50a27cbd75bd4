#!/usr/bin/env bash
# v45: cuts the per-head-dim build cost newly lets through on 132 SMs (modelled 1.6-1.8 % net)
set -u
out=${OUT:-bench/out}/ab45b
. lab/ab/ab_lib.sh
ab d96 96 "" "tail_split=0;tail_split=1" 10 4,16,4096
ab d160 160 "" "tail_split=0;tail_split=1" 10 4,16,4096
ab d160w 160 "" "tail_split=0;tail_split=1" 10 1,50,4096
