#!/usr/bin/env bash
# v56 re-check (lab/LOG.md): causal d=64 without K's dQ fragments held, 10 rounds.
set -u
out=${OUT:-bench/out}/ab56b
. lab/ab/ab_lib.sh
ab d64c 64 --causal "default;dq_k_held=0" 10
ab d64cl 64 --causal "default;dq_k_held=0" 10 2,16,8192
