#!/usr/bin/env bash
# v100 (lab/LOG.md): a third run of do_early=1 at non-causal d=256 (v98 0.995, v99 0.986),
# pooled with them for the adoption rule.
set -u
out=${OUT:-bench/out}/v100
. lab/ab/ab_lib.sh
ab d256 256 "" "default;do_early=1" 10 2,8,4096
