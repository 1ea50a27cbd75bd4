#!/usr/bin/env bash
# v97 (lab/LOG.md): the split ring at d=160 and d=192, where V is held and dO fits beside
# P/dS on V's bytes: the same depths on two rings, and Q deeper with dO on one stage. d=192's
# default picks dq_accs=2 on its measured plan only, so its variants force it (else they would
# time dq_accs=1 too).
set -u
out=${OUT:-bench/out}/v97
. lab/ab/ab_lib.sh
ab d192 192 "" "default;tile.do_stages=2,tile.q_stages=2,dq_accs=2;tile.do_stages=1,tile.q_stages=3,dq_accs=2" 6
ab d160 160 "" "default;tile.do_stages=2,tile.q_stages=2;tile.do_stages=1,tile.q_stages=3;tile.do_stages=2,tile.q_stages=4" 6
