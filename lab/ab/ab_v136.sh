#!/usr/bin/env bash
# v136 (lab/LOG.md): what a d-split 2-CTA cluster at d=256 could reach. Each CTA of the
# pair would run d=128's trip shapes (32x128 tile) on twice the heads, plus the S/dP exchange,
# and the exchange's receive buffers need shared memory d=128's default uses: one P/dS copy
# (tile.exchange_stages=1, one 16 KB buffer used twice a trip) or also one Q/dO stage
# (tile.q_stages=1, 32 KB: S's and dP's partials at once). Times d=256's default at (2,8,4096)
# and those d=128 plans at (2,16,4096): the same FLOPs, the split's CTA count.
# Usage: OUT=dir bash lab/ab/ab_v136.sh
set -u
out=${OUT:-bench/out}/v136b
. lab/ab/ab_lib.sh
ab d256_2x8x4096 256 "" "default" 6 2,8,4096
ab d128_2x16x4096 128 "" "default;tile.exchange_stages=1,code=default;tile.q_stages=1,tile.exchange_stages=1,code=default" 6 2,16,4096
