#!/usr/bin/env bash
# v79 (lab/LOG.md): store_warp re-timed on the shipped d=64 builds. v78b's variant ran
# without d=64's measured stat_vec/trip_step (a forced plan was then not the measured default);
# now measured_plan ignores store_warp, so each pair differs in store_warp alone. These files
# are frost.sched.tuned's evidence for the option (OPTIONS_RECHECK_SOURCES: the default
# carries it; CAUSAL_OPTIONS_SOURCES: the causal default does not).
set -u
out=${OUT:-bench/out}/v79
. lab/ab/ab_lib.sh
mkdir -p "$out"
ab d64 64 "" "default;tile.store_warp=0" 6
ab d64s 64 "" "default;tile.store_warp=0" 6 16,16,1024
ab d64c 64 --causal "default;tile.store_warp=1" 6
