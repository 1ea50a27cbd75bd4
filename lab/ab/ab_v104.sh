#!/usr/bin/env bash
# v104 (lab/LOG.md, ablation: wrong results on purpose): the ceiling of a 2-CTA cluster that
# adds the two kv tiles' dQ partials in shared memory before one atomic (skip=dq_half: only the
# dQ grid's warp rows of the half that kv-tile parity picks add, dq_add.dq_half_of), beside no
# atomics at all (skip=dq_atomic). v104's first run (before 2026-12-02 09:00) picked by a
# warp's first row and so split the CTAs instead (even ones all atomics, odd none at d=64).
set -u
out=${OUT:-bench/out}/v104
. lab/ab/ab_lib.sh
v="default;skip=dq_half;skip=dq_atomic"
ab d64 64 "" "$v" 8
ab d64c 64 --causal "$v" 8
ab d128 128 "" "$v" 6
ab d128c 128 --causal "$v" 6
