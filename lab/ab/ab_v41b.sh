#!/usr/bin/env bash
# v41 second run (lab/LOG.md): d=64 causal again with more rounds, and the other
# head-dim classes under causal, before choosing lpt_heads' default.
set -u
out=${OUT:-bench/out}/ab41b
. lab/ab/ab_lib.sh
ab d64c 64 --causal "default;lpt_heads=0;lpt_heads=8;lpt_heads=16" 12
ab d32c 32 --causal "default;lpt_heads=0;lpt_heads=8" 8
ab d96c 96 --causal "default;lpt_heads=0;lpt_heads=8" 8
ab d192c 192 --causal "default;lpt_heads=0;lpt_heads=8" 6
ab d256c 256 --causal "default;lpt_heads=0;lpt_heads=8" 6
