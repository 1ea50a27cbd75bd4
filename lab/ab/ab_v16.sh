#!/usr/bin/env bash
# v16 (lab/LOG.md): the dQ workspace in 8x8 blocks (the default since v16) against the
# row-major workspace (tile.reduce_block=0, the v15 code), bwd_main alone, same-host round-robin;
# plus the rotated q walk at d=256 re-checked on the blocked workspace.
# Run on the GPU host after setup: bash lab/ab/ab_v16.sh
set -u
out=${OUT:-bench/out}/ab16
mkdir -p "$out" "$out/causal" "$out/rotate"
. /tmp/frost-gpu/env.sh
export PYTHONUNBUFFERED=1
timeout 200 python3 bench/bwd_main_ab.py --dims 32,64,128,192,256 --rounds 8 --iters 5 \
  --out "$out" --variants "default;tile.reduce_block=0" 2>&1 | grep -v Warn | tail -11
timeout 120 python3 bench/bwd_main_ab.py --dims 64,128,256 --causal --rounds 8 --iters 5 \
  --out "$out/causal" --variants "default;tile.reduce_block=0" 2>&1 | grep -v Warn | tail -7
timeout 90 python3 bench/bwd_main_ab.py --dims 256 --rounds 8 --iters 5 --out "$out/rotate" \
  --variants "default;q_rotate=0" 2>&1 | grep -v Warn | tail -3
