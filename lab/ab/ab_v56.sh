#!/usr/bin/env bash
# v56 (lab/LOG.md): after v54, what the second dQ accumulator does where it was not
# adopted: d=64 with K's dQ fragments no longer held (32 registers back), causal d=128 with the
# pad, d=256 (4 dQ chunks).
set -u
out=${OUT:-bench/out}/ab56
. lab/ab/ab_lib.sh
ab d64 64 "" "default;dq_k_held=0;dq_k_held=0,dq_accs=2" 6
ab d64c 64 --causal "default;dq_k_held=0;dq_k_held=0,dq_accs=2" 6
ab d128c 128 --causal "default;dq_guard=pad,dq_accs=2" 6
ab d256 256 "" "default;dq_accs=2" 6 2,8,4096
ab d256c 256 --causal "default;dq_accs=2" 6
