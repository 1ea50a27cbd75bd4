#!/usr/bin/env bash
# v61 (lab/LOG.md): the causal d=32 / d=64 exchange rule re-checked (default rule 2)
# against rule 1 and the per-trip barrier, 10 rounds.
set -u
out=${OUT:-bench/out}/ab61
. lab/ab/ab_lib.sh
ab d64c 64 --causal "default;tile.exchange_sync=1;tile.exchange_sync=0" 10
ab d32c 32 --causal "default;tile.exchange_sync=1;tile.exchange_sync=0" 10
