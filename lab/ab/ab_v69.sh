#!/usr/bin/env bash
# v69 (lab/LOG.md): exchange_sync at d=256, with one and two P/dS copies, against the
# per-trip-barrier default. v48 measured one copy at 1.069 but with interleave 0 (the cap bug
# v49 mended); the two-copy form (P/dS in the 24 KB of V's smem the loop leaves free) was never run.
set -u
out=${OUT:-bench/out}/v69
. lab/ab/ab_lib.sh
v="default;tile.exchange_sync=1;tile.exchange_sync=1,tile.exchange_stages=2;tile.exchange_stages=2"
ab d256 256 "" "$v" 8 2,8,4096
ab d256c 256 --causal "$v" 6
