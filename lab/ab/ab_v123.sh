#!/usr/bin/env bash
# v123 (lab/LOG.md): non-causal d=128's code choices on the whole frost.sdpa.backward call
# (bench/chain_ab.py, now able to set code choices): v121's trip_step=1 + kv_prefetch=0 default
# against v72's divide + prefetch build and the prefetch with the step walk, at three walk
# lengths (32, 64 and 128 q-tile trips a CTA), to decide whether a short walk wants its own build.
set -u
out=${OUT:-bench/out}/v123
mkdir -p "$out"
python3 bench/chain_ab.py --shapes 16,16,1024,128 8,16,2048,128 4,16,4096,128 \
    --variants "default;trip_step=0,kv_prefetch=16;kv_prefetch=16;kv_prefetch=4" \
    --rounds 10 --iters 10 --commit "${COMMIT:-}" --out "$out" 2>&1 | tee "$out/ab.log"
