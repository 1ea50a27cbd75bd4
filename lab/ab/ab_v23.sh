#!/usr/bin/env bash
# v23 (lab/LOG.md, prediction written before any run): d=256 dQ in fewer chunks (each
# chunk re-reads all of dS on the 1x8 dQ grid), re-measured on the v17/v18 defaults; bwd_main
# alone, same-host round-robin. Run on the GPU host after setup: bash lab/ab/ab_v23.sh
set -u
out=${OUT:-bench/out}/ab23
. lab/ab/ab_lib.sh
ab d256 256 "" "default;dq_chunks=2;dq_chunks=1"
ab d256_causal 256 --causal "default;dq_chunks=2;dq_chunks=1"
