#!/usr/bin/env bash
# v98 (lab/LOG.md): do_early, dO's stage released after dV (dK then runs with dQ's first
# chunk), on d=256's split-ring defaults and on v97's split rings at d=192 / d=160 (there dO's
# one stage serialised its refill behind the trip: 1.39-1.41x).
set -u
out=${OUT:-bench/out}/v98
. lab/ab/ab_lib.sh
ab d256 256 "" "default;do_early=1" 8 2,8,4096
ab d256c 256 --causal "default;do_early=1" 8
ab d192 192 "" "default;tile.do_stages=1,tile.q_stages=3,dq_accs=2,do_early=1;tile.do_stages=2,tile.q_stages=2,dq_accs=2,do_early=1" 6
ab d160 160 "" "default;tile.do_stages=1,tile.q_stages=3,do_early=1;tile.do_stages=2,tile.q_stages=4,do_early=1" 6
