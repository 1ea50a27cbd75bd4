#!/usr/bin/env bash
# v17 (lab/LOG.md): forced S/dP and dQ warp grids at d=256 against the model's grids,
# bwd_main alone, same-host round-robin. Run on the GPU host after setup: bash lab/ab/ab_v17.sh
set -u
out=${OUT:-bench/out}/ab17
mkdir -p "$out" "$out/causal"
. /tmp/frost-gpu/env.sh
export PYTHONUNBUFFERED=1
v="default;tile.s_rows=2;tile.dq_rows=2;tile.s_rows=2,tile.dq_rows=2"
if [[ ${1:-all} != rot ]]; then
timeout 150 python3 bench/bwd_main_ab.py --dims 256 --rounds 8 --iters 5 --out "$out" \
  --variants "$v" 2>&1 | grep -v Warn | tail -5
timeout 120 python3 bench/bwd_main_ab.py --dims 256 --causal --rounds 8 --iters 5 \
  --out "$out/causal" --variants "$v" 2>&1 | grep -v Warn | tail -5
fi
# second round (bash lab/ab/ab_v17.sh rot runs it alone): the grids with and without the rotated q walk
mkdir -p "$out/rot" "$out/rot_causal"
timeout 150 python3 bench/bwd_main_ab.py --dims 256 --rounds 8 --iters 5 --out "$out/rot" \
  --variants "tile.s_rows=2;tile.s_rows=2,tile.dq_rows=2;tile.s_rows=2,tile.dq_rows=2,q_rotate=0" \
  2>&1 | grep -v Warn | tail -4
timeout 120 python3 bench/bwd_main_ab.py --dims 256 --causal --rounds 8 --iters 5 \
  --out "$out/rot_causal" --variants "tile.s_rows=2,tile.dq_rows=2;tile.s_rows=2,tile.dq_rows=2,q_rotate=1" \
  2>&1 | grep -v Warn | tail -3
