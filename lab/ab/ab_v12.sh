#!/usr/bin/env bash
# v12 (lab/LOG.md): d=256 dQ unchunked against the 4-chunk default, plus a re-check of
# V held at d=64 (last measured in the v2 sweep). GPU host, repo root, after env.sh.
set -u
out=${OUT:-bench/out}/v12
ab() { local name=$1; shift; mkdir -p "$out/$name"
  timeout 150 python3 bench/bwd_main_ab.py --rounds 6 --iters 5 --out "$out/$name" "$@" 2>&1 \
    | grep -v Warn | tail -5; }
timeout 200 python3 -m pytest -m gpu -q -rfE -p no:cacheprovider tests/templates/test_bwd_main.py \
  -k "d256_dq_chunks" 2>&1 | tail -3
ab d256 --dims 256 --variants "default;dq_chunks=1,interleave=1;dq_chunks=1,interleave=0"
ab d256c --dims 256 --causal --variants "default;dq_chunks=1,interleave=1;dq_chunks=1,interleave=0"
ab d64v --dims 64 --variants "default;tile.v_in_regs=1"
