#!/usr/bin/env bash
# One device call's worth of checks on the GPU host (after `bash .gpu/tools/setup-remote`):
# the GPU test suite, an A/B of the measured defaults, and the peer benchmark, all under $OUT.
#
#   usage: bash bench/on_gpu.sh COMMIT [tests|ab|bench|all]   (default: all)
#
# COMMIT is the sha being measured (the GPU copy has no .git); run it from the repo root.
# Each part has its own time cap, so a hang in one still leaves the others' results.
set -u
commit=${1:?usage: bash bench/on_gpu.sh COMMIT [tests|ab|bench|all]}
what=${2:-all}
out=${OUT:-bench/out}
mkdir -p "$out"
. /tmp/frost-gpu/env.sh
export PYTHONUNBUFFERED=1 FLASH_ATTENTION_ARCH=120
echo "$commit" > "$out/commit.txt"

if [[ $what == tests || $what == all ]]; then
  timeout 480 python3 -m pytest -m gpu -q -rfE -p no:cacheprovider 2>&1 | tee "$out/gpu_tests.log" | tail -3
fi
if [[ $what == ab || $what == all ]]; then
  # the measured defaults against their runner-up, same host (bench/RESULTS.md v7-v17): each
  # ratio should stay > 1; one that drops below 1 means a default is stale
  mkdir -p "$out/ab" "$out/ab_causal"
  timeout 120 python3 bench/bwd_main_ab.py --dims 32,128,256 --rounds 6 --iters 5 --out "$out/ab" \
    --variants "default;tile.exchange_stages=1" 2>&1 | grep -v Warn | tail -8
  timeout 90 python3 bench/bwd_main_ab.py --dims 128 --causal --rounds 6 --iters 5 \
    --out "$out/ab_causal" --variants "default;tile.exchange_stages=1;interleave=1" 2>&1 \
    | grep -v Warn | tail -5
  mkdir -p "$out/ab_grids" "$out/ab_grids_causal" "$out/ab_v64"  # v16/v17 defaults, runner-ups
  timeout 90 python3 bench/bwd_main_ab.py --dims 256 --rounds 6 --iters 5 --out "$out/ab_grids" \
    --variants "default;tile.s_rows=1;tile.reduce_block=0" 2>&1 | grep -v Warn | tail -4
  timeout 90 python3 bench/bwd_main_ab.py --dims 256 --causal --rounds 6 --iters 5 \
    --out "$out/ab_grids_causal" --variants "default;tile.dq_rows=0;tile.s_rows=1" 2>&1 \
    | grep -v Warn | tail -4
  timeout 90 python3 bench/bwd_main_ab.py --dims 64 --rounds 6 --iters 5 --out "$out/ab_v64" \
    --variants "default;tile.v_in_regs=1" 2>&1 | grep -v Warn | tail -3
  mkdir -p "$out/ab_held"  # v21: K's dQ fragments held at d <= 64
  timeout 90 python3 bench/bwd_main_ab.py --dims 32,64 --rounds 6 --iters 5 --out "$out/ab_held" \
    --variants "default;dq_k_held=0" 2>&1 | grep -v Warn | tail -4
  mkdir -p "$out/ab_il256" "$out/ab_il224"  # v28: interleave level 1 on the d > 192 tiles
  timeout 90 python3 bench/bwd_main_ab.py --dims 256 --rounds 6 --iters 5 --out "$out/ab_il256" \
    --variants "default;interleave=0" 2>&1 | grep -v Warn | tail -3
  timeout 90 python3 bench/bwd_main_ab.py --dims 224 --rounds 6 --iters 5 --out "$out/ab_il224" \
    --variants "default;tile.head_pad=32" 2>&1 | grep -v Warn | tail -3  # v31: 224 runs as 256
  mkdir -p "$out/ab_xsync"  # v48/v49: exchange_sync at d=64/128
  timeout 90 python3 bench/bwd_main_ab.py --dims 64,128 --rounds 6 --iters 5 --out "$out/ab_xsync" \
    --variants "default;tile.exchange_sync=0" 2>&1 | grep -v Warn | tail -4
  mkdir -p "$out/ab_rotate"  # v14: the rotated q walk at d > 192
  timeout 90 python3 bench/bwd_main_ab.py --dims 256 --rounds 6 --iters 5 --out "$out/ab_rotate" \
    --variants "default;q_rotate=0" 2>&1 | grep -v Warn | tail -3
fi
if [[ $what == bench || $what == all ]]; then
  timeout 240 python3 bench/sdpa_bwd.py --commit "$commit" --warmup 3 --out "$out" \
    > "$out/sdpa_bwd.log" 2>&1
  tail -10 "$out/sdpa_bwd.log"
  # each chain kernel's device time per bench row (bench/RESULTS.md v45)
  timeout 150 python3 bench/chain_kernels.py --commit "$commit" --out "$out" 2>&1 | grep -v Warn \
    | tail -9
fi
