#!/usr/bin/env bash
# v49 (lab/LOG.md): exchange_sync with dQ lagging a trip (dq_lag=1: dQ of trip t-1 joins
# dV/dK of trip t) against the default and against exchange_sync without the lag; d=64 again.
set -u
out=${OUT:-bench/out}/ab49
. lab/ab/ab_lib.sh
v="default;tile.exchange_sync=1,dq_lag=0;tile.exchange_sync=1"
ab d128 128 "" "$v" 6
ab d128c 128 --causal "$v" 6
ab d128s 128 "" "$v" 6 16,16,1024
ab d128l 128 --causal "$v" 6 2,16,8192
ab d64 64 "" "default;tile.exchange_sync=1" 6
ab d64c 64 --causal "default;tile.exchange_sync=1" 6
