#!/usr/bin/env bash
# v52 (lab/LOG.md): the code choices re-checked on the exchange_sync defaults (d=64/128),
# whose trip no longer has a CTA-wide barrier: the runner-up of each measured choice.
set -u
out=${OUT:-bench/out}/ab52
. lab/ab/ab_lib.sh
v="default;lookahead=1;interleave=0;exp2_poly=1;dq_vec=4"
ab d128 128 "" "$v" 6
ab d128c 128 --causal "$v" 6
ab d64 64 "" "$v" 6
