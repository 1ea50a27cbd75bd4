#!/usr/bin/env bash
# v68 (lab/LOG.md): the harness's new default build (frost.sdpa's main-only chain,
# launched with precomputed values) against BwdMainKernel.launch (build=launch).
set -u
out=${OUT:-bench/out}/v68
. lab/ab/ab_lib.sh
ab d64 64 "" "default;build=launch" 6
ab d128 128 "" "default;build=launch" 6
ab d256 256 "" "default;build=launch" 6 2,8,4096
