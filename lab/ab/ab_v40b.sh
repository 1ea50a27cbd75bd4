#!/usr/bin/env bash
# v40 confirmation (lab/LOG.md): the two v40 variants that won every round, re-timed
# with 10 rounds, plus their neighbours: q_rotate=1 at d=128 causal and d=96.
set -u
out=${OUT:-bench/out}/ab40b
. lab/ab/ab_lib.sh
ab d128 128 "" "default;q_rotate=1" 10
ab d128c 128 --causal "default;tile.dq_rows=1;q_rotate=1;tile.dq_rows=1,q_rotate=1" 10
ab d96 96 "" "default;q_rotate=1" 10
