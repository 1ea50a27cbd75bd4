#!/usr/bin/env bash
# v44, third look: tail_split=1,split_sms=0 now launches the tail-split kernel on the 3-D grid (a cut launch
# stays 1-D); and the hardware's CTA dispatch order of a 3-D and a 1-D grid (dispatch_order.py).
set -u
out=${OUT:-bench/out}/ab44c
. bench/ab_lib.sh
timeout 60 python3 bench/dispatch_order.py --grid 32,16,4 --grid 2048,1,1 --out "$out" 2>&1 | tail -3
ab d128 128 "" "tail_split=0;tail_split=1,split_sms=0;tail_split=1,skip=split_parts,split_sms=0;tail_split=1" 10
ab d64 64 "" "tail_split=0;tail_split=1,split_sms=0;tail_split=1" 8
