#!/usr/bin/env bash
# v117 (lab/LOG.md): warp placements at d=256 (per-trip barrier, so an order changes no
# group): S/dP, dK/dV and dQ grids row-major one at a time and dK/dV + dQ together.
set -u
out=${OUT:-bench/out}/v117
. lab/ab/ab_lib.sh
r=${1:-6}
c=code=default
ab d256 256 "" "default;tile.s_order=1,$c;tile.dkv_order=1,$c;tile.dq_order=1,$c;tile.dkv_order=1,tile.dq_order=1,$c" "$r" 2,8,4096
