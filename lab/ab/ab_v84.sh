#!/usr/bin/env bash
# v84 (lab/LOG.md): the untimed ptxas pair (reg_usage 3, ptxas_opt 2) on the bench rows'
# defaults (d=128 non-causal's default already has level 3: its variant is -O2 alone), and
# level 3 on d=128's tail-split build (uncut: split_sms=0, so whole tiles only).
set -u
out=${OUT:-bench/out}/v84
. lab/ab/ab_lib.sh
mkdir -p "$out"
ab d64 64 "" "default;reg_usage=3,ptxas_opt=2" 6
ab d64c 64 --causal "default;reg_usage=3,ptxas_opt=2" 6
ab d128 128 "" "default;ptxas_opt=2" 6
ab d128c 128 --causal "default;reg_usage=3,ptxas_opt=2" 6
ab d128split 128 "" "tail_split=1,split_sms=0;tail_split=1,split_sms=0,reg_usage=3;default" 6
# v85 (measurement): the wave tail at d=128 -- (4,16,4096) is 2048 CTAs (15.52 waves on 132 SMs),
# (33,2,4096) the same work per CTA in 2112 CTAs (16.00 waves): TFLOP/s of each, default only.
ab tail15 128 "" "default" 6 4,16,4096
ab tail16 128 "" "default" 6 33,2,4096
