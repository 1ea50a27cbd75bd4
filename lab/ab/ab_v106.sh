#!/usr/bin/env bash
# v106 (lab/LOG.md): the ATOM dQ workspace (tile.reduce_block=-1: 16x8 tiles in m16n8
# accumulator lane order, one red.global.add.v4 a lane an atom, no shuffle: half the dQ atomics
# a warp) against the default 8x8 blocks, with the default's code choices (code=default).
set -u
out=${OUT:-bench/out}/v106
. lab/ab/ab_lib.sh
ab_bench_rows "default;tile.reduce_block=-1,code=default" "${1:-6}"
ab d128c8k 128 --causal "default;tile.reduce_block=-1,code=default" 6 2,16,8192
