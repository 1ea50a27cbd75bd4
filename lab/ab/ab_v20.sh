#!/usr/bin/env bash
# v20 (lab/LOG.md, prediction written before any run): dQ's K fragments held in registers
# (dq_k_held=1) at d=32 and d=64 (there with the dQ grid 2x4), against the default, bwd_main
# alone, same-host round-robin. Run on the GPU host after setup: bash lab/ab/ab_v20.sh
# (JSON only, 3 files; run `python3 -m pytest -m gpu -k dq_k_held` first: its numerics).
set -u
out=${OUT:-bench/out}/ab20
. lab/ab/ab_lib.sh
v64="default;tile.dq_rows=2;tile.dq_rows=2,dq_k_held=1"
ab d64 64 "" "$v64"
ab d64_causal 64 --causal "$v64"
ab d32 32 "" "default;dq_k_held=1"
