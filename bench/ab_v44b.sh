#!/usr/bin/env bash
# v44, second look: where the tail-split kernel's own cost comes from. tail_split=0 (3-D grid),
# split_sms=0 (tail-split kernel, no cut), skip=split_parts (its 1-D grid and mapping, the split
# part's code compiled out), tail_split=1 (cut for this GPU). (Run when the uncut tail-split
# kernel launched a 1-D grid.)
set -u
out=${OUT:-bench/out}/ab44b
. bench/ab_lib.sh
ab d128 128 "" "tail_split=0;tail_split=1,split_sms=0;tail_split=1,skip=split_parts,split_sms=0;tail_split=1" 10
ab d64 64 "" "tail_split=0;tail_split=1,split_sms=0;tail_split=1,skip=split_parts,split_sms=0;tail_split=1" 10
