#!/usr/bin/env bash
# v107 (lab/LOG.md): re-check of v106's adoption on the new defaults: the 8x8 blocks
# (tile.reduce_block=8, with the default's code choices) against the ATOM default at causal
# d=64 (its v106 file was lost) and causal d=160 (a row option never timed causal).
set -u
out=${OUT:-bench/out}/v107
. lab/ab/ab_lib.sh
v="default;tile.reduce_block=8,code=default"
ab d64c 64 --causal "$v" 6
ab d160c 160 --causal "$v" 6 2,16,4096
