#!/usr/bin/env bash
# v45: the d=160 split build's whole-tile cost (uncut, 3-D grid) against the plain kernel
set -u
out=${OUT:-bench/out}/ab45c
. lab/ab/ab_lib.sh
ab d160 160 "" "tail_split=0;tail_split=1,split_sms=0" 10 4,16,4096
