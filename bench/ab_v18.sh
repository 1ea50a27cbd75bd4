#!/usr/bin/env bash
# v18 (bench/RESULTS.md): two runner-ups that beat their default in v17's re-check, measured
# again with more rounds before adopting: V held at d=64 and one P/dS copy at d=256.
# Run on the GPU host after setup: bash bench/ab_v18.sh   (writes JSON only: 4 files)
set -u
out=${OUT:-bench/out}/ab18
mkdir -p "$out/d64" "$out/d64_causal" "$out/d256" "$out/d256_causal"
. /tmp/frost-gpu/env.sh
export PYTHONUNBUFFERED=1
ab() {  # dir dim causal-flag variants
  timeout 120 python3 bench/bwd_main_ab.py --dims "$2" $3 --rounds 10 --iters 5 --out "$out/$1" \
    --variants "$4" 2>&1 | grep -v Warn | tail -3
  rm -f "$out/$1"/*.png
}
ab d64 64 "" "default;tile.v_in_regs=1"
ab d64_causal 64 --causal "default;tile.v_in_regs=1"
ab d256 256 "" "default;tile.exchange_stages=1"
ab d256_causal 256 --causal "default;tile.exchange_stages=1"
