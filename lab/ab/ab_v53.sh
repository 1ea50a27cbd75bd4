#!/usr/bin/env bash
# v53 (lab/LOG.md): exchange_sync rule 2 (dV/dK local, dQ late, bit-permuted dK/dV warp
# order) against rule 1 (dQ local, dV/dK late) where they differ: d=64 (the default is rule 1),
# d=32, d=96 (rule 1 measured slower than the barrier there, v48).
set -u
out=${OUT:-bench/out}/ab53
. lab/ab/ab_lib.sh
ab d64 64 "" "default;tile.exchange_sync=2;tile.exchange_sync=0" 6
ab d64c 64 --causal "default;tile.exchange_sync=2;tile.exchange_sync=0" 6
ab d32 32 "" "default;tile.exchange_sync=1;tile.exchange_sync=2" 6
ab d96 96 "" "default;tile.exchange_sync=1;tile.exchange_sync=2" 6
