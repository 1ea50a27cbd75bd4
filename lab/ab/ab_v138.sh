#!/usr/bin/env bash
# v138 (lab/LOG.md): the head-dim split's exchange timed inside d=128's trip loop. The
# d=128 one-copy plan (tile.exchange_stages=1, v136b's split plan) against the same plan with
# the pair_x ablation (tile.pair_words=16 + skip=pair_x: 2-CTA clusters, per trip a 16-word
# round of S/dP partials and an 8-word round standing for the bf16 P/dS halves;
# frost/templates/bwd_main/pair.py), at (2,16,4096); d=256's default at (2,8,4096) in the same
# call, for the split's ratio (V138_D256=0 leaves it out: the rule then reads v136b's ratio).
# Usage: OUT=dir bash lab/ab/ab_v138.sh
set -u
out=${OUT:-bench/out}/v138
. lab/ab/ab_lib.sh
ab d128_2x16x4096 128 "" "tile.exchange_stages=1,code=default;tile.exchange_stages=1,tile.pair_words=16,code=default,skip=pair_x" 4 2,16,4096
[[ ${V138_D256:-1} == 1 ]] && ab d256_2x8x4096 256 "" "default" 4 2,8,4096
