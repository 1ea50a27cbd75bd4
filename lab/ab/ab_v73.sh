#!/usr/bin/env bash
# v73 (lab/LOG.md): d=64 on a 32x192 tile (a KV tile of 192 rows: a third fewer dQ atomics
# and Q/dO loads per FLOP) against the 64x128 default, with a 32x128 control; its GPU tests first.
set -u
out=${OUT:-bench/out}/v73
. lab/ab/ab_lib.sh
mkdir -p "$out"
timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider tests/templates/test_bwd_main.py \
  -k "kv_tile_192" 2>&1 | tail -2 | tee "$out/gpu_tests.log"
t192="tile.tile_m=32,tile.tile_n=192"
ab d64 64 "" "default;$t192;$t192,tile.s_rows=1;tile.tile_m=32" 6
ab d64c 64 --causal "default;$t192;tile.tile_m=32" 6
