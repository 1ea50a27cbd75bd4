#!/usr/bin/env bash
# v78, as the plan option store_warp (lab/LOG.md): the producer warp issues the dK/dV TMA
# stores (tile.store_warp=1) against the default, before the measured table takes it: these
# files are frost.sched.tuned's evidence (OPTIONS_SOURCES, CAUSAL_OPTIONS_SOURCES).
set -u
out=${OUT:-bench/out}/v78b
. lab/ab/ab_lib.sh
mkdir -p "$out"
ab d64 64 "" "default;tile.store_warp=1" 6
ab d64s 64 "" "default;tile.store_warp=1" 6 16,16,1024
ab d64c 64 --causal "default;tile.store_warp=1" 6
