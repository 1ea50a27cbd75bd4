#!/usr/bin/env bash
# v26 (lab/LOG.md, prediction written before any run): the one runner-up that v21's
# re-check put below 1 -- one P/dS copy for causal d=128 (0.994 [0.990, 0.996], 6 rounds) --
# measured longer, with the d=96 causal row that shares the option. bwd_main alone, same-host
# round-robin. Run on the GPU host after setup: bash lab/ab/ab_v26.sh (JSON only, 2 files).
set -u
out=${OUT:-bench/out}/ab26
. lab/ab/ab_lib.sh
ab d128_causal 128 --causal "default;tile.exchange_stages=1" 12
ab d96_causal 96 --causal "default;tile.exchange_stages=1" 12
