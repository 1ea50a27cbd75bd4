#!/usr/bin/env bash
# v99 (lab/LOG.md): do_early=2 at d=256, dO's stage released after dV run with dQ's
# chunk 0 (dK then with chunk 1), against the default and v98's do_early=1.
set -u
out=${OUT:-bench/out}/v99
. lab/ab/ab_lib.sh
ab d256 256 "" "default;do_early=2;do_early=1" 8 2,8,4096
ab d256c 256 --causal "default;do_early=2;do_early=1" 8
