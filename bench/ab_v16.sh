#!/usr/bin/env bash
# v16 (bench/RESULTS.md): the dQ workspace in 8x8 blocks against the row-major default, bwd_main
# alone, same-host round-robin. Run on the GPU host after setup: bash bench/ab_v16.sh
set -u
out=${OUT:-bench/out}/ab16
mkdir -p "$out" "$out/causal"
. /tmp/frost-gpu/env.sh
export PYTHONUNBUFFERED=1
timeout 150 python3 bench/bwd_main_ab.py --dims 64,128,256 --rounds 8 --iters 5 --out "$out" \
  --variants "default;tile.reduce_block=8" 2>&1 | grep -v Warn | tail -8
timeout 90 python3 bench/bwd_main_ab.py --dims 64,128 --causal --rounds 8 --iters 5 \
  --out "$out/causal" --variants "default;tile.reduce_block=8" 2>&1 | grep -v Warn | tail -6
