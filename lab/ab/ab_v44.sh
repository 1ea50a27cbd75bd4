#!/usr/bin/env bash
# v44 (lab/LOG.md): tail splits on the non-causal bench shapes. Baseline tail_split=0 (the
# kernel of v43); tail_split=1 cuts the grid model's pick for this GPU's SMs (the 0.5 % gain
# floor of the first run: bench/bwd_main_ab.py asks pick_tail_split, whose floor is now 3 %);
# split_sms=0 runs the tail-split kernel with no cut; (4,16,4224) is a grid the model leaves whole.
set -u
out=${OUT:-bench/out}/ab44
. lab/ab/ab_lib.sh
ab d128 128 "" "tail_split=0;tail_split=1;tail_split=1,split_sms=0" 8
ab d64 64 "" "tail_split=0;tail_split=1;tail_split=1,split_sms=0" 8
ab d128s1k 128 "" "tail_split=0;tail_split=1" 8 16,16,1024
ab d128w 128 "" "tail_split=0;tail_split=1" 6 4,16,4224
