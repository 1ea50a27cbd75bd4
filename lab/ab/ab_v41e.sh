#!/usr/bin/env bash
# v41 guard re-run (lab/LOG.md): d=64 causal at (8,16,2048), where the first guard run
# spread 0.908-1.043, with more rounds and other group sizes.
set -u
out=${OUT:-bench/out}/ab41e
. lab/ab/ab_lib.sh
ab d64c_8x2048 64 --causal "default;lpt_heads=1;lpt_heads=4;lpt_heads=16" 12 8,16,2048
