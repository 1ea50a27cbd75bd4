#!/usr/bin/env bash
# v118 (lab/LOG.md): more exchange splits by placement. d=128: two groups of four (div 2,
# div 1, div 4) against the default's four pairs; d=64: other placements of v116's split
# (dK/dV order 3; the late dQ grid in order 2).
set -u
out=${OUT:-bench/out}/v118
. lab/ab/ab_lib.sh
c=code=default
ab d128 128 "" "default;tile.dkv_order=3,$c;tile.s_order=3,tile.dkv_order=0,$c;tile.dkv_order=2,$c" 6
ab d64 64 "" "default;tile.s_order=1,tile.dq_order=0,tile.dkv_order=3,$c;tile.s_order=1,tile.dq_order=2,tile.dkv_order=1,$c" 6
