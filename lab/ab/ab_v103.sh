#!/usr/bin/env bash
# v103 (lab/LOG.md): v102's pair (ptxas level 3 with do_early=1) at non-causal d=256, again.
set -u
out=${OUT:-bench/out}/v103
. lab/ab/ab_lib.sh
ab d256 256 "" "default;reg_usage=3,do_early=1;do_early=1" 10 2,8,4096
[ "${V103_SECOND:-0}" = 1 ] && ab d256b 256 "" "default;do_early=1;reg_usage=3,do_early=1" 10 2,8,4096
