#!/usr/bin/env bash
# v114 (lab/LOG.md): exchange_sync rule 3 -- the S/dP and dQ warps row-major so that the
# two MMA warps of each SM sub-partition (warp % 4) sit in different exchange groups -- against
# the d=64 defaults (non-causal: rule 1, dQ first, groups warp % 2; causal: rule 2, dV/dK
# first), the other code choices as the default's (code=default).
set -u
out=${OUT:-bench/out}/v114
. lab/ab/ab_lib.sh
r=${1:-8}
ab d64 64 "" "default;tile.exchange_sync=3,code=default" "$r"
ab d64c 64 --causal "default;tile.exchange_sync=3,code=default;tile.exchange_sync=3,code=default,dq_spread=1" "$r"
