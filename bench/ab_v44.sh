#!/usr/bin/env bash
# v44 (bench/RESULTS.md): tail splits on the non-causal bench shapes. Baseline tail_split=0 (the
# 3-D grid of v43); "default" cuts the grid model's pick for this GPU's SMs; split_sms=0 runs the
# tail-split kernel with no cut (the 1-D grid alone); (4,16,4224) is a grid the model leaves whole.
set -u
out=${OUT:-bench/out}/ab44
. bench/ab_lib.sh
ab d128 128 "" "tail_split=0;default;split_sms=0" 8
ab d64 64 "" "tail_split=0;default;split_sms=0" 8
ab d128s1k 128 "" "tail_split=0;default" 8 16,16,1024
ab d128w 128 "" "tail_split=0;default" 6 4,16,4224
