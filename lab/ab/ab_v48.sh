#!/usr/bin/env bash
# v48 (lab/LOG.md): the plan's exchange_sync (P/dS published by mbarriers and warp-group
# barriers, no per-trip barrier of all MMA warps) against the default, with interleave=1 (what
# exchange_sync forces) as a control.
set -u
out=${OUT:-bench/out}/ab48
. lab/ab/ab_lib.sh
v="default;interleave=1;tile.exchange_sync=1"
ab d128 128 "" "$v" 6
ab d64 64 "" "$v" 6
ab d128c 128 --causal "$v" 6
ab d64c 64 --causal "$v" 6
ab d256 256 "" "default;tile.exchange_sync=1" 6 2,8,4096
ab d96 96 "" "default;tile.exchange_sync=1" 6
