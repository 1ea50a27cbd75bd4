#!/usr/bin/env bash
# v59 (lab/LOG.md): S and dP in two accumulators each (sdp_accs=2: the odd k-blocks into
# the second) against one (the v58 code), on the rows where it compiles spill-free (non-causal).
set -u
out=${OUT:-bench/out}/ab59
. lab/ab/ab_lib.sh
ab d128 128 "" "default;sdp_accs=2" 8
ab d128s 128 "" "default;sdp_accs=2" 6 16,16,1024
ab d64 64 "" "default;sdp_accs=2" 8
ab d32 32 "" "default;sdp_accs=2" 6
ab d96 96 "" "default;sdp_accs=2" 6
ab d256 256 "" "default;sdp_accs=2" 6 2,8,4096
