#!/usr/bin/env bash
# v105 (lab/LOG.md, re-check): the rotated q-tile walk (code choice q_rotate=1) against the
# linear default at d=64/128, on today's ptxas schedules (v81/v86) and CTA orders (v41).
set -u
out=${OUT:-bench/out}/v105
. lab/ab/ab_lib.sh
v="default;q_rotate=1"
ab d128 128 "" "$v" 10
ab d128s 128 "" "$v" 8 16,16,1024
ab d128c 128 --causal "$v" 8
ab d128c8k 128 --causal "$v" 6 2,16,8192
ab d64 64 "" "$v" 6
ab d64c 64 --causal "$v" 6
