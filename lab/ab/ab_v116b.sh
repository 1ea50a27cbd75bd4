#!/usr/bin/env bash
# v116b (lab/LOG.md): v116's d=64 group again (its first run stopped at the build: the
# default's dq_spread needs dQ first, so the dV/dK-first variants turn it off), with the
# causal winner's non-causal form, and the causal winner re-timed over 8 rounds.
set -u
out=${OUT:-bench/out}/v116b
. lab/ab/ab_lib.sh
c=code=default
ab d64 64 "" "default;tile.dkv_order=1,$c;tile.s_order=3,tile.dq_order=3,$c;tile.s_order=4,tile.dq_order=0,tile.dkv_order=0,$c,dq_spread=0;tile.s_order=1,tile.dq_order=0,tile.dkv_order=1,$c,dq_spread=0" 6
ab d64c 64 --causal "default;tile.s_order=1,tile.dq_order=0,tile.dkv_order=1,$c" 8
