#!/usr/bin/env bash
# Same-host A/B of 16 MMA warps (4 warpgroups, 112 registers) against the measured 8-warp
# defaults (lab/LOG.md v11). Run on the GPU host from the repo root after
# `. /tmp/frost-gpu/env.sh`; results under $OUT/ab16/<case>/bwd_main_ab.json.
#   usage: bash lab/ab/ab_mma_warps.sh [small|large|all]
set -u
out=${OUT:-bench/out}/ab16
what=${1:-all}
W=tile.num_mma_warps=16
ab() {  # name, then bwd_main_ab.py arguments
  local name=$1; shift
  mkdir -p "$out/$name"
  timeout 150 python3 bench/bwd_main_ab.py --rounds 6 --iters 5 --out "$out/$name" "$@" 2>&1 \
    | grep -v Warn | tail -5
}
if [[ $what == small || $what == all ]]; then
  ab d64 --dims 64 --variants "default;$W;$W,tile.v_in_regs=1"
  ab d64c --dims 64 --causal --variants "default;$W;$W,tile.v_in_regs=1"
  ab d32 --dims 32 --variants "default;$W;$W,tile.exchange_stages=1"
fi
if [[ $what == large || $what == all ]]; then
  ab d128 --dims 128 --variants "default;$W,tile.q_stages=1,tile.exchange_stages=1,tile.v_in_regs=0,interleave=1;$W,tile.tile_m=64,tile.tile_n=64,tile.exchange_stages=1;$W,tile.tile_n=64"
  ab d96 --dims 96 --variants "default;$W,tile.tile_m=64,tile.tile_n=64,tile.exchange_stages=1"
  ab d160 --dims 160 --variants "default;$W,tile.exchange_stages=1,tile.v_in_regs=0"
fi
