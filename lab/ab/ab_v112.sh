#!/usr/bin/env bash
# v112 (lab/LOG.md): causal d=64 on the dQ-first exchange split (tile.exchange_sync=1),
# with and without dq_spread, against its default (split 1); the other code choices as the
# default's (code=default).
set -u
out=${OUT:-bench/out}/v112
. lab/ab/ab_lib.sh
r=${1:-8}
ab d64c 64 --causal "default;tile.exchange_sync=1,code=default;tile.exchange_sync=1,code=default,dq_spread=1" "$r"
