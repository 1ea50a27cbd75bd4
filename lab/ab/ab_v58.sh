#!/usr/bin/env bash
# v58 (lab/LOG.md): the trip loop's (q head, q tile) stepped (trip_step=1, default) against
# the division by the runtime q-range length every trip (trip_step=0, the v57 code).
set -u
out=${OUT:-bench/out}/ab58
. lab/ab/ab_lib.sh
ab d128 128 "" "default;trip_step=0" 8
ab d128c 128 --causal "default;trip_step=0" 8
ab d64 64 "" "default;trip_step=0" 8
ab d64c 64 --causal "default;trip_step=0" 8
ab d32 32 "" "default;trip_step=0" 6
ab d256 256 "" "default;trip_step=0" 6 2,8,4096
